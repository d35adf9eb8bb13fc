package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Defaults of Options.
const (
	DefaultMaxResultBytes       = 16 << 20
	DefaultMaxNotificationBytes = 1 << 20
	DefaultMaxStreamEvents      = 10000
	DefaultRequestTimeout       = time.Minute
	DefaultMaxInputRounds       = 8
	DefaultPollInterval         = time.Second
	DefaultMinPollInterval      = 10 * time.Millisecond
	DefaultMaxPollInterval      = time.Minute
	DefaultMaxPages             = 100
	DefaultMaxReconnects        = 5
	DefaultCloseTimeout         = 2 * time.Second
)

// Handlers answer the server's requests for input: the input_required
// rounds of 2026-07-28 (of a request or of a task) and the server-to-client
// requests of a 2025-era session. A nil handler means the client does not
// declare the capability; a request for it then fails with an
// *InputRequiredError (or, in a session, a JSON-RPC error to the server).
// In a session, a handler's error answers the server's request with
// -32603 "Internal error", or with the error itself when it is (or wraps)
// an *mcp.Error.
type Handlers struct {
	// Elicit asks the user. It returns the user's answer (accept, decline
	// or cancel); an error aborts the request that needed it.
	Elicit func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// ElicitURL declares URL-mode elicitation besides form mode; Elicit
	// must then handle both modes.
	ElicitURL bool
	// ApplyElicitationDefaults fills fields an accepted form answer left
	// out with the defaults of the requested schema (SEP-1034).
	ApplyElicitationDefaults bool
	// Sample runs a model (deprecated feature of the protocol).
	Sample func(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// Roots lists the client's roots (deprecated feature of the protocol).
	Roots func(ctx context.Context) ([]*mcp.Root, error)
	// Declare adds capabilities (elicitation, sampling, roots) the client
	// declares without a handler: the server may then ask for them, and the
	// request or task reports an *InputRequiredError that the caller
	// answers itself, for example later with Task.Answer. 2026-07-28 only:
	// a 2025-era initialize declares only the capabilities that have a
	// handler.
	Declare *mcp.ClientCapabilities
}

// ownIdleConns bounds the idle connections the client's own transport
// keeps to its server (net/http keeps two per host by default).
const ownIdleConns = 100

// Options configure New. Zero values mean the defaults.
type Options struct {
	// HTTPClient sends every request. Nil: a client of its own whose idle
	// connections Close releases; it keeps up to 100 idle connections to
	// the server, so that calls made at once reuse theirs. Its Timeout must be zero (streams are
	// long-lived; the client bounds requests with RequestTimeout instead).
	HTTPClient *http.Client
	// Transport, when set, is the RoundTripper of the client's own
	// HTTPClient, for example one that adds credentials. It cannot be
	// combined with HTTPClient.
	Transport http.RoundTripper
	// Token, when set, returns a bearer token for every request, sent as
	// "Authorization: Bearer <token>". An error fails the request.
	Token func(ctx context.Context) (string, error)
	// Header is added to every request. It must not set the headers the
	// protocol owns (Mcp-*, MCP-Protocol-Version, Content-Type, Accept,
	// Last-Event-ID), and its names and values must be valid HTTP (New
	// fails otherwise, rather than every request).
	Header http.Header

	// MaxResultBytes bounds one response: a JSON body or one SSE event.
	// Default 16 MiB.
	MaxResultBytes int64
	// MaxNotificationBytes bounds one notification or server request on a
	// stream. Default 1 MiB.
	MaxNotificationBytes int64
	// MaxStreamEvents bounds the events of one SSE stream. Default 10,000.
	MaxStreamEvents int
	// RequestTimeout bounds every request whose context has no earlier
	// deadline, except the long-lived streams of Task.Wait and
	// Task.Updates (bounded by their context only). Default one minute.
	RequestTimeout time.Duration
	// CloseTimeout bounds the DELETE with which Close ends a 2025-era
	// session, so that a server that stopped answering cannot hold Close
	// for a RequestTimeout. Default 2 s.
	CloseTimeout time.Duration
	// MaxInputRounds bounds the input_required rounds of one request.
	// Default 8.
	MaxInputRounds int
	// MaxPages bounds the pages a List method follows. Default 100.
	MaxPages int
	// MaxReconnects bounds the resumptions (GET with Last-Event-ID) of one
	// 2025-era response stream. Default 5.
	MaxReconnects int
	// MinPollInterval and MaxPollInterval clamp the server's pollIntervalMs
	// when polling a task. Defaults 10 ms and one minute. Without a
	// suggestion the client polls every DefaultPollInterval.
	MinPollInterval time.Duration
	// MaxPollInterval is the upper clamp (see MinPollInterval); it must not
	// be below MinPollInterval.
	MaxPollInterval time.Duration

	// ProtocolVersions lists the revisions the client may negotiate, in
	// order of preference. Nil means DefaultProtocolVersions: 2026-07-28,
	// then a 2025-11-25 or 2025-06-18 session. Listing only 2025 revisions
	// skips server/discover and opens a session directly.
	ProtocolVersions []string

	// ClientInfo identifies the client in every request. Default name
	// "taskwire-client".
	ClientInfo mcp.Implementation
	// DisableTasks stops the client from declaring the Tasks extension, so
	// that a server answers inline or refuses (-32021).
	DisableTasks bool
	// Handlers answer the server's input requests.
	Handlers Handlers
	// ResumeSession, when set, makes Connect take up an existing 2025-era
	// session instead of opening one: no initialize is sent, the next
	// requests carry its session ID and revision, and the session's GET
	// stream is opened. The server's capabilities, information and
	// instructions are then unknown (nil and empty). A session the server
	// no longer knows is replaced on the first request that gets HTTP 404,
	// as any session is (see Connect). Its ProtocolVersion must be a 2025
	// revision listed in ProtocolVersions, its ID visible ASCII of at most
	// MaxSessionIDLen bytes.
	ResumeSession *SessionResume
	// KeepSession leaves a 2025-era session open on Close (no DELETE), so
	// that the tasks a server binds to the session (mcp-go does) live on
	// for another client that resumes it (ResumeSession, with the ID and
	// revision of Client.Session). The server ends the session itself when
	// it expires.
	KeepSession bool

	// OnListChanged, when set, is told when the server's tools, prompts
	// or resources lists change: of notifications/tools/list_changed (and
	// the prompts and resources ones) on a 2025-era session's GET stream
	// and response streams, and, with a 2026-07-28 server, on a
	// subscriptions/listen stream that the client opens after Connect for
	// the lists the server advertises and reopens with backoff (1 s to
	// 30 s) until Close. It is also told of every list the server
	// advertises when changes may have been missed: a reopened listen (the
	// server may have restarted), or a 2025 session stream gone for good
	// (list again: the request renews the session). It is called on one
	// goroutine of the client, never concurrently; changes that arrive
	// while it runs are coalesced into its next call, so readers never
	// wait for it. It must not call Close, which waits for it to return.
	OnListChanged func(ListChange)
	// OnResourceUpdated, when set, is told of the server's
	// notifications/resources/updated for the URIs of SubscribeResource:
	// on a 2025-era session's GET stream and response streams, or on the
	// listen a 2026-07-28 client keeps for them. It is told "" when
	// subscriptions may have been lost or updates missed: a 2025 session
	// renewed (subscribe again: the new session has none) or a listen
	// reopened (the server may have restarted; the listen subscribes
	// again itself). It is called on one goroutine of the client, never
	// concurrently; readers never wait for it (at most 256 distinct URIs
	// wait, more collapse into one call with ""). It must not call Close.
	OnResourceUpdated func(uri string)
	// Logger receives diagnostics (fallbacks, dropped streams, server log
	// notifications). Nil discards them. Task IDs, tokens and arguments are
	// never logged.
	Logger *slog.Logger
}

// MaxSessionIDLen bounds the session ID of SessionResume and of a
// server's initialize answer.
const MaxSessionIDLen = 1024

// SessionResume names a 2025-era session to take up (Options.ResumeSession),
// as Client.Session returned it. The ID is a capability: whoever has it
// acts in the session, so keep it out of logs.
type SessionResume struct {
	// ID is the Mcp-Session-Id of the session.
	ID string
	// ProtocolVersion is the session's revision: 2025-11-25 or 2025-06-18.
	ProtocolVersion string
}

// DefaultProtocolVersions returns the revisions a client negotiates when
// Options.ProtocolVersions is nil, in order of preference.
func DefaultProtocolVersions() []string {
	return []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618}
}

// protocolHeaders are owned by the client and may not be set in
// Options.Header.
var protocolHeaders = []string{
	mcp.HeaderMethod, mcp.HeaderName, mcp.HeaderSessionID, mcp.HeaderProtocolVersion, "Content-Type", "Accept", mcp.HeaderLastEventID,
}

// validHeaderName reports whether name is an HTTP field name: one or more
// token characters (RFC 9110, section 5.6.2).
func validHeaderName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether v holds no control character other
// than horizontal tab, as net/http requires of a field value.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// validate checks every option and returns a copy with defaults filled in.
// The error joins one error per problem, each naming its option.
func (o Options) validate(rawURL string) (Options, *url.URL, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	u := checkURL(rawURL, bad)
	o.checkHTTP(bad)
	o.checkLimits(bad)
	o.checkVersions(bad)
	o.checkResume(bad)
	if o.ClientInfo.Name == "" {
		o.ClientInfo.Name = "taskwire-client"
	}
	if o.ClientInfo.Version == "" {
		o.ClientInfo.Version = "0.1.0"
	}
	if o.Handlers.ElicitURL && o.Handlers.Elicit == nil {
		bad("Handlers.ElicitURL needs Handlers.Elicit")
	}
	if o.Handlers.ApplyElicitationDefaults && o.Handlers.Elicit == nil {
		bad("Handlers.ApplyElicitationDefaults needs Handlers.Elicit")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Header = o.Header.Clone()
	if err := errors.Join(errs...); err != nil {
		return o, nil, fmt.Errorf("client: invalid options: %w", err)
	}
	return o, u, nil
}

// checkURL parses the server's URL: absolute, http or https, and without
// credentials.
func checkURL(rawURL string, bad func(string, ...any)) *url.URL {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		bad("url must be an absolute http or https URL")
	} else if u.User != nil {
		// net/http would send it as Basic authentication, and error texts
		// would carry it.
		bad("url must not carry credentials (user:password@); use Token or Header")
	}
	return u
}

// checkHTTP checks the HTTP client, the extra headers and the token.
func (o *Options) checkHTTP(bad func(string, ...any)) {
	if o.HTTPClient != nil && o.Transport != nil {
		bad("HTTPClient and Transport cannot both be set")
	}
	if o.HTTPClient != nil && o.HTTPClient.Timeout != 0 {
		bad("HTTPClient.Timeout must be zero (use RequestTimeout)")
	}
	for name, values := range o.Header {
		// net/http refuses such a header on every request.
		if !validHeaderName(name) {
			bad("Header: %q is not a valid header name", name)
			continue
		}
		for _, v := range values {
			if !validHeaderValue(v) {
				bad("Header: the value of %s holds a control character", name)
				break
			}
		}
		for _, p := range protocolHeaders {
			if strings.EqualFold(name, p) || strings.HasPrefix(strings.ToLower(name), strings.ToLower(mcp.HeaderParamPrefix)) {
				bad("Header must not set %s", name)
				break
			}
		}
	}
	if o.Token != nil && o.Header.Get("Authorization") != "" {
		bad("Token and an Authorization header cannot both be set")
	}
}

// checkLimits checks that no bound is negative, fills in the defaults of
// those left zero, and checks the bounds that must be ordered.
func (o *Options) checkLimits(bad func(string, ...any)) {
	limit(bad, "MaxResultBytes", &o.MaxResultBytes, DefaultMaxResultBytes)
	limit(bad, "MaxNotificationBytes", &o.MaxNotificationBytes, DefaultMaxNotificationBytes)
	limit(bad, "MaxStreamEvents", &o.MaxStreamEvents, DefaultMaxStreamEvents)
	limit(bad, "RequestTimeout", &o.RequestTimeout, DefaultRequestTimeout)
	limit(bad, "CloseTimeout", &o.CloseTimeout, DefaultCloseTimeout)
	limit(bad, "MaxInputRounds", &o.MaxInputRounds, DefaultMaxInputRounds)
	limit(bad, "MaxPages", &o.MaxPages, DefaultMaxPages)
	limit(bad, "MaxReconnects", &o.MaxReconnects, DefaultMaxReconnects)
	limit(bad, "MinPollInterval", &o.MinPollInterval, DefaultMinPollInterval)
	limit(bad, "MaxPollInterval", &o.MaxPollInterval, DefaultMaxPollInterval)
	if o.MaxNotificationBytes > o.MaxResultBytes {
		bad("MaxNotificationBytes (%d) exceeds MaxResultBytes (%d)", o.MaxNotificationBytes, o.MaxResultBytes)
	}
	if o.MinPollInterval > o.MaxPollInterval {
		bad("MinPollInterval (%v) exceeds MaxPollInterval (%v)", o.MinPollInterval, o.MaxPollInterval)
	}
}

// limit reports a negative *v as an error naming the option, and sets a
// zero *v to def.
func limit[T int | int64 | time.Duration](bad func(string, ...any), name string, v *T, def T) {
	switch {
	case *v < 0:
		bad("%s must not be negative", name)
	case *v == 0:
		*v = def
	}
}

// checkVersions defaults ProtocolVersions and checks that the client
// speaks every revision it lists.
func (o *Options) checkVersions(bad func(string, ...any)) {
	if o.ProtocolVersions == nil {
		o.ProtocolVersions = DefaultProtocolVersions()
	}
	if len(o.ProtocolVersions) == 0 {
		bad("ProtocolVersions must not be empty")
	}
	for _, v := range o.ProtocolVersions {
		if v != mcp.LatestProtocolVersion && v != mcp.ProtocolVersion20251125 && v != mcp.ProtocolVersion20250618 {
			bad("ProtocolVersions: %q is not a revision this client speaks", v)
		}
	}
	o.ProtocolVersions = slices.Clone(o.ProtocolVersions)
}

// checkResume checks ResumeSession and keeps a copy of it.
func (o *Options) checkResume(bad func(string, ...any)) {
	r := o.ResumeSession
	if r == nil {
		return
	}
	if r.ID == "" || !visibleASCII(r.ID) {
		bad("ResumeSession.ID must be 1 to %d bytes of visible ASCII", MaxSessionIDLen)
	}
	switch {
	case !mcp.IsLegacyVersion(r.ProtocolVersion):
		bad("ResumeSession.ProtocolVersion %q is not a 2025 revision", r.ProtocolVersion)
	case !slices.Contains(o.ProtocolVersions, r.ProtocolVersion):
		bad("ResumeSession.ProtocolVersion %q is not listed in ProtocolVersions", r.ProtocolVersion)
	}
	cp := *r
	o.ResumeSession = &cp
}

// capabilities are the client capabilities declared on every 2026 request.
func (o *Options) capabilities() *mcp.ClientCapabilities {
	c := &mcp.ClientCapabilities{}
	if o.Handlers.Elicit != nil {
		c.Elicitation = &mcp.ElicitationCapability{Form: mcp.Object{}}
		if o.Handlers.ElicitURL {
			c.Elicitation.URL = mcp.Object{}
		}
	}
	if o.Handlers.Sample != nil {
		c.Sampling = &mcp.SamplingCapability{}
	}
	if o.Handlers.Roots != nil {
		c.Roots = &mcp.RootsCapability{}
	}
	if d := o.Handlers.Declare; d != nil {
		if c.Elicitation == nil {
			c.Elicitation = d.Elicitation
		}
		if c.Sampling == nil {
			c.Sampling = d.Sampling
		}
		if c.Roots == nil {
			c.Roots = d.Roots
		}
	}
	if !o.DisableTasks {
		c.Extensions = map[string]mcp.Object{mcp.ExtensionTasks: {}}
	}
	return c
}

// legacyCapabilities are the capabilities of a 2025-era initialize.
func (o *Options) legacyCapabilities(version string) *mcp.LegacyClientCapabilities {
	c := &mcp.LegacyClientCapabilities{}
	if o.Handlers.Elicit != nil {
		c.Elicitation = &mcp.ElicitationCapability{}
		if version == mcp.ProtocolVersion20251125 {
			c.Elicitation.Form = mcp.Object{}
			if o.Handlers.ElicitURL {
				c.Elicitation.URL = mcp.Object{}
			}
		}
	}
	if o.Handlers.Sample != nil {
		c.Sampling = &mcp.SamplingCapability{}
	}
	if o.Handlers.Roots != nil {
		c.Roots = &mcp.RootsCapability{}
	}
	if version == mcp.ProtocolVersion20251125 && !o.DisableTasks {
		c.Tasks = &mcp.ClientTasksCapability{}
	}
	return c
}
