package server

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/task"
)

// Options configure a Server. The zero value of every field is a safe
// default, documented on the field.
type Options struct {
	// Endpoints are the MCP endpoints to serve. At least one is required and
	// paths must be unique. Endpoints must not be modified after New.
	Endpoints []*Endpoint

	// Logger receives operational messages. Nil discards them. Log lines never
	// carry arguments, principals, origins or task IDs.
	Logger *slog.Logger

	// Admission decides who each request acts for. Nil admits everyone as the
	// anonymous tenant.
	Admission AdmissionController
	// RequestLimiter, if set, is charged once per admitted request, keyed by
	// the identity's rate key; tools/call, prompts/get and resources/read
	// are charged only after their target is found and the required client
	// capabilities are present, so requests that cannot succeed spend no
	// token. Denials are HTTP 429 with Retry-After.
	RequestLimiter RateLimiter
	// TaskLimits bound, per caller, the calls that may create a task, the
	// caller's active tasks and the size of tasks/update answers; see
	// TaskLimits. The zero value means the defaults.
	TaskLimits TaskLimits
	// Interceptor, if set, runs around every application handler (tools,
	// prompts, resources, completion), inside the handler pool.
	Interceptor Interceptor
	// ResultSanitizer, if set, may rewrite or refuse every inline tool result
	// before output validation. A failure sends the fixed internal error.
	ResultSanitizer ResultSanitizer
	// CatalogPolicy, if set, decides which tools each identity may see and
	// call. A hidden tool is indistinguishable from an unknown one.
	CatalogPolicy CatalogPolicy
	// TaskManager stores tasks for endpoints that serve the Tasks extension
	// (EndpointOptions.TaskProtocolVersions). The server never starts or
	// closes it. An endpoint that declares Tasks without a manager fails New.
	TaskManager task.Manager

	// Sessions configure the sessions of 2025-era clients, served by every
	// endpoint whose ProtocolVersions name a 2025 revision (the default).
	// Nil means the defaults of SessionOptions. Without a
	// SessionOptions.Store, the sessions are kept by the TaskManager when
	// it can keep them (a SessionKeeper: both durable stores), so that
	// they survive a restart and reach every node sharing the store, and
	// otherwise in process.
	Sessions *SessionOptions
	// NodeID names this node in the IDs of server-to-client requests of
	// 2025-era sessions, so that a client's answer reaching another node
	// can be forwarded here (AnswerRelay). 1 to 32 characters of
	// [A-Za-z0-9_-], unique in the fleet. Empty means a random ID.
	NodeID string
	// AnswerRelay forwards answers to server-to-client requests between
	// the nodes of a fleet. Nil means a single node: an answer naming
	// another node is accepted (202) and dropped.
	AnswerRelay AnswerRelay
	// InlineTaskWait bounds how long a 2025-era request waits for a durable
	// task: tasks/result, and tools/call of a tool that waits inline
	// (WithWaitInline). The task goes on when the wait ends. Zero means
	// DefaultInlineTaskWait (10 minutes).
	InlineTaskWait time.Duration
	// MaxTaskWaits bounds the 2025-era requests waiting for a task at once
	// on this node (tasks/result and tools/call waiting inline), each
	// holding a connection, goroutines and a task subscription beyond the
	// request deadline; one principal may hold a quarter of them (at least
	// one). Beyond either bound a wait is refused with 503 "Server busy".
	// Zero means DefaultMaxTaskWaits (1024).
	MaxTaskWaits int

	// Subscriptions, if set, enable subscriptions/listen; task
	// notifications then reach listeners of endpoints that serve Tasks
	// with a manager that publishes events. Its Authorizer is required.
	Subscriptions *SubscriptionOptions

	// Observer is told of every admitted request's start and finish.
	Observer Observer
	// Metrics receives per-request counters with bounded labels.
	Metrics Metrics
	// Tracer, when set, traces every admitted request (package tracing
	// implements it with OpenTelemetry), and every task a request creates
	// keeps the trace context of the request's span. Nil traces nothing,
	// at no cost.
	Tracer Tracer

	// HandlerConcurrency bounds the handlers running at once. Zero means 32.
	HandlerConcurrency int
	// HandlerQueue bounds the requests waiting for a handler slot; beyond it
	// requests fail at once with HTTP 503 and Retry-After: 1. Zero means
	// 128.
	HandlerQueue int
	// TaskConcurrency bounds the task operations among the running
	// handlers: tools/call requests that may create a task, tasks/get,
	// tasks/update and tasks/cancel. They hold handler slots like any
	// request, but never more than TaskConcurrency, so that a slow or
	// unreachable task store leaves the other slots to requests that do
	// not use it. Task operations waiting for this share queue apart from
	// other requests, in a queue bounded by HandlerQueue as well. Zero
	// means half of HandlerConcurrency (at least 1); it must not exceed
	// HandlerConcurrency.
	TaskConcurrency int
	// TaskQueueTimeout bounds how long a task operation waits for a slot
	// of the TaskConcurrency share (and then of the pool). Set it to the
	// task store's call deadline (store.Options.Timeout): while the store
	// hangs, a slot of the share frees once per deadline at most, so a
	// request that waited that long is refused with HTTP 503, Retry-After
	// and -32603 "Server busy" instead of waiting up to RequestTimeout.
	// Zero means 5 s, the stores' default deadline.
	TaskQueueTimeout time.Duration
	// RequestTimeout is the absolute deadline of one request, queueing
	// included. A handler still running then is answered with HTTP 504 and its
	// context is canceled. Zero means 60 s.
	RequestTimeout time.Duration

	// MaxBodyBytes bounds a request body. Zero means 10 MiB; larger is HTTP 413.
	MaxBodyBytes int64
	// MaxBufferedBodyBytes bounds the request-body bytes that all requests
	// together hold in memory, beyond the first 4 KiB of each (which the
	// connection limit of a ConnLimiter bounds). It is charged as bytes
	// arrive, never for an announced Content-Length, and released when the
	// request ends. A request that would exceed it is refused at once with
	// HTTP 503 and Retry-After: 1. Zero means 64 MiB, or MaxBodyBytes if
	// that is larger; New fails when it is less than MaxBodyBytes.
	MaxBufferedBodyBytes int64
	// BodyReadTimeout bounds the time a request's whole body may take to
	// arrive, from the moment its headers have been read. A body still
	// incomplete then is answered with HTTP 408 and its connection closed.
	// Zero means 10 s.
	BodyReadTimeout time.Duration
	// MaxJSONDepth bounds the nesting of request and result JSON. Zero means 128.
	MaxJSONDepth int
	// MaxResultBytes bounds an encoded result. Zero means 4 MiB; larger is the
	// fixed internal error.
	MaxResultBytes int

	// AllowedHosts lists the Host header values accepted, without port
	// (any port is accepted) and compared without case; an IPv6 address
	// is written without brackets. Nil means loopback names only:
	// localhost, 127.0.0.1 and ::1. The single entry "*" accepts any
	// host; use it only behind a proxy that checks Host itself. New fails
	// on an entry with a port, brackets or nothing.
	AllowedHosts []string
	// AllowedOrigins lists the origins (scheme://host[:port]) accepted
	// from browsers. Scheme and host compare without case and a scheme's
	// default port (https 443, http 80) equals its absence, as in the
	// Origin header browsers send; a trailing "/" is ignored. New fails on
	// an entry with a path, query, fragment or user information, or
	// "null". The single entry "*" accepts any origin. Nil means loopback
	// origins of any port. A request without Origin is not a browser
	// request and is not checked.
	AllowedOrigins []string

	// KeepAliveInterval is the period of SSE comment keep-alives on streaming
	// responses. Zero means 15 s.
	KeepAliveInterval time.Duration

	// RequestStateKey seals MRTR requestState values (AES-256-GCM). It must be
	// 32 bytes, shared by every node that may receive a retry. Nil means a
	// random per-process key, which suits a single node.
	RequestStateKey []byte
	// RequestStateTTL bounds how long a requestState stays valid. Zero means 15 min.
	RequestStateTTL time.Duration

	// now is the clock, replaced by tests.
	now func() time.Time
}

// Server serves MCP endpoints over HTTP. It is an http.Handler and is safe
// for concurrent use. Build one with New.
type Server struct {
	opts      Options
	logger    *slog.Logger
	endpoints map[string]*Endpoint
	pool      *handlerPool
	hosts     map[string]bool
	origins   map[string]bool
	sealer    *stateSealer
	validator *task.Validator
	budget    bodyBudget

	taskLimits *taskLimits // resolved Options.TaskLimits

	legacy *legacyServer // nil when no endpoint serves a 2025 revision

	subs        *registry     // nil without Subscriptions
	maintenance chan struct{} // bounds subscription lookups and renewals
	unsubscribe func()        // ends the server's subscription to task events
}

// New validates opts and the endpoints' registrations and returns a ready
// Server. It fails when no endpoint is given, when two share a path, when a
// tool's schemas cannot be inferred or are invalid, or when an option is out
// of range: a negative count, size or duration, a RequestStateKey of the
// wrong length, or a narrower subscription bound set above a wider one. The
// error lists every problem of the options at once. New freezes the
// endpoints: registering on one afterwards panics.
func New(opts Options) (*Server, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	setDefaults(&opts)
	// The defaults are consistent with each other; what remains is a
	// value given for one option against the other's default.
	if opts.TaskConcurrency > opts.HandlerConcurrency {
		return nil, fmt.Errorf("server: Options.TaskConcurrency (%d) exceeds HandlerConcurrency (%d)", opts.TaskConcurrency, opts.HandlerConcurrency)
	}
	if opts.MaxBufferedBodyBytes < opts.MaxBodyBytes {
		return nil, fmt.Errorf("server: Options.MaxBufferedBodyBytes (%d) is below MaxBodyBytes (%d)", opts.MaxBufferedBodyBytes, opts.MaxBodyBytes)
	}
	s := &Server{
		opts:      opts,
		logger:    opts.Logger,
		endpoints: make(map[string]*Endpoint, len(opts.Endpoints)),
		pool:      newHandlerPool(opts.HandlerConcurrency, opts.TaskConcurrency, opts.HandlerQueue, opts.TaskQueueTimeout),
		budget:    bodyBudget{max: opts.MaxBufferedBodyBytes},
	}
	s.hosts, s.origins = hostRules(opts)
	key := opts.RequestStateKey
	if key == nil {
		key = make([]byte, 32)
		rand.Read(key)
	}
	sealer, err := newStateSealer(key, opts.RequestStateTTL, opts.now)
	if err != nil {
		return nil, err
	}
	s.sealer = sealer
	if s.taskLimits, err = newTaskLimits(opts.TaskLimits, opts.TaskManager); err != nil {
		return nil, err
	}
	s.validator = task.NewValidator(task.ValidatorOptions{MaxResultBytes: opts.MaxResultBytes, MaxResultDepth: opts.MaxJSONDepth})
	if so := opts.Subscriptions; so != nil {
		c := *so
		c.setDefaults()
		s.opts.Subscriptions = &c
		s.subs = newRegistry(c.MaxSubscriptions, c.MaxPerTenant)
		s.subs.maxPrincipal = c.MaxPerPrincipal
		s.maintenance = make(chan struct{}, max(1, opts.HandlerConcurrency/2))
	}
	if keeper, ok := opts.TaskManager.(SessionKeeper); ok && (opts.Sessions == nil || opts.Sessions.Store == nil) {
		var so SessionOptions
		if opts.Sessions != nil {
			so = *opts.Sessions
		}
		so.Store = keeper.Sessions()
		opts.Sessions = &so
		s.opts.Sessions = &so
	}
	for _, ep := range opts.Endpoints {
		if ep != nil && ep.servesLegacy() && s.legacy == nil {
			if s.legacy, err = newLegacyServer(opts); err != nil {
				return nil, err
			}
		}
	}
	var errs []error
	for _, ep := range opts.Endpoints {
		if ep == nil {
			return nil, errors.New("server: nil endpoint")
		}
		if _, dup := s.endpoints[ep.opts.Path]; dup {
			return nil, fmt.Errorf("server: two endpoints share the path %q", ep.opts.Path)
		}
		if err := ep.build(s); err != nil {
			errs = append(errs, fmt.Errorf("server: endpoint %q: %w", ep.opts.Name, err))
			continue
		}
		s.endpoints[ep.opts.Path] = ep
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if s.legacy != nil {
		if err := s.legacy.start(s); err != nil {
			return nil, err
		}
	}
	if s.subs != nil && opts.TaskManager != nil {
		if pub := opts.TaskManager.EventPublisher(); pub != nil {
			s.unsubscribe = pub.Subscribe(s.subs.hint)
		}
	}
	return s, nil
}

// hostRules returns the allowed Host and Origin sets of validated
// options, lower-cased and normalised; nil where the option is nil.
func hostRules(opts Options) (hosts, origins map[string]bool) {
	if opts.AllowedHosts != nil {
		lower := make([]string, len(opts.AllowedHosts))
		for i, h := range opts.AllowedHosts {
			lower[i] = strings.ToLower(h)
		}
		hosts = setOf(lower)
	}
	if opts.AllowedOrigins != nil {
		origins = make(map[string]bool, len(opts.AllowedOrigins))
		for _, o := range opts.AllowedOrigins {
			n, _ := normalOrigin(o) // validated by Options.validate
			origins[n] = true
		}
	}
	return hosts, origins
}

// SessionKeeper is a task manager that can also keep the sessions of
// 2025-era clients, over the same database (backend.Store is one). New
// keeps the sessions there when Options.Sessions names no store.
type SessionKeeper interface {
	// Sessions returns the session store.
	Sessions() session.Store
}

// Close ends every GET stream of 2025-era sessions on this node (the
// sessions stay in their store) and every subscriptions/listen stream
// gracefully (each receives its
// final result) and stops following the task manager's events. It does not
// close the manager or its publisher. Call it before http.Server.Shutdown,
// which otherwise waits for listen streams to end on their own. Requests
// other than listens are unaffected, except the released 2025-era calls
// described below. HTTP/1.1 listen streams, which
// net/http no longer tracks once the acknowledgement is sent, have
// written their final result and closed their connection when Close
// returns; each of those writes is bounded by WriteTimeout.
//
// Close cancels, then waits for, the goroutines it owns that outlive
// their requests: the task lookups and authorizations of listens and
// fan-outs (which run the task manager, the catalog policy, the result
// sanitizer and the subscription authorizer) and the 2025-era calls
// whose POST stream the server released (which no GET can resume on
// this node once it is closed). It waits at most CloseGrace; a callback
// that ignores its canceled context past that makes Close return an
// error wrapping ErrStillRunning that counts what still runs by kind
// (its goroutine ends when the callback returns). Close is CloseContext
// with that bound.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), CloseGrace)
	defer cancel()
	return s.CloseContext(ctx)
}

// CloseContext is Close, waiting for the goroutines running application
// callbacks until ctx ends instead of for CloseGrace. The streams are
// ended and the task events unfollowed whatever ctx; the final writes of
// HTTP/1.1 listen streams stay bounded by WriteTimeout, not by ctx.
func (s *Server) CloseContext(ctx context.Context) error {
	var errs []error
	if s.legacy != nil {
		s.legacy.close()
	}
	if s.subs != nil {
		s.subs.close()
		s.subs.waitDetached()
	}
	if s.unsubscribe != nil {
		s.unsubscribe()
	}
	if s.legacy != nil {
		errs = append(errs, s.legacy.released.wait(ctx))
	}
	if s.subs != nil {
		errs = append(errs, s.subs.callbacks.wait(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("server: Close: %w", err)
	}
	return nil
}

func setDefaults(o *Options) {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Admission == nil {
		o.Admission = admitAll{}
	}
	if o.Observer == nil {
		o.Observer = nopObserver{}
	}
	if o.Metrics == nil {
		o.Metrics = nopMetrics{}
	}
	if o.HandlerConcurrency == 0 {
		o.HandlerConcurrency = 32
	}
	if o.HandlerQueue == 0 {
		o.HandlerQueue = 128
	}
	if o.TaskConcurrency == 0 {
		o.TaskConcurrency = max(1, o.HandlerConcurrency/2)
	}
	if o.TaskQueueTimeout == 0 {
		o.TaskQueueTimeout = defaultTaskQueueTimeout
	}
	if o.RequestTimeout == 0 {
		o.RequestTimeout = 60 * time.Second
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = 10 << 20
	}
	if o.MaxBufferedBodyBytes == 0 {
		o.MaxBufferedBodyBytes = max(64<<20, o.MaxBodyBytes)
	}
	if o.BodyReadTimeout == 0 {
		o.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if o.MaxJSONDepth == 0 {
		o.MaxJSONDepth = 128
	}
	if o.MaxResultBytes == 0 {
		o.MaxResultBytes = 4 << 20
	}
	if o.KeepAliveInterval == 0 {
		o.KeepAliveInterval = 15 * time.Second
	}
	if o.RequestStateTTL == 0 {
		o.RequestStateTTL = 15 * time.Minute
	}
	if o.now == nil {
		o.now = time.Now
	}
}

func setOf(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// ServeHTTP routes the request to the endpoint registered for its exact path
// and runs the pipeline. Unknown paths are HTTP 404 without a body.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ep, ok := s.endpoints[r.URL.Path]
	if !ok {
		abandonBody(w, r)
		http.NotFound(w, r)
		return
	}
	s.serve(ep, w, r)
}
