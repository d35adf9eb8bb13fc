package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/taskwire/taskwire/admin"
	"github.com/taskwire/taskwire/console"
	twprom "github.com/taskwire/taskwire/prometheus"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/gauges"
	"github.com/taskwire/taskwire/worker"
)

// The admin listener of serve and worker (--admin-addr): /metrics,
// /healthz and /readyz on a listener of their own, off by default.

// adminShutdownTimeout bounds the admin listener's shutdown, after the
// rest of the node has stopped.
const adminShutdownTimeout = 2 * time.Second

// adminAddrFlag is --admin-addr. Set accepts PORT, :PORT (both meaning
// 127.0.0.1:PORT) or HOST:PORT; any other value is a usage error. hosts
// is --admin-allowed-hosts.
type adminAddrFlag struct {
	addr  string
	hosts []string
}

// addAdminFlag defines --admin-addr and --admin-allowed-hosts on fs.
func addAdminFlag(fs *flag.FlagSet) *adminAddrFlag {
	f := &adminAddrFlag{}
	fs.Var(f, "admin-addr", "`address` of the admin listener (/metrics, /healthz, /readyz): PORT or :PORT for 127.0.0.1, "+
		"or HOST:PORT; off when empty (the default)")
	fs.Func("admin-allowed-hosts", "more `hosts` whose name a request's Host header on --admin-addr may carry, comma-separated, "+
		"without port (the name monitoring reaches it by); the loopback names and IP addresses are always accepted", f.setHosts)
	return f
}

// setHosts parses --admin-allowed-hosts.
func (f *adminAddrFlag) setHosts(v string) error {
	for h := range strings.SplitSeq(v, ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if !validHostName(h) {
			return fmt.Errorf("%q is not a host name or IP address without port, or *", h)
		}
		f.hosts = append(f.hosts, h)
	}
	return nil
}

// check is the usage check of the two flags together.
func (f *adminAddrFlag) check() error {
	if f.hosts != nil && f.addr == "" {
		return usageErrorf("--admin-allowed-hosts needs --admin-addr")
	}
	return nil
}

func (f *adminAddrFlag) String() string { return f.addr }

func (f *adminAddrFlag) Set(v string) error {
	addr, err := parseAdminAddr(v)
	if err != nil {
		return err
	}
	f.addr = addr
	return nil
}

// parseAdminAddr resolves a --admin-addr value: "" is off, a bare port or
// ":PORT" is loopback, a host is taken only when named.
func parseAdminAddr(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	host, port := "", v
	if _, err := strconv.Atoi(v); err != nil {
		var splitErr error
		if host, port, splitErr = net.SplitHostPort(v); splitErr != nil {
			return "", fmt.Errorf("want PORT, :PORT or HOST:PORT, got %q", v)
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("the port of %q must be a number from 0 to 65535", v)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// nodeAdmin is a node's metrics and admin listener. A nil *nodeAdmin (no
// --admin-addr) collects no metrics and serves nothing; every method
// accepts it.
type nodeAdmin struct {
	addr     string
	hosts    []string // --admin-allowed-hosts
	cfg      consoleConfig
	reg      *prom.Registry
	server   *twprom.ServerMetrics // nil on a node without HTTP
	worker   *twprom.WorkerMetrics // nil on a node without workers
	ln       *admin.Server
	console  *console.Console // nil without an operator token (console.go)
	draining atomic.Bool      // set by drain: /readyz answers 503 from then on
}

// newNodeAdmin registers the metrics of the node cfg describes on a
// registry of its own, with the gauges of st, the node's store, when it
// reports them (gauges.Source: both stores do). It returns nil when
// cfg.AdminAddr is empty.
func newNodeAdmin(cfg nodeConfig, st any) (*nodeAdmin, error) {
	if cfg.AdminAddr == "" {
		return nil, nil
	}
	a := &nodeAdmin{addr: cfg.AdminAddr, hosts: cfg.AdminAllowedHosts, reg: twprom.NewRegistry(), cfg: cfg.Console}
	var err error
	if cfg.Addr != "" {
		if a.server, err = twprom.NewServerMetrics(a.reg); err != nil {
			return nil, err
		}
	}
	if cfg.Workers > 0 {
		if a.worker, err = twprom.NewWorkerMetrics(a.reg); err != nil {
			return nil, err
		}
	}
	if src, ok := st.(gauges.Source); ok {
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
func (a *nodeAdmin) start(srv *server.Server, st any, ln net.Listener, logger *slog.Logger) error {
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
	if a.console, err = newConsole(a.cfg, st, logger); err != nil {
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
