// Package admin serves a process's operations endpoints on an HTTP
// handler of their own, apart from the MCP endpoints: /metrics (a handler
// the application gives, such as prometheus.Handler), /healthz (the
// process runs) and /readyz (the process can serve now: its readiness
// check passes within a short timeout).
//
// It depends on nothing but the standard library (and the project's
// internal Host check). Mount New's handler on a listener that only the
// monitoring system reaches (taskwire serve and taskwire worker do so with
// --admin-addr), or under a path of an existing mux.
//
// Every request's Host header must name the listener as it is reached,
// against DNS rebinding (a page on an attacker's domain that resolves to
// this address would otherwise read /metrics through the visitor's
// browser): a loopback name, an IP address, or one of
// Options.AllowedHosts. Other requests get 403.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/internal/hostcheck"
)

// DefaultReadyTimeout bounds a readiness check when Options.ReadyTimeout is
// zero.
const DefaultReadyTimeout = 2 * time.Second

// CheckFunc is a readiness check: nil when the process can serve now, else
// the reason it cannot. It must return by ctx's deadline (the stores'
// Ready methods do); /readyz waits for it. The error's text
// is logged, never shown: /readyz shows only a category (see Reason).
type CheckFunc func(ctx context.Context) error

// Options configure New. Zero values mean the defaults.
type Options struct {
	// Metrics serves GET /metrics, for example prometheus.Handler(reg).
	// Nil: /metrics is 404.
	Metrics http.Handler
	// Ready is the readiness check of /readyz. Nil: ready whenever the
	// process runs.
	Ready CheckFunc
	// ReadyTimeout bounds each check. Default DefaultReadyTimeout (2 s).
	ReadyTimeout time.Duration
	// Console, when set, serves every method on /console and the paths
	// under it: the operator console (package console), which
	// authenticates its requests itself.
	Console http.Handler
	// Logger receives the cause of a failed check when readiness changes
	// (not at every probe). Nil discards it.
	Logger *slog.Logger
	// AllowedHosts are more names a request's Host header may carry
	// (without port, any case), on top of those always accepted: the
	// loopback names (localhost, 127.0.0.1, ::1) and IP addresses, which a
	// DNS rebinding page cannot send (its Host is the attacker's domain).
	// Name the DNS names the listener is reached by, such as a monitoring
	// system's service name. The entry "*" accepts any Host; use it only
	// behind a proxy that checks Host itself.
	AllowedHosts []string
}

// Handler serves the admin endpoints. Build it with New; it is safe for
// concurrent use.
type Handler struct {
	mux   *http.ServeMux
	opts  Options
	hosts map[string]bool // Options.AllowedHosts, lower case
	ready atomic.Bool     // the last check passed; starts true, so a first failure is logged
}

// New returns the handler of /metrics, /healthz and /readyz, and of
// /console when Options.Console is set. Every other path is 404; methods
// other than GET and HEAD are 405 outside /console, and a request whose
// Host is not allowed (see Options.AllowedHosts) is 403 on every path. It
// fails when ReadyTimeout is negative or an AllowedHosts entry is empty or
// has a port.
func New(opts Options) (*Handler, error) {
	if opts.ReadyTimeout < 0 {
		return nil, fmt.Errorf("admin: Options.ReadyTimeout (%v) is negative", opts.ReadyTimeout)
	}
	for _, h := range opts.AllowedHosts {
		if !hostName(h) {
			return nil, fmt.Errorf("admin: Options.AllowedHosts: %q is not a host name without port", h)
		}
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{mux: http.NewServeMux(), opts: opts, hosts: hostcheck.Set(opts.AllowedHosts)}
	h.ready.Store(true)
	h.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { writeLine(w, http.StatusOK, "ok") })
	h.mux.HandleFunc("GET /readyz", h.serveReady)
	if opts.Metrics != nil {
		h.mux.Handle("GET /metrics", opts.Metrics)
	}
	if opts.Console != nil {
		h.mux.Handle("/console", opts.Console)
		h.mux.Handle("/console/", opts.Console)
	}
	return h, nil
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.hostAllowed(r.Host) {
		writeLine(w, http.StatusForbidden, "forbidden: host not allowed")
		return
	}
	h.mux.ServeHTTP(w, r)
}

// hostName reports whether h is "*", an IP address, or a name without
// port, path or space.
func hostName(h string) bool {
	if h == "*" || net.ParseIP(h) != nil {
		return true
	}
	return h != "" && !strings.ContainsAny(h, ":/[] \t")
}

// hostAllowed reports whether a request's Host names this listener: a
// loopback name, an IP address, or an allowed host.
func (h *Handler) hostAllowed(hostport string) bool {
	host := hostcheck.Name(hostport)
	if host == "" {
		return false
	}
	return hostcheck.IsLoopbackName(host) || net.ParseIP(host) != nil || h.hosts["*"] || h.hosts[host]
}

// Check runs the readiness check under ReadyTimeout and returns its error:
// what /readyz answers, for callers of their own. A check that returns
// nil after its deadline passed counts as timed out.
func (h *Handler) Check(ctx context.Context) error {
	if h.opts.Ready == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.opts.ReadyTimeout)
	defer cancel()
	err := h.opts.Ready(ctx)
	if err == nil {
		err = ctx.Err()
	}
	return err
}

func (h *Handler) serveReady(w http.ResponseWriter, r *http.Request) {
	err := h.Check(r.Context())
	was := h.ready.Swap(err == nil)
	if err != nil {
		if was {
			h.opts.Logger.Warn("not ready", "reason", Reason(err), "err", err)
		}
		writeLine(w, http.StatusServiceUnavailable, "not ready: "+Reason(err))
		return
	}
	if !was {
		h.opts.Logger.Info("ready again")
	}
	writeLine(w, http.StatusOK, "ready")
}

// Reason returns the one-line category /readyz shows for a failed check:
// the ReadinessReason() of the first error in err's chain that has one
// (the stores' Ready errors do), "timed out" for a deadline, else "check
// failed". It never returns the error's own text, which may name hosts,
// users or driver messages.
func Reason(err error) string {
	var r interface{ ReadinessReason() string }
	switch {
	case errors.As(err, &r):
		return oneLine(r.ReadinessReason())
	case errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	}
	return "check failed"
}

// NotReady returns an error whose Reason is reason and whose cause is err
// (which may be nil), for checks of an application's own.
func NotReady(reason string, err error) error { return &notReady{reason: reason, err: err} }

type notReady struct {
	reason string
	err    error
}

// Error returns the reason and the cause's text, for logs.
func (e *notReady) Error() string {
	if e.err == nil {
		return e.reason
	}
	return e.reason + ": " + e.err.Error()
}
func (e *notReady) Unwrap() error           { return e.err }
func (e *notReady) ReadinessReason() string { return e.reason }

// oneLine keeps the first line of s, at most 200 bytes of it.
func oneLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200]
	}
	return s
}

func writeLine(w http.ResponseWriter, status int, line string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintln(w, line)
}

// All checks every check in order and returns the first error: a process
// is ready when all its parts are.
func All(checks ...CheckFunc) CheckFunc {
	return func(ctx context.Context) error {
		for _, c := range checks {
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}
