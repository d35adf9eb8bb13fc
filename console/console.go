// Package console is a browser console for the operators of a taskwire
// deployment: an overview of the tasks (by status and tool, queue depth,
// throughput and failures over the last hour), a filtered, paged list of
// every tenant's tasks with a lookup by ID, a page per task with its
// history, and the actions cancel, retry and delete, each behind a
// confirmation.
//
// It is server-rendered HTML (html/template) with an embedded stylesheet
// and a small script; nothing is fetched from the network, and every page
// works without JavaScript. The script adds live updates from the store's
// change hints over Server-Sent Events.
//
// Mount the Console on an operations listener only, never beside the MCP
// endpoints: package admin does so at /console when given one (taskwire
// serve --admin-token-file). Every request needs the operator token: as
// "Authorization: Bearer TOKEN", or through the login form, which sets an
// HttpOnly, SameSite=Strict session cookie (Secure over TLS) signed with a
// key derived from the token. Actions need a same-origin request and, with
// a session, the session's CSRF token. With Options.OAuth, an OAuth access
// token that grants Options.OperatorScope is admitted as a Bearer
// credential too. Failed sign-ins are limited per client address, per
// class of presented credential and in all (Options.SignInPerAddress,
// SignInPerCredential, SignInGlobal): over the limits they get 429 with
// Retry-After, and the right token is refused unchecked only in the rare
// case that wrong ones of its own class used up their bucket. Every response carries
// Cache-Control: no-store. Each action writes one audit log line: the
// operator (credential kind, and a short hash of the session or of the
// access token's principal), the action, the outcome and the task as the
// first 12 hex digits of the SHA-256 of its ID (TaskRef), never the ID
// itself, its arguments or its result.
package console

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/task"
)

//go:embed templates/*.html static/*
var files embed.FS

// Defaults and bounds of Options.
const (
	// Prefix is the path the console is served under.
	Prefix = "/console"
	// MinTokenLen is the shortest operator token New accepts.
	MinTokenLen = 16
	// DefaultSessionTTL is how long a login lasts.
	DefaultSessionTTL = 8 * time.Hour
	// DefaultMaxStreams bounds the live-update streams served at once.
	DefaultMaxStreams = 16
	// DefaultHeartbeat is the interval of a stream's keep-alive comment.
	DefaultHeartbeat = 15 * time.Second
	// DefaultCoalesce is the shortest interval between two change events
	// of one stream: hints arriving meanwhile are merged into one.
	DefaultCoalesce = time.Second
	// DefaultStreamLifetime ends a stream after this long; the browser
	// reconnects (and is authenticated again).
	DefaultStreamLifetime = 30 * time.Minute
	// DefaultGaugesMaxAge is how long the overview reuses a snapshot of
	// Options.Gauges.
	DefaultGaugesMaxAge = 10 * time.Second
	// DefaultOperatorScope is the scope an OAuth access token must grant
	// to be admitted to the console.
	DefaultOperatorScope = "taskwire:operator"
	// DefaultTimeout bounds the store calls of one request.
	DefaultTimeout = 5 * time.Second
	// pageSize is the length of a page of the task list.
	pageSize = 50
)

// Store is what the console reads and acts on: a store's operator view,
// which every store of this module returns from its Operator method
// (backend.OperatorSource).
type Store = backend.Operator

// Options configure New.
type Options struct {
	// Store is required.
	Store Store
	// Token is the operator token, at least MinTokenLen bytes. Required.
	Token []byte
	// OAuth, when set, also admits "Authorization: Bearer" access tokens
	// it verifies (see oauth.ResourceServer.Verify) that grant
	// OperatorScope; the operator token keeps working. A valid token
	// without the scope gets 403, a refused one 401. The audit lines name
	// such an operator "oauth:" + PrincipalRef(principal). Access tokens
	// do not start sessions: the login form takes the operator token only.
	OAuth *oauth.ResourceServer
	// OperatorScope is the scope OAuth tokens need. Default
	// DefaultOperatorScope.
	OperatorScope string
	// SignInPerAddress and SignInGlobal bound failed sign-ins per client
	// address and in all (see SignInLimit). Defaults DefaultSignInBurst
	// and DefaultSignInEvery, DefaultGlobalSignInBurst and
	// DefaultGlobalSignInEvery.
	SignInPerAddress, SignInGlobal SignInLimit
	// SignInPerCredential bounds the failed sign-ins of each of the 256
	// classes of presented credentials (a keyed hash of the credential
	// picks its class), so that an address's wrong tokens do not lock the
	// right token out: a sign-in is refused unchecked only while both its
	// address's and its class's buckets are empty. Defaults
	// DefaultCredentialSignInBurst and DefaultCredentialSignInEvery.
	SignInPerCredential SignInLimit
	// SignInAddresses bounds the client addresses whose sign-in buckets
	// are kept. Default DefaultSignInAddresses.
	SignInAddresses int
	// Gauges, when set, adds queue depth by job state to the overview.
	// A snapshot costs a scan of the store's jobs, so the overview
	// reuses one for up to GaugesMaxAge. When Gauges is a
	// backend.QueueGaugeSource (the stores of this module are), the overview
	// reads it without the counts of tasks, which it has from Store.
	Gauges backend.GaugeSource
	// GaugesMaxAge is how long the overview reuses a Gauges snapshot.
	// Default DefaultGaugesMaxAge.
	GaugesMaxAge time.Duration
	// Schedules, when set, adds the node's schedules to the overview:
	// each one's period, next and last run, the task of its last period
	// and the category of its last failure (a *schedule.Scheduler).
	Schedules ScheduleSource
	// Events, when set, drives the live updates (the store's
	// EventPublisher). Nil: the pages are static.
	Events task.EventPublisher
	// ShowArguments shows a task's tool arguments on its page. Off by
	// default: arguments may hold what their callers consider secret.
	ShowArguments bool
	// Logger receives the audit lines and the causes of internal errors.
	// Nil: slog.Default(), as it is when New runs, so that the audit lines
	// are never lost; to discard them, pass a logger with
	// slog.DiscardHandler.
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// SessionTTL is how long a login lasts. Default DefaultSessionTTL.
	SessionTTL time.Duration
	// MaxStreams bounds the live-update streams. Default
	// DefaultMaxStreams.
	MaxStreams int
	// Heartbeat, Coalesce and StreamLifetime shape a live-update stream.
	// Defaults DefaultHeartbeat, DefaultCoalesce, DefaultStreamLifetime.
	Heartbeat, Coalesce, StreamLifetime time.Duration
	// Timeout bounds the store calls of one request. Default
	// DefaultTimeout.
	Timeout time.Duration
}

// Console is the console's http.Handler, for paths under Prefix. Build it
// with New and Close it when the listener stops; it is safe for concurrent
// use.
type Console struct {
	opts   Options
	prefix string
	keys   keys
	tmpl   map[string]*template.Template
	mux    *http.ServeMux
	log    *slog.Logger

	streams  *streams
	gauges   gaugeCache
	limits   *signInLimiter
	signOuts *signOuts
}

// validScopeToken reports whether s is one OAuth scope token (RFC 6749,
// section 3.3): printable ASCII without space, '"' or '\\'. Anything else
// could not be written into the WWW-Authenticate challenge.
func validScopeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return false
		}
	}
	return s != ""
}

// New validates opts and returns the console. It fails for a missing
// store, a token shorter than MinTokenLen, or a negative option.
func New(opts Options) (*Console, error) {
	if opts.Store == nil {
		return nil, errors.New("console: Options.Store is required")
	}
	if len(opts.Token) < MinTokenLen {
		return nil, fmt.Errorf("console: the operator token must be at least %d bytes", MinTokenLen)
	}
	if len(opts.Token) > maxTokenLen {
		return nil, fmt.Errorf("console: the operator token must be at most %d bytes", maxTokenLen)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"SessionTTL", &opts.SessionTTL, DefaultSessionTTL},
		{"Heartbeat", &opts.Heartbeat, DefaultHeartbeat},
		{"Coalesce", &opts.Coalesce, DefaultCoalesce},
		{"StreamLifetime", &opts.StreamLifetime, DefaultStreamLifetime},
		{"Timeout", &opts.Timeout, DefaultTimeout},
		{"GaugesMaxAge", &opts.GaugesMaxAge, DefaultGaugesMaxAge},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("console: Options.%s (%v) is negative", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	for _, l := range []struct {
		name string
		v    *SignInLimit
		def  SignInLimit
	}{
		{"SignInPerAddress", &opts.SignInPerAddress, SignInLimit{DefaultSignInBurst, DefaultSignInEvery}},
		{"SignInGlobal", &opts.SignInGlobal, SignInLimit{DefaultGlobalSignInBurst, DefaultGlobalSignInEvery}},
		{"SignInPerCredential", &opts.SignInPerCredential, SignInLimit{DefaultCredentialSignInBurst, DefaultCredentialSignInEvery}},
	} {
		switch {
		case *l.v == SignInLimit{}:
			*l.v = l.def
		case l.v.Burst < 1 || l.v.Every <= 0:
			return nil, fmt.Errorf("console: Options.%s (%+v) needs a Burst of at least 1 and a positive Every", l.name, *l.v)
		}
	}
	if opts.SignInAddresses < 0 {
		return nil, fmt.Errorf("console: Options.SignInAddresses (%d) is negative", opts.SignInAddresses)
	}
	if opts.SignInAddresses == 0 {
		opts.SignInAddresses = DefaultSignInAddresses
	}
	if opts.OperatorScope == "" {
		opts.OperatorScope = DefaultOperatorScope
	}
	if !validScopeToken(opts.OperatorScope) {
		return nil, fmt.Errorf("console: Options.OperatorScope %q is not one scope", opts.OperatorScope)
	}
	if opts.MaxStreams < 0 {
		return nil, fmt.Errorf("console: Options.MaxStreams (%d) is negative", opts.MaxStreams)
	}
	if opts.MaxStreams == 0 {
		opts.MaxStreams = DefaultMaxStreams
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	opts.Token = append([]byte(nil), opts.Token...)
	c := &Console{opts: opts, prefix: Prefix, keys: deriveKeys(opts.Token), log: opts.Logger, mux: http.NewServeMux()}
	var err error
	if c.tmpl, err = parseTemplates(); err != nil {
		return nil, err
	}
	c.streams = newStreams(opts)
	c.signOuts = newSignOuts()
	c.limits = newSignInLimiter(opts.SignInPerAddress, opts.SignInPerCredential, opts.SignInGlobal, opts.SignInAddresses, opts.Now())
	p := c.prefix
	c.mux.HandleFunc("GET "+p+"/static/{file}", c.serveStatic)
	c.mux.HandleFunc("GET "+p+"/login", c.serveLoginForm)
	c.mux.HandleFunc("POST "+p+"/login", c.serveLogin)
	c.mux.HandleFunc("POST "+p+"/logout", c.authed(c.serveLogout))
	c.mux.HandleFunc("GET "+p+"/{$}", c.authed(c.serveOverview))
	c.mux.HandleFunc("GET "+p+"/tasks", c.authed(c.serveList))
	c.mux.HandleFunc("GET "+p+"/tasks/{id}", c.authed(c.serveTask))
	c.mux.HandleFunc("GET "+p+"/tasks/{id}/{action}", c.authed(c.serveConfirm))
	c.mux.HandleFunc("POST "+p+"/tasks/{id}/{action}", c.authed(c.serveAction))
	c.mux.HandleFunc("GET "+p+"/events", c.authed(c.serveEvents))
	c.mux.HandleFunc(p+"/", c.authed(func(w http.ResponseWriter, r *http.Request, op operator) {
		c.errorPage(w, r, op, http.StatusNotFound, "There is no such page.")
	}))
	return c, nil
}

// ServeHTTP implements http.Handler for the paths under Prefix; a request
// elsewhere is 404.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: under no-referrer browsers send
	// "Origin: null" with the console's own form posts, which the CSRF
	// check must refuse.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self'; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	if r.URL.Path == c.prefix {
		http.Redirect(w, r, c.prefix+"/", http.StatusSeeOther)
		return
	}
	c.mux.ServeHTTP(w, r)
}

// Close ends the live-update streams and stops listening for hints. The
// handler answers 503 to new streams afterwards; pages keep working.
func (c *Console) Close() error {
	c.streams.close()
	return nil
}

// TaskRef is how the audit log names a task: the first 12 hex digits of
// the SHA-256 of its ID. An operator who has the ID can find its lines
// (console.TaskRef of the ID, or: printf %s ID | sha256sum); the log alone
// does not yield IDs.
func TaskRef(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:6])
}

// authed wraps a handler that needs an operator: without a valid
// credential a GET gets the login page and anything else a bare 401.
func (c *Console) authed(h func(http.ResponseWriter, *http.Request, operator)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		op, v, wait := c.authenticate(r)
		switch v {
		case authLimited:
			c.tooManySignIns(w, wait)
			return
		case authUnavailable:
			w.Header().Set("Retry-After", "1")
			http.Error(w, "The access token cannot be checked now. Try again later.", http.StatusServiceUnavailable)
			return
		case authForbidden:
			w.Header().Set("WWW-Authenticate", `Bearer realm="taskwire console", error="insufficient_scope", scope="`+
				c.opts.OperatorScope+`"`)
			http.Error(w, "Forbidden", http.StatusForbidden)
			return
		case authNone:
			if r.Header.Get("Authorization") != "" {
				w.Header().Set("WWW-Authenticate", `Bearer realm="taskwire console"`)
			}
			if r.Method == http.MethodGet && r.URL.Path != c.prefix+"/events" {
				c.render(w, http.StatusUnauthorized, "login", pageData{Title: "Sign in", Prefix: c.prefix,
					Next: r.URL.RequestURI()})
				return
			}
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		h(w, r, op)
	}
}

// bound returns the request's context bounded by Options.Timeout.
func (c *Console) bound(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), c.opts.Timeout)
}

// parseTemplates parses each page with the layout.
func parseTemplates() (map[string]*template.Template, error) {
	pages := []string{"overview", "list", "task", "confirm", "error", "login"}
	out := make(map[string]*template.Template, len(pages))
	for _, p := range pages {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(files, "templates/layout.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", p, err)
		}
		out[p] = t
	}
	return out, nil
}

// ScheduleSource reports the schedules a node runs; *schedule.Scheduler
// is one.
type ScheduleSource interface {
	Statuses() []schedule.Status
}

// funcs are the templates' helpers.
var funcs = template.FuncMap{
	"time": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.UTC().Format("2006-01-02 15:04:05.000 UTC")
	},
	"lower": strings.ToLower,
}

// serveStatic serves the embedded stylesheet and script.
func (c *Console) serveStatic(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	var ctype string
	switch name {
	case "console.css":
		ctype = "text/css; charset=utf-8"
	case "console.js":
		ctype = "text/javascript; charset=utf-8"
	default:
		http.NotFound(w, r)
		return
	}
	b, err := files.ReadFile("static/" + name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", ctype)
	w.Write(b)
}
