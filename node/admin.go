package node

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/taskwire/taskwire/admin"
	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/console"
	twprom "github.com/taskwire/taskwire/prometheus"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/worker"
)

// The admin listener of serve and worker (--admin-addr): /metrics,
// /healthz and /readyz on a listener of their own, off by default.

// adminShutdownTimeout bounds the admin listener's shutdown, after the
// rest of the node has stopped.
const adminShutdownTimeout = 2 * time.Second

// nodeAdmin is a node's metrics and admin listener. A nil *nodeAdmin (no
// --admin-addr) collects no metrics and serves nothing; every method
// accepts it.
type nodeAdmin struct {
	addr     string
	hosts    []string // --admin-allowed-hosts
	cfg      Console
	reg      *prom.Registry
	server   *twprom.ServerMetrics // nil on a node without HTTP
	worker   *twprom.WorkerMetrics // nil on a node without workers
	ln       *admin.Server
	console  *console.Console // nil without an operator token (console.go)
	draining atomic.Bool      // set by drain: /readyz answers 503 from then on
}

// newNodeAdmin registers the metrics of the node cfg describes on a
// registry of its own, with the gauges of st, the node's store, when it
// reports them (backend.GaugeSource: both stores do). It returns nil when
// cfg.AdminAddr is empty.
func newNodeAdmin(cfg Config, st any) (*nodeAdmin, error) {
	if cfg.AdminAddr == "" {
		return nil, nil
	}
	a := &nodeAdmin{addr: cfg.AdminAddr, hosts: cfg.AdminAllowedHosts, reg: twprom.NewRegistry(), cfg: cfg.Console}
	var err error
	if cfg.Addr != "" || cfg.Listener != nil {
		if a.server, err = twprom.NewServerMetrics(a.reg); err != nil {
			return nil, err
		}
	}
	if cfg.Workers > 0 {
		if a.worker, err = twprom.NewWorkerMetrics(a.reg); err != nil {
			return nil, err
		}
	}
	if src, ok := st.(backend.GaugeSource); ok {
		if err := twprom.RegisterStoreGauges(a.reg, src, twprom.StoreOptions{Logger: cfg.Logger}); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// serverMetrics returns the server's Metrics and Observer, nil (the
// server's no-ops) without an admin listener.
func (a *nodeAdmin) serverMetrics() (server.Metrics, server.Observer) {
	if a == nil || a.server == nil {
		return nil, nil
	}
	return a.server, a.server.Observer()
}

// workerMetrics returns the runtime's Metrics: the test hook when set,
// else the admin listener's, else nil (the runtime's no-op).
func (a *nodeAdmin) workerMetrics(test worker.Metrics) worker.Metrics {
	if test != nil || a == nil || a.worker == nil {
		return test
	}
	return a.worker
}

// start registers the gauges of srv (nil on a node without HTTP) and
// serves the admin endpoints on ln, the listener bound for --admin-addr
// (listenNode), ready while st, the node's store, is (when it has a Ready
// method: both stores do). On error the caller closes ln.
func (a *nodeAdmin) start(srv *server.Server, st any, sched *schedule.Scheduler, ln net.Listener, logger *slog.Logger) error {
	if a == nil {
		return nil
	}
	if srv != nil {
		if err := twprom.RegisterServerGauges(a.reg, srv); err != nil {
			return err
		}
	}
	checks := []admin.CheckFunc{func(context.Context) error {
		if a.draining.Load() {
			return admin.NotReady("shutting down", nil)
		}
		return nil
	}}
	if r, ok := st.(interface{ Ready(context.Context) error }); ok {
		checks = append(checks, r.Ready)
	}
	var err error
	if a.console, err = newConsole(a.cfg, st, sched, logger); err != nil {
		return fmt.Errorf("console: %w", err)
	}
	h, err := admin.New(admin.Options{Metrics: twprom.Handler(a.reg), Ready: admin.All(checks...), Logger: logger,
		Console: consoleHandler(a.console), AllowedHosts: a.hosts})
	if err != nil {
		return err
	}
	a.ln = admin.Serve(ln, h, logger)
	if !isLoopbackAddr(a.addr) {
		logger.Warn("admin listener beyond loopback: /metrics, /healthz and /readyz answer without authentication "+
			"anyone who reaches this address (the console asks for its operator token); keep it on a network only "+
			"your monitoring reaches, or behind a proxy that requires a token", "addr", a.ln.Addr())
	}
	return nil
}

// listenAddr returns the admin listener's address, "" without one.
func (a *nodeAdmin) listenAddr() string {
	if a == nil || a.ln == nil {
		return ""
	}
	return a.ln.Addr()
}

// drain makes /readyz answer 503 "shutting down", so that load balancers
// stop sending work while the node drains; /metrics goes on.
func (a *nodeAdmin) drain() {
	if a != nil {
		a.draining.Store(true)
	}
}

// shutdown stops the admin listener, within adminShutdownTimeout.
func (a *nodeAdmin) shutdown() error {
	if a == nil || a.ln == nil {
		return nil
	}
	if a.console != nil {
		a.console.Close() // ends its live-update streams, which Shutdown would wait for
	}
	ctx, cancel := context.WithTimeout(context.Background(), adminShutdownTimeout)
	defer cancel()
	if err := a.ln.Shutdown(ctx); err != nil {
		return fmt.Errorf("admin shutdown: %w", err)
	}
	return nil
}
