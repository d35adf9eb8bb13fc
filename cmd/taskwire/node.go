package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/worker"
)

// maxWorkers bounds --workers.
const maxWorkers = 1024

// Connection defaults of serve: descriptors kept for the store, the log and
// the listener when --max-conns is derived from the descriptor limit, the
// bounds of that derived value, and the keep-alive idle timeout.
const (
	reservedDescriptors = 128
	minDerivedConns     = 64
	maxDerivedConns     = 10000
	defaultIdleTimeout  = 30 * time.Second
)

// defaultMaxConns is the connection cap when --max-conns is not given: the
// process's descriptor limit less reservedDescriptors, within
// [minDerivedConns, maxDerivedConns]; 1024 where the limit is unknown.
func defaultMaxConns() int {
	limit, ok := descriptorLimit()
	if !ok {
		return 1024
	}
	if limit < reservedDescriptors+minDerivedConns {
		return minDerivedConns
	}
	return int(min(limit-reservedDescriptors, maxDerivedConns))
}

// isLoopbackAddr reports whether the host of a listen address is a
// loopback name or address. An empty host (all interfaces) is not.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Bounds of --lease: the worker runtime's default, and a floor that keeps
// heartbeats (a third of the lease) well above a database round trip.
const (
	defaultLease = 30 * time.Second
	minLease     = time.Second
)

// nodeConfig configures a node: the demo endpoint over HTTP, a worker
// runtime, or both, over one durable store.
type nodeConfig struct {
	// Addr is the HTTP listen address. Empty: no HTTP server (taskwire
	// worker).
	Addr string
	// Store names the durable store.
	Store storeSpec
	// NoMigrate refuses an outdated schema instead of migrating it.
	NoMigrate bool
	// Workers is the number of jobs run at once in this process. 0: no
	// worker runtime (an API-only node).
	Workers int
	// Lease is how long a worker's claim on a job lasts without a
	// heartbeat. Zero: defaultLease.
	Lease time.Duration
	// ReportsDir is where reports.generate writes its files. Empty: the
	// store's default (reports/ beside a SQLite file, else in the working
	// directory).
	ReportsDir string
	// ShutdownGrace bounds the HTTP shutdown, and separately how long
	// running jobs may take to finish before they are released.
	ShutdownGrace time.Duration
	// Logger receives operational messages; never task IDs, arguments or
	// principals.
	Logger *slog.Logger

	// MaxConns bounds the HTTP connections open at once
	// (server.ConnLimits.Max). Zero: defaultMaxConns, derived from the
	// descriptor limit.
	MaxConns int
	// MaxConnsPerAddr bounds those from one client address
	// (server.ConnLimits.PerAddr). Zero: server.DefaultConnsPerAddr of
	// MaxConns; server.NoLimit: none (behind a proxy).
	MaxConnsPerAddr int
	// BodyTimeout bounds the time a request body may take to arrive. Zero:
	// the server's default.
	BodyTimeout time.Duration
	// IdleTimeout bounds how long a keep-alive connection may wait for its
	// next request. Zero: defaultIdleTimeout.
	IdleTimeout time.Duration
	// InsecureDevAuth allows the development identities (any Bearer name
	// is taken as given) on an address other than loopback.
	InsecureDevAuth bool
	// Auth, if set, admits callers by access token instead of development
	// identities, on any address (auth.go).
	Auth *oauth.ResourceServer
	// AllowedHosts are the Host names the HTTP server accepts
	// (server.Options.AllowedHosts). Nil: the loopback names only.
	AllowedHosts []string
	// TaskLimits bound each caller's task creation. The zero value means
	// the server's defaults.
	TaskLimits server.TaskLimits
	// Sessions bound 2025-era sessions; the node keeps them in its store.
	// The zero value means the server's defaults.
	Sessions server.SessionOptions
	// AdminAddr is the admin listener's address (admin.go). Empty: none,
	// and no metrics.
	AdminAddr string
	// AdminAllowedHosts are more Host names the admin listener accepts
	// (admin.Options.AllowedHosts).
	AdminAllowedHosts []string
	// Console configures the operator console on the admin listener
	// (console.go).
	Console consoleConfig

	// workerMetrics and workerPoll are for tests: zero values are the
	// runtime's defaults.
	workerMetrics worker.Metrics
	workerPoll    time.Duration
	// wrapListener, for tests, wraps the TCP listener before the
	// connection limit.
	wrapListener func(net.Listener) net.Listener
	// signals, for tests, replaces SIGINT and SIGTERM in runNode and
	// runStdio.
	signals <-chan os.Signal
}

// validate checks the configuration and fills in defaults.
func (c *nodeConfig) validate() error {
	switch {
	case c.Workers < 0 || c.Workers > maxWorkers:
		return fmt.Errorf("--workers must be between 0 and %d", maxWorkers)
	case c.ShutdownGrace <= 0:
		return errors.New("--shutdown-grace must be positive")
	case c.Lease != 0 && c.Lease < minLease:
		return fmt.Errorf("--lease must be at least %v", minLease)
	case c.Addr == "" && c.Workers == 0:
		return errors.New("a node needs an HTTP address or at least one worker")
	case c.MaxConns < 0:
		return errors.New("--max-conns must not be negative")
	case c.MaxConnsPerAddr < server.NoLimit:
		return errors.New("--max-conns-per-addr must not be negative, except -1 for no limit")
	case c.BodyTimeout < 0 || c.IdleTimeout < 0:
		return errors.New("--body-timeout and --idle-timeout must not be negative")
	case c.Addr != "" && c.Auth == nil && !c.InsecureDevAuth && !isLoopbackAddr(c.Addr):
		return fmt.Errorf("--addr %s is not a loopback address, and this node admits every caller "+
			"with development identities (any Bearer name is taken as the caller's); "+
			"require access tokens with --auth-issuer and --auth-audience, serve on 127.0.0.1 or ::1, "+
			"or pass --insecure-dev-auth to accept that", c.Addr)
	}
	if c.MaxConns == 0 {
		c.MaxConns = defaultMaxConns()
	}
	if c.MaxConnsPerAddr > c.MaxConns {
		return fmt.Errorf("--max-conns-per-addr must not exceed --max-conns (%d)", c.MaxConns)
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = server.DefaultConnsPerAddr(c.MaxConns)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = defaultIdleTimeout
	}
	if c.Lease == 0 {
		c.Lease = defaultLease
	}
	if c.ReportsDir == "" {
		c.ReportsDir = c.Store.defaultReportsDir()
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

// node is a running taskwire process: its store, and the HTTP server and
// the worker runtime it was configured with. Build it with startNode and
// stop it with Shutdown.
type node struct {
	cfg   nodeConfig
	store backend.Store
	tools *durable.Set // the durable demo tools, served and worked

	srv       *server.Server
	hs        *http.Server
	url       string
	serveDone chan struct{} // closed when hs.Serve has returned

	relay io.Closer // the answer relay of a PostgreSQL node, or nil

	admin *nodeAdmin   // metrics and the admin listener (admin.go), or nil
	trace *nodeTracing // OTEL_* tracing (tracing.go), or nil

	rt       *worker.Runtime
	rtCancel context.CancelFunc
	rtDone   chan struct{} // closed when rt.Run has returned

	failed       chan error // the first unexpected stop of the server or the runtime
	shutdownOnce sync.Once
	shutdownErr  error
}

// startNode opens the store (migrating it unless cfg.NoMigrate), builds the
// demo endpoint and the worker runtime, and starts both. ctx bounds the
// start-up only. On error nothing is left running.
func startNode(ctx context.Context, cfg nodeConfig) (n *node, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	// The ports first: a node whose address is taken fails before it
	// creates or migrates a store.
	ln, adminLn, err := listenNode(cfg)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil { // served by nothing yet
			closeListeners(ln, adminLn)
		}
	}()
	st, err := openStore(ctx, cfg.Store, cfg.NoMigrate, cfg.Logger)
	if err != nil {
		return nil, err
	}
	nd := &node{cfg: cfg, store: st, tools: durableTools(cfg.ReportsDir), failed: make(chan error, 2)}
	n = nd
	if n.admin, err = newNodeAdmin(cfg, st); err != nil {
		st.Close()
		return nil, err
	}
	if n.trace, err = newNodeTracing(ctx); err != nil {
		st.Close()
		return nil, err
	}
	defer func() {
		if err != nil { // n is nil by now; nd is what was started
			if nd.relay != nil {
				nd.relay.Close()
			}
			nd.trace.shutdown()
			st.Close()
		}
	}()

	if cfg.Workers > 0 {
		n.rt, err = worker.New(worker.Options{
			Store:         st.Jobs(),
			Events:        st.EventPublisher(),
			Concurrency:   cfg.Workers,
			Lease:         cfg.Lease,
			ShutdownGrace: cfg.ShutdownGrace,
			PollInterval:  cfg.workerPoll,
			Logger:        cfg.Logger,
			Metrics:       n.admin.workerMetrics(cfg.workerMetrics),
			Tracer:        n.trace.workerTracer(),
		})
		if err != nil {
			return nil, err
		}
		if err := n.tools.Work(n.rt); err != nil {
			return nil, err
		}
	}

	if cfg.Addr != "" {
		ep := demoEndpoint()
		if err := n.tools.Serve(ep, st); err != nil {
			return nil, err
		}
		sessions := cfg.Sessions
		var relay server.AnswerRelay
		sessions.Store, relay, err = n.sessionStore(ctx)
		if err != nil {
			return nil, err
		}
		metrics, observer := n.admin.serverMetrics()
		n.srv, err = server.New(server.Options{
			Metrics:         metrics,
			Observer:        observer,
			Tracer:          n.trace.serverTracer(),
			Sessions:        &sessions,
			AnswerRelay:     relay,
			Endpoints:       []*server.Endpoint{ep},
			Logger:          cfg.Logger,
			Admission:       cfg.admission(),
			AllowedHosts:    cfg.AllowedHosts,
			TaskManager:     st,
			BodyReadTimeout: cfg.BodyTimeout,
			TaskLimits:      cfg.TaskLimits,
			// A task operation waits for a slot no longer than one
			// store call may take (zero: both defaults are 5 s).
			TaskQueueTimeout: cfg.Store.Timeout,
			// Demo only: every admitted caller may listen for task
			// notifications; the store still authorizes each lookup.
			Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
		})
		if err != nil {
			return nil, err
		}
		if cfg.wrapListener != nil {
			ln = cfg.wrapListener(ln)
		}
		limited, err := server.NewConnLimiter(ln, server.ConnLimits{Max: cfg.MaxConns, PerAddr: cfg.MaxConnsPerAddr})
		if err != nil { // validate has checked the limits
			ln.Close()
			n.srv.Close()
			return nil, err
		}
		ln = limited
		n.hs = &http.Server{
			Handler:           cfg.handler(n.srv),
			ConnState:         limited.ConnState,
			ReadHeaderTimeout: 10 * time.Second,
			IdleTimeout:       cfg.IdleTimeout,
			MaxHeaderBytes:    64 << 10,
			ErrorLog:          slog.NewLogLogger(cfg.Logger.Handler(), slog.LevelWarn),
		}
		n.url = "http://" + ln.Addr().String() + ep.Path()
	}

	if err = n.admin.start(n.srv, st, adminLn, cfg.Logger); err != nil {
		if n.srv != nil {
			n.srv.Close()
		}
		return nil, err
	}

	// Nothing can fail from here on.
	if n.rt != nil {
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
	if n.hs != nil {
		n.serveDone = make(chan struct{})
		go func() {
			defer close(n.serveDone)
			if err := n.hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				n.failed <- fmt.Errorf("http: %w", err)
			}
		}()
	}
	return n, nil
}

// listenNode binds the node's ports: --addr (nil without HTTP) and
// --admin-addr (nil without an admin listener). It fails, with nothing
// left bound, when either is taken or cannot be listened on.
func listenNode(cfg nodeConfig) (ln, adminLn net.Listener, err error) {
	if cfg.Addr != "" {
		if ln, err = listenFlag("--addr", cfg.Addr); err != nil {
			return nil, nil, err
		}
	}
	if cfg.AdminAddr != "" {
		if adminLn, err = listenFlag("--admin-addr", cfg.AdminAddr); err != nil {
			closeListeners(ln)
			return nil, nil, err
		}
	}
	return ln, adminLn, nil
}

// listenFlag listens on addr, the value of flag; its error names both, and
// says so when another process holds the port.
func listenFlag(flag, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s: the port is taken (another process listens on it; is a taskwire serve already running?): %w", flag, addr, err)
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

// sessionStore returns the store's session store and, on PostgreSQL, an
// answer relay so that a client's answer reaching another node of the fleet
// is forwarded to the node holding the call.
func (n *node) sessionStore(ctx context.Context) (session.Store, server.AnswerRelay, error) {
	if st, ok := n.store.(*postgres.Store); ok {
		relay, err := postgres.NewAnswerRelay(ctx, st, postgres.AnswerRelayOptions{})
		if err != nil {
			return nil, nil, fmt.Errorf("answer relay: %w", err)
		}
		n.relay = relay
		return st.Sessions(), relay, nil
	}
	return n.store.Sessions(), nil, nil
}

// URL returns the demo endpoint's URL, or "" on a node without HTTP.
func (n *node) URL() string { return n.url }

// StopNow cuts a Shutdown under way short: open HTTP connections are
// closed, the worker runtime stops claiming, and running jobs are
// cancelled, to be released and run again later. Shutdown still returns
// only once everything has stopped.
//
// The runtime stops claiming before its jobs are cancelled: Shutdown
// cancels its context only after the HTTP drain, and until then each
// released job would be claimed again at once, cancelled and released, in
// a loop.
func (n *node) StopNow() {
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
func (n *node) Failed() <-chan error { return n.failed }

// Shutdown stops the node gracefully, in order: listen streams end
// (server.Close), the HTTP server finishes in-flight requests within
// ShutdownGrace (then drops the rest), the worker runtime drains (running
// jobs get ShutdownGrace to finish, then are released to run again: a task
// is never failed because a process stops), and the store is closed. It is
// safe to call more than once.
func (n *node) Shutdown() error {
	n.shutdownOnce.Do(func() {
		var errs []error
		n.admin.drain()
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
		if err := n.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("closing the store: %w", err))
		}
		if err := n.trace.shutdown(); err != nil {
			errs = append(errs, err)
		}
		n.shutdownErr = errors.Join(errs...)
	})
	return n.shutdownErr
}
