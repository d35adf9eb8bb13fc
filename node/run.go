package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"

	"github.com/taskwire/taskwire/server"
)

// Run starts the node, writes where it runs to Messages, and serves until
// ctx ends, a signal arrives (Config.Signals: SIGINT and SIGTERM unless
// set) or the HTTP server or the worker runtime fails; then it shuts the
// node down in order (see Shutdown). The first signal drains: in-flight
// requests and running jobs get ShutdownGrace each to finish; a second
// one stops at once: running jobs are cancelled and released to run again
// later, never failed. A signal during start-up abandons it. Run returns
// nil after a clean stop, else the start-up error (naming the resolved
// store when the store is unreachable) or the failure joined with any
// shutdown error.
//
// A Stdio node serves one client instead, until its input ends or the
// first signal, and releases its running jobs at once (see Config.Stdio).
func (n *Node) Run(ctx context.Context) error {
	signals := n.cfg.Signals
	if signals == nil {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(ch)
		signals = ch
	}
	if n.cfg.Stdio != nil {
		return n.runStdio(ctx, signals)
	}
	if err := n.startWatched(ctx, signals); err != nil {
		return err
	}
	n.printStarted()

	var runErr error
	select {
	case <-ctx.Done():
	case <-signals:
	case runErr = <-n.Failed():
		n.cfg.Logger.Error("stopping after a failure", "err", runErr)
	}
	what := "in-flight requests and running jobs have"
	switch {
	case n.hs == nil:
		what = "running jobs have"
	case n.rt == nil:
		what = "in-flight requests have"
	}
	fmt.Fprintf(n.cfg.Messages, "%s: draining: %s up to %v each to finish (--shutdown-grace); "+
		"press Ctrl-C again to stop at once\n", n.cfg.Name, what, n.cfg.ShutdownGrace)
	n.cfg.Logger.Info("shutting down")
	done := make(chan error, 1)
	go func() { done <- n.Shutdown() }()
	var shutErr error
	select {
	case shutErr = <-done:
	case <-signals:
		fmt.Fprintln(n.cfg.Messages, n.cfg.Name+": stopping at once: running jobs are cancelled and will run again later")
		n.StopNow()
		shutErr = <-done
	}
	if shutErr != nil {
		runErr = errors.Join(runErr, shutErr)
	}
	if runErr != nil {
		return runErr
	}
	n.cfg.Logger.Info("stopped")
	return nil
}

// startWatched is Start, abandoned when a signal arrives before it is
// done.
func (n *Node) startWatched(ctx context.Context, signals <-chan os.Signal) error {
	startCtx, cancelStart := context.WithCancel(ctx)
	defer cancelStart()
	started := make(chan struct{})
	var startWG sync.WaitGroup
	startWG.Go(func() {
		select {
		case <-signals:
			cancelStart()
		case <-started:
		}
	})
	err := n.Start(startCtx)
	close(started)
	startWG.Wait()
	return err
}

// printStarted writes the start-up lines: where the node serves, its
// limits, how callers are admitted, the store, the admin listener and the
// workers.
func (n *Node) printStarted() {
	cfg, w := n.cfg, n.cfg.Messages
	if n.URL() != "" {
		fmt.Fprintln(w, cfg.Name+": serving MCP at", n.URL())
		fmt.Fprintf(w, "%s: at most %d connections at once (--max-conns), %s from one address (--max-conns-per-addr)\n",
			cfg.Name, cfg.MaxConns, perAddrText(cfg.MaxConnsPerAddr))
		printAuth(w, cfg)
	}
	if cfg.Store == nil {
		fmt.Fprintf(w, "%s: store %s (%s)\n", cfg.Name, cfg.StoreSpec, cfg.StoreSpec.describe())
	}
	if a := n.AdminAddr(); a != "" {
		fmt.Fprintf(w, "%s: admin endpoints at http://%s (/metrics, /healthz, /readyz)\n", cfg.Name, a)
		printConsole(w, cfg.Name, a, cfg.Console.Token != nil)
	}
	if cfg.Workers > 0 {
		plural := "s"
		if cfg.Workers == 1 {
			plural = ""
		}
		fmt.Fprintf(w, "%s: %d worker%s%s\n", cfg.Name, cfg.Workers, plural, cfg.WorkerNote)
	} else {
		fmt.Fprintf(w, "%s: no workers (API only): tasks wait for `%s worker` on the same store\n", cfg.Name, cfg.Name)
	}
	role := "serve"
	if n.hs == nil {
		role = "worker"
	}
	cfg.Logger.Info("started", "command", role, "workers", cfg.Workers)
}

// perAddrText is how the start-up line names MaxConnsPerAddr.
func perAddrText(n int) string {
	if n == server.NoLimit {
		return "any number"
	}
	return strconv.Itoa(n)
}
