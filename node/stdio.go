package node

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/session/memory"
)

// runStdio serves the endpoint on Stdio.In and Stdio.Out until the input
// ends, a signal arrives or ctx ends, then stops promptly, as a host that
// closes stdin and signals two seconds later expects: at EOF or the first
// signal, whichever comes first, the running jobs' handlers are cancelled
// and the jobs released through the store at once (the next process on
// the store claims them without waiting for their lease; ShutdownGrace
// does not apply), the worker runtime stops claiming, and calls waiting
// inline for a task end with the task still running. Other requests still
// running get DrainTimeout to send their responses (a signal ends the
// reading of the input, not that drain), the store is closed, and runStdio
// returns. It writes nothing to Out but protocol messages; logs go to the
// configured logger.
func (n *Node) runStdio(ctx context.Context, signals <-chan os.Signal) error {
	cfg := n.cfg
	if cfg.Stdio.DrainTimeout < 0 {
		return errors.New("--drain-timeout must not be negative")
	}
	// A signal, from start-up on, ends the serving (and abandons a
	// start-up under way). The watcher ends with ctx: at the latest when
	// runStdio returns.
	ctx, cancel := context.WithCancel(ctx)
	var watchers sync.WaitGroup
	defer func() {
		cancel()
		watchers.Wait()
	}()
	signalled := make(chan struct{})
	watchers.Go(func() {
		select {
		case <-signals:
			close(signalled)
			cancel()
		case <-ctx.Done():
		}
	})
	logger := cfg.Logger
	if err := n.startStdio(ctx); err != nil {
		return err
	}
	ep, err := n.endpoint()
	if err != nil {
		n.Shutdown()
		return err
	}
	sessions := cfg.Sessions // in memory: a stdio session ends with its process
	if sessions.Store == nil {
		if sessions.Store, err = memory.New(memory.Options{MaxSessions: sessions.MaxSessions}); err != nil {
			n.Shutdown()
			return err
		}
	}
	srv, err := server.New(server.Options{
		Sessions:         &sessions,
		Endpoints:        []*server.Endpoint{ep},
		Logger:           logger,
		TaskManager:      n.store,
		TaskLimits:       cfg.TaskLimits,
		TaskQueueTimeout: cfg.StoreSpec.Timeout,
		Subscriptions:    cfg.Subscriptions,
	})
	if err != nil {
		n.Shutdown()
		return err
	}
	in := newEOFReader(cfg.Stdio.In)
	watchers.Go(func() {
		select {
		case <-in.ended:
			logger.Info("stdin ended: releasing running jobs")
		case <-signalled:
			logger.Info("signalled: releasing running jobs")
		case <-ctx.Done():
		}
		n.StopNow()
		srv.Close()
	})
	logger.Info("serving MCP on stdio", "store", n.storeName(), "workers", cfg.Workers)
	id := server.Identity{Principal: cfg.Stdio.Principal, Tenant: cfg.Stdio.Principal}
	serveErr := srv.ServeStdio(ctx, in, cfg.Stdio.Out, server.StdioOptions{Identity: &id, DrainTimeout: cfg.Stdio.DrainTimeout})
	cancel()
	watchers.Wait() // the jobs are released and the server closed
	if err := errors.Join(serveErr, n.Shutdown()); err != nil {
		return err
	}
	logger.Info("stopped")
	return nil
}

// storeName names the store in logs: the spec (never a password), or
// "given" for a store handed over open.
func (n *Node) storeName() string {
	if n.cfg.Store != nil {
		return "given"
	}
	return n.cfg.StoreSpec.String()
}

// startStdio opens the store and, with workers, starts the worker runtime
// (Start without HTTP); with no workers, it only opens the store, for an
// API-only process whose jobs run elsewhere.
func (n *Node) startStdio(ctx context.Context) (err error) {
	if n.started {
		return errors.New("node: started twice")
	}
	n.started = true
	if n.store, err = n.openStore(ctx); err != nil {
		return err
	}
	if n.cfg.Workers == 0 {
		return nil
	}
	if n.trace, err = newNodeTracing(ctx); err != nil {
		n.store.Close()
		return err
	}
	if err := n.newRuntime(); err != nil {
		n.trace.shutdown()
		n.store.Close()
		return err
	}
	n.startRuntime()
	return nil
}

// eofReader is the input of ServeStdio: it closes ended when a Read first
// fails, at EOF or on a read error, so that the jobs are released while
// the requests still running drain.
type eofReader struct {
	r     io.Reader
	ended chan struct{}
	once  sync.Once
}

func newEOFReader(r io.Reader) *eofReader { return &eofReader{r: r, ended: make(chan struct{})} }

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.ended) })
	}
	return n, err
}
