package node

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/worker"
)

// Node is a taskwire process: its store, and the HTTP (or stdio) server
// and the worker runtime it was configured with. Build it with New, then
// either Run it, or Start it and Shutdown it. A Node runs once.
type Node struct {
	cfg   Config
	store backend.Store

	srv       *server.Server
	hs        *http.Server
	url       string
	serveDone chan struct{} // closed when hs.Serve has returned

	relay io.Closer // the answer relay of a fleet's store, or nil

	admin *nodeAdmin   // metrics and the admin listener (admin.go), or nil
	trace *nodeTracing // OTEL_* tracing (tracing.go), or nil

	sched     *schedule.Scheduler // Config.Schedules, or nil
	schedStop context.CancelFunc
	schedDone chan struct{} // closed when sched.Run has returned

	rt       *worker.Runtime
	rtCancel context.CancelFunc
	rtDone   chan struct{} // closed when rt.Run has returned

	started      bool
	failed       chan error // the first unexpected stop of the server or the runtime
	shutdownOnce sync.Once
	shutdownErr  error
}

// New validates cfg, reporting every problem in one error, and returns
// the node it describes, started by nothing yet: New opens no store and
// binds no port.
func New(cfg Config) (*Node, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	if c.Workers > 0 && c.Tools != nil {
		if err := c.Tools.Check(); err != nil {
			return nil, err
		}
	}
	return &Node{cfg: c, failed: make(chan error, 2)}, nil
}

// Start binds the node's ports, opens the store (migrating it unless
// NoMigrate), builds the endpoint and the worker runtime and starts both.
// ctx bounds the start-up only. On error nothing is left running and the
// store is closed. A stdio node is not started this way: Run it.
func (n *Node) Start(ctx context.Context) (err error) {
	if n.started {
		return errors.New("node: started twice")
	}
	n.started = true
	cfg := n.cfg
	if cfg.Stdio != nil {
		return errors.New("node: a stdio node runs with Run")
	}
	// The ports first: a node whose address is taken fails before it
	// creates or migrates a store.
	ln, adminLn, err := listenNode(cfg)
	if err != nil {
		n.closeGivenStore()
		return err
	}
	defer func() {
		if err != nil { // served by nothing yet
			closeListeners(ln, adminLn)
		}
	}()
	if n.store, err = n.openStore(ctx); err != nil {
		return err
	}
	st := n.store
	if n.admin, err = newNodeAdmin(cfg, st); err != nil {
		st.Close()
		return err
	}
	if n.trace, err = newNodeTracing(ctx); err != nil {
		st.Close()
		return err
	}
	defer func() {
		if err != nil {
			if n.relay != nil {
				n.relay.Close()
			}
			n.trace.shutdown()
			st.Close()
		}
	}()
	if err := n.newRuntime(); err != nil {
		return err
	}
	if ln != nil {
		if ln, err = n.newHTTP(ctx, ln); err != nil {
			return err
		}
	}
	if len(cfg.Schedules) > 0 {
		if n.sched, err = schedule.New(n.srv, cfg.Schedules, schedule.Options{Logger: cfg.Logger}); err != nil {
			n.srv.Close()
			return err
		}
	}
	if err = n.admin.start(n.srv, st, n.sched, adminLn, cfg.Logger); err != nil {
		if n.srv != nil {
			n.srv.Close()
		}
		return err
	}

	// Nothing can fail from here on.
	n.startRuntime()
	if n.sched != nil {
		var sctx context.Context
		sctx, n.schedStop = context.WithCancel(context.Background())
		n.schedDone = make(chan struct{})
		go func() { // owned by the node: Shutdown stops and waits for it
			defer close(n.schedDone)
			n.sched.Run(sctx)
		}()
	}
	if n.hs != nil {
		n.serveDone = make(chan struct{})
		go func() {
			defer close(n.serveDone)
			if err := n.hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				n.failed <- fmt.Errorf("http: %w", err)
			}
		}()
	}
	return nil
}

// openStore returns the store handed over, or opens Config.StoreSpec.
func (n *Node) openStore(ctx context.Context) (backend.Store, error) {
	if n.cfg.Store != nil {
		return n.cfg.Store, nil
	}
	return openStore(ctx, n.cfg.StoreSpec, n.cfg.NoMigrate, n.cfg.Logger)
}

// closeGivenStore closes a store handed over in Config.Store when the
// node fails before it has taken it.
func (n *Node) closeGivenStore() {
	if n.cfg.Store != nil {
		n.cfg.Store.Close()
	}
}

// newRuntime builds the worker runtime, with the durable tools' handlers,
// when the node has workers.
func (n *Node) newRuntime() error {
	cfg := n.cfg
	if cfg.Workers == 0 {
		return nil
	}
	rt, err := worker.New(worker.Options{
		Store:               n.store.Jobs(),
		Events:              n.store.EventPublisher(),
		Concurrency:         cfg.Workers,
		Queues:              cfg.Queues,
		DisableFastRecovery: cfg.DisableFastRecovery,
		Lease:               cfg.Lease,
		ShutdownGrace:       cfg.ShutdownGrace,
		PollInterval:        cfg.PollInterval,
		Logger:              cfg.Logger,
		Metrics:             n.admin.workerMetrics(cfg.WorkerMetrics),
		Tracer:              n.trace.workerTracer(),
	})
	if err != nil {
		return err
	}
	if cfg.Tools != nil {
		if err := cfg.Tools.Work(rt); err != nil {
			return err
		}
	}
	n.rt = rt
	return nil
}

// startRuntime runs the worker runtime, if any, until Shutdown or StopNow.
func (n *Node) startRuntime() {
	if n.rt == nil {
		return
	}
	rctx, cancel := context.WithCancel(context.Background())
	n.rtCancel, n.rtDone = cancel, make(chan struct{})
	go func() {
		defer close(n.rtDone)
		err := n.rt.Run(rctx)
		if rctx.Err() == nil {
			n.failed <- fmt.Errorf("worker runtime stopped: %v", err)
		}
	}()
}

// endpoint returns the node's endpoint with the durable tools served on
// it.
func (n *Node) endpoint() (*server.Endpoint, error) {
	ep := n.cfg.Endpoint
	if ep == nil {
		ep = server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: n.cfg.Name, Version: n.cfg.Version})
	}
	if n.cfg.Tools != nil {
		if err := n.cfg.Tools.Serve(ep, n.store); err != nil {
			return nil, err
		}
	}
	return ep, nil
}

// newHTTP builds the MCP server and the HTTP server over ln, and returns
// ln behind the connection limiter.
func (n *Node) newHTTP(ctx context.Context, ln net.Listener) (net.Listener, error) {
	cfg := n.cfg
	ep, err := n.endpoint()
	if err != nil {
		return nil, err
	}
	sessions := cfg.Sessions
	relay, err := n.answerRelay(ctx)
	if err != nil {
		return nil, err
	}
	metrics, observer := n.admin.serverMetrics()
	n.srv, err = server.New(server.Options{
		Metrics:         metrics,
		Observer:        observer,
		Tracer:          n.trace.serverTracer(),
		Sessions:        &sessions, // Sessions.Store defaults to the task manager's
		AnswerRelay:     relay,
		Endpoints:       []*server.Endpoint{ep},
		Logger:          cfg.Logger,
		Admission:       cfg.admission(),
		AllowedHosts:    cfg.AllowedHosts,
		TaskManager:     n.store,
		BodyReadTimeout: cfg.BodyTimeout,
		TaskLimits:      cfg.TaskLimits,
		// A task operation waits for a slot no longer than one store
		// call may take (zero: both defaults are 5 s).
		TaskQueueTimeout: cfg.StoreSpec.Timeout,
		Subscriptions:    cfg.Subscriptions,
	})
	if err != nil {
		return nil, err
	}
	limited, err := server.NewConnLimiter(ln, server.ConnLimits{Max: cfg.MaxConns, PerAddr: cfg.MaxConnsPerAddr})
	if err != nil { // withDefaults has checked the limits
		ln.Close()
		n.srv.Close()
		return nil, err
	}
	n.hs = &http.Server{
		Handler:           cfg.handler(n.srv),
		ConnState:         limited.ConnState,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
	}
	n.url = "http://" + limited.Addr().String() + ep.Path()
	return limited, nil
}

// listenNode binds the node's ports: Addr (nil without HTTP; Listener
// when given) and AdminAddr (nil without an admin listener). It fails,
// with nothing left bound, when either is taken or cannot be listened on.
func listenNode(cfg Config) (ln, adminLn net.Listener, err error) {
	switch {
	case cfg.Listener != nil:
		ln = cfg.Listener
	case cfg.Addr != "":
		if ln, err = listenFlag(cfg.Name, "--addr", cfg.Addr); err != nil {
			return nil, nil, err
		}
	}
	if cfg.AdminAddr != "" {
		if adminLn, err = listenFlag(cfg.Name, "--admin-addr", cfg.AdminAddr); err != nil {
			closeListeners(ln)
			return nil, nil, err
		}
	}
	return ln, adminLn, nil
}

// listenFlag listens on addr, the value of flag; its error names both, and
// says so when another process holds the port (perhaps another serve of
// the program called name).
func listenFlag(name, flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s: the port is taken (another process listens on it; is a %s serve already running?): %w", flag, addr, name, err)
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	return ln, nil
}

// closeListeners closes the listeners that are not nil.
func closeListeners(lns ...net.Listener) {
	for _, ln := range lns {
		if ln != nil {
			ln.Close()
		}
	}
}

// answerRelay returns, for a store that relays answers between nodes
// (backend.AnswerRelayer: PostgreSQL), the relay that forwards a client's
// answer reaching another node of the fleet to the node holding the call;
// nil for other stores.
func (n *Node) answerRelay(ctx context.Context) (server.AnswerRelay, error) {
	r, ok := n.store.(backend.AnswerRelayer)
	if !ok {
		return nil, nil
	}
	relay, err := r.NewAnswerRelay(ctx)
	if err != nil {
		return nil, fmt.Errorf("answer relay: %w", err)
	}
	n.relay = relay
	return relay, nil
}

// URL returns the endpoint's URL once the node has started, or "" on a
// node without HTTP.
func (n *Node) URL() string { return n.url }

// CreateTask creates a task of one of the node's task tools for
// p.Identity outside any MCP request, as server.Server.CreateTask does
// (its contract and errors apply): for example from a webhook handler of
// the same program, so that the user follows the task with tasks/get or
// `taskwire task wait`. It fails on a node that is not started or serves
// no HTTP endpoint (a worker-only or stdio node).
func (n *Node) CreateTask(ctx context.Context, p server.CreateTaskParams) (mcp.TaskInfo, error) {
	if n.srv == nil {
		return mcp.TaskInfo{}, errors.New("node: CreateTask needs a started node with an HTTP endpoint")
	}
	return n.srv.CreateTask(ctx, p)
}

// AdminAddr returns the admin listener's address once the node has
// started, or "" without one.
func (n *Node) AdminAddr() string { return n.admin.listenAddr() }

// StopNow cuts a Shutdown under way short: open HTTP connections are
// closed, the worker runtime stops claiming, and running jobs are
// cancelled, to be released and run again later. Shutdown still returns
// only once everything has stopped.
//
// The runtime stops claiming before its jobs are cancelled: Shutdown
// cancels its context only after the HTTP drain, and until then each
// released job would be claimed again at once, cancelled and released, in
// a loop.
func (n *Node) StopNow() {
	if n.hs != nil {
		n.hs.Close()
	}
	if n.rt != nil {
		n.rtCancel()
		n.rt.StopRunning()
	}
}

// Failed delivers an error when the HTTP server or the worker runtime
// stops by itself.
func (n *Node) Failed() <-chan error { return n.failed }

// Shutdown stops a started node gracefully, in order: /readyz turns 503,
// listen streams end (server.Close), the HTTP server finishes in-flight
// requests within ShutdownGrace (then drops the rest), the worker runtime
// drains (running jobs get ShutdownGrace to finish, then are released to
// run again: a task is never failed because a process stops), the admin
// listener stops, then the answer relay, the store and the tracer. It is
// safe to call more than once.
func (n *Node) Shutdown() error {
	n.shutdownOnce.Do(func() {
		var errs []error
		n.admin.drain()
		if n.sched != nil {
			n.schedStop()
			<-n.schedDone
		}
		if n.srv != nil {
			n.srv.Close()
		}
		if n.hs != nil {
			ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ShutdownGrace)
			if err := n.hs.Shutdown(ctx); err != nil {
				errs = append(errs, fmt.Errorf("http shutdown: %w", err))
				n.hs.Close()
			}
			cancel()
			<-n.serveDone
		}
		if n.rt != nil {
			n.rtCancel()
			<-n.rtDone
		}
		if err := n.admin.shutdown(); err != nil {
			errs = append(errs, err)
		}
		if n.relay != nil {
			if err := n.relay.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing the answer relay: %w", err))
			}
		}
		if n.store != nil {
			if err := n.store.Close(); err != nil {
				errs = append(errs, fmt.Errorf("closing the store: %w", err))
			}
		}
		if err := n.trace.shutdown(); err != nil {
			errs = append(errs, err)
		}
		n.shutdownErr = errors.Join(errs...)
	})
	return n.shutdownErr
}
