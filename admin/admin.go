// Package admin serves a process's operations endpoints on an HTTP
// handler of their own, apart from the MCP endpoints: /metrics (a handler
// the application gives, such as prometheus.Handler), /healthz (the
// process runs) and /readyz (the process can serve now: its readiness
// check passes within a short timeout).
//
// It depends on nothing but the standard library. Mount New's handler on a
// listener that only the monitoring system reaches (taskwire serve and
// taskwire worker do so with --admin-addr), or under a path of an
// existing mux.
package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
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
}

// Handler serves the admin endpoints. Build it with New; it is safe for
// concurrent use.
type Handler struct {
	mux   *http.ServeMux
	opts  Options
	ready atomic.Bool // the last check passed; starts true, so a first failure is logged
}

// New returns the handler of /metrics, /healthz and /readyz, and of
// /console when Options.Console is set. Every other path is 404; methods
// other than GET and HEAD are 405 outside /console. It fails when
// ReadyTimeout is negative.
func New(opts Options) (*Handler, error) {
	if opts.ReadyTimeout < 0 {
		return nil, fmt.Errorf("admin: Options.ReadyTimeout (%v) is negative", opts.ReadyTimeout)
	}
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Handler{mux: http.NewServeMux(), opts: opts}
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
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

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
