package gateway

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Defaults and bounds of Options.
const (
	// DefaultCallTimeout is Options.CallTimeout when it is zero: the
	// deadline of one pass-through (inline) call toward the upstream.
	DefaultCallTimeout = 30 * time.Second
	// MaxCallTimeout bounds Options.CallTimeout: a pass-through call holds
	// a downstream request open for as long, and a call that takes longer
	// belongs in a task tool.
	MaxCallTimeout = 10 * time.Minute
	// DefaultTaskCallTimeout is Options.TaskCallTimeout when it is zero:
	// the deadline of the upstream call one run of a task tool makes.
	DefaultTaskCallTimeout = time.Hour
	// MaxTaskCallTimeout bounds Options.TaskCallTimeout.
	MaxTaskCallTimeout = 24 * time.Hour
	// DefaultMaxInFlight is Options.MaxInFlight when it is zero: the
	// upstream calls the gateway makes at once, pass-through and task runs
	// together.
	DefaultMaxInFlight = 64
	// MaxMaxInFlight bounds Options.MaxInFlight.
	MaxMaxInFlight = 10_000
	// DefaultMaxTools is Options.MaxTools when it is zero: an upstream
	// that lists more tools is refused.
	DefaultMaxTools = 1000
	// DefaultMaxToolBytes is Options.MaxToolBytes when it is zero: a
	// mirrored tool whose JSON (name, description, schemas, annotations)
	// is larger is left out and logged by name.
	DefaultMaxToolBytes = 64 << 10
	// DefaultListTimeout is Options.ListTimeout when it is zero: the
	// deadline of connecting to the upstream and listing its tools.
	DefaultListTimeout = 30 * time.Second
	// DefaultMaxHeldCalls is Options.MaxHeldCalls when it is zero.
	DefaultMaxHeldCalls = 16
	// DefaultHoldTimeout is Options.HoldTimeout when it is zero.
	DefaultHoldTimeout = 2 * time.Minute
	// MaxHoldTimeout bounds Options.HoldTimeout.
	MaxHoldTimeout = 30 * time.Minute
	// DefaultMaxSubscriptions is Options.MaxSubscriptions when it is
	// zero.
	DefaultMaxSubscriptions = 1024
	// MaxMaxSubscriptions bounds Options.MaxSubscriptions.
	MaxMaxSubscriptions = 65_536
	// MaxGlobs bounds the patterns of Options.TaskTools and
	// Options.RetryTools, each.
	MaxGlobs = 256
	// DefaultMaxResumedSessions is Options.MaxResumedSessions when it is
	// zero.
	DefaultMaxResumedSessions = 16
	// MaxMaxResumedSessions bounds Options.MaxResumedSessions.
	MaxMaxResumedSessions = 1024
)

// Options configure New. Exactly one of Upstream and UpstreamCommand is
// required; zero values mean the defaults above.
type Options struct {
	// Upstream is the URL of the upstream MCP server's Streamable HTTP
	// endpoint (http or https, with a host). The gateway negotiates the
	// protocol revision with it as the Go client does: 2026-07-28, else a
	// 2025-11-25 or 2025-06-18 session.
	Upstream string
	// UpstreamCommand is the program and arguments of an upstream MCP
	// server over stdio, instead of Upstream: New starts it (directly,
	// never through a shell; the program is looked up in PATH when it has
	// no slash) and asks it server/discover over its standard input and
	// output. A process that answers as a 2026-07-28 server is spoken to
	// in that revision, as an HTTP upstream of it is (each request
	// carrying its _meta, the Tasks extension, input rounds in results, a
	// subscriptions/listen for list changes); otherwise (an error, no
	// answer within 3 s, or ProtocolVersions without 2026-07-28) New
	// starts it afresh and opens a 2025-11-25 or 2025-06-18 session. Every process that calls New runs
	// its own (an API node to list and pass calls through, a worker for
	// the task runs). When the process exits, calls in flight fail as
	// connection failures, and it is started again after a backoff
	// (jittered, doubling from 100 ms up to 30 s, from the start again
	// after a minute of health), its tools listed again (a tool it no
	// longer lists answers an error saying so); Close stops it (its
	// standard input is closed, then it is killed after 3 s). Its
	// standard error is kept in memory (the last 8 KiB) and never logged.
	UpstreamCommand []string
	// UpstreamEnv is the environment of the UpstreamCommand process, as
	// KEY=value pairs. Nil: this process's environment.
	UpstreamEnv []string
	// UpstreamDir is the working directory of the UpstreamCommand
	// process. Empty: this process's.
	UpstreamDir string
	// SerialCalls gives the UpstreamCommand process one tools/call at a
	// time: a call waits, within its deadline, until the one in flight
	// has returned (a call that creates an upstream task returns at
	// once). stdio does not say which call a request of the process's
	// own serves; with one call in flight, every elicitation or sampling
	// request the process sends is relayed to that call's client, where
	// several calls in flight would get a request that names no task
	// refused. For a server that asks for input during its calls and
	// serves several clients; it costs the concurrency toward the
	// process. Refused with an HTTP Upstream, whose calls carry their own
	// requests.
	SerialCalls bool
	// UpstreamHeaders are sent with every upstream request: static
	// credentials such as an API key or "Authorization: Bearer ...".
	// The downstream caller's own token is never forwarded. The headers
	// the protocol owns (Mcp-*, MCP-Protocol-Version, Content-Type,
	// Accept, Last-Event-ID) are refused.
	UpstreamHeaders http.Header
	// TaskTools are path.Match patterns of the upstream tool names served
	// as durable task tools; the other tools pass through inline. A
	// pattern matches a whole name: "slow.*", "build", "*".
	TaskTools []string
	// RetryTools are patterns of the task tools that are safe to call
	// again: a run that failed on a transport or JSON-RPC error, or that a
	// crash or a lost lease interrupted, calls the upstream once more.
	// A task tool that matches none of them is called at most once per
	// task, as far as the gateway can tell: such a failure fails its task.
	// A pattern that matches a tool TaskTools does not match is no error
	// (it names nothing) and is logged.
	RetryTools []string
	// Tools are per-tool settings (task or not, retry or not, timeout,
	// attempts), at most MaxToolSettings entries, the first matching a
	// tool applying to it; New refuses an entry that contradicts
	// TaskTools or RetryTools for a tool the upstream lists, naming both.
	Tools []ToolSettings
	// CallTimeout is the deadline of a pass-through call, at most
	// MaxCallTimeout. Zero: DefaultCallTimeout.
	CallTimeout time.Duration
	// TaskCallTimeout is the deadline of the upstream call one run of a
	// task tool makes, at most MaxTaskCallTimeout. Zero:
	// DefaultTaskCallTimeout.
	TaskCallTimeout time.Duration
	// ListTimeout bounds connecting to the upstream and listing its tools
	// in New (besides New's context). Zero: DefaultListTimeout.
	ListTimeout time.Duration
	// MaxInFlight bounds the upstream calls made at once by this process,
	// at most MaxMaxInFlight; a call beyond it waits for a slot within its
	// deadline. Zero: DefaultMaxInFlight.
	MaxInFlight int
	// MaxHeldCalls bounds the calls passed through inline to a 2025-era
	// upstream that are kept open at once while their client answers an
	// input request of the upstream (each keeps its MaxInFlight slot); a
	// request beyond it is answered upstream with an error. At most
	// MaxInFlight. Zero: DefaultMaxHeldCalls (or MaxInFlight if smaller).
	MaxHeldCalls int
	// HoldTimeout is how long such a call is kept open for its client's
	// answer, at most MaxHoldTimeout; then the upstream request is
	// answered with an error and the call cancelled a second later. Zero:
	// DefaultHoldTimeout.
	HoldTimeout time.Duration
	// MaxResumedSessions bounds the 2025-era sessions of upstream tasks
	// that this process resumed (sessions an earlier gateway process
	// opened, taken up to follow its tasks) and holds at once, in use by
	// runs or idle, at most MaxMaxResumedSessions. A session is let go
	// when none of its tasks needs a run any more (ended with DELETE, see
	// the package documentation) or, at the cap, when a run needs another
	// one: the idle session used longest ago is closed without DELETE (it
	// stays open at the upstream, and a later run resumes it again). With
	// every one in use, a run that needs another session is retried later
	// (worker.Unavailable), following the same upstream task then: no call
	// is repeated. Zero: DefaultMaxResumedSessions.
	MaxResumedSessions int
	// MaxSubscriptions bounds the distinct resource URIs this process
	// subscribes to at the upstream (for an upstream that advertises
	// resources.subscribe), however many downstream subscribers share
	// each: a subscription to one more URI is refused with -32602, at
	// most MaxMaxSubscriptions. Zero: DefaultMaxSubscriptions.
	MaxSubscriptions int
	// MaxTools bounds the tools the upstream may list. Zero:
	// DefaultMaxTools.
	MaxTools int
	// MaxToolBytes bounds the JSON of one mirrored tool. Zero:
	// DefaultMaxToolBytes.
	MaxToolBytes int
	// MaxAttempts is the job option of every retry tool (see
	// durable.RawTool): how many failed runs the task is given. Zero: the
	// store's default.
	MaxAttempts int
	// ProtocolVersions pins the revisions the gateway may negotiate with
	// the upstream (client.Options.ProtocolVersions), preferred first;
	// for an UpstreamCommand, 2026-07-28, 2025-11-25 and 2025-06-18 only.
	// Nil or empty: the client's defaults (2026-07-28 first).
	ProtocolVersions []string
	// Transport, when set, carries the upstream requests (for example to
	// add mutual TLS). Nil: a transport of the gateway's own.
	Transport http.RoundTripper
	// Logger receives the gateway's diagnostics: categories of upstream
	// failures, tool names left out, never arguments, results or tokens.
	// Nil discards them.
	Logger *slog.Logger
}

// protocolHeaders are the headers the client owns; UpstreamHeaders may not
// set them.
var protocolHeaders = []string{"Mcp-", "Mcp-Protocol-Version", "Content-Type", "Accept", "Last-Event-Id"}

// Validate reports every problem of o in one error, one line per problem,
// each naming its field; it changes nothing and sends nothing.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch u, err := url.Parse(o.Upstream); {
	case o.Upstream == "" && len(o.UpstreamCommand) == 0:
		bad("Upstream or UpstreamCommand is required")
	case o.Upstream != "" && len(o.UpstreamCommand) > 0:
		bad("Upstream and UpstreamCommand exclude each other: give one")
	case o.Upstream == "":
		errs = append(errs, o.checkCommand()...)
	case err != nil:
		bad("Upstream: %v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		bad("Upstream: scheme %q is not http or https", u.Scheme)
	case u.Host == "":
		bad("Upstream: %q has no host", o.Upstream)
	case u.User != nil:
		bad("Upstream: credentials in the URL are refused; send them with UpstreamHeaders")
	}
	if o.Upstream != "" && (o.UpstreamEnv != nil || o.UpstreamDir != "") {
		bad("UpstreamEnv and UpstreamDir apply to UpstreamCommand, not to an HTTP Upstream")
	}
	if o.Upstream != "" && o.SerialCalls {
		bad("SerialCalls applies to UpstreamCommand, not to an HTTP Upstream")
	}
	for name, values := range o.UpstreamHeaders {
		if err := checkHeader(name, values); err != nil {
			bad("UpstreamHeaders: %v", err)
		}
	}
	errs = append(errs, checkGlobs("TaskTools", o.TaskTools)...)
	errs = append(errs, checkGlobs("RetryTools", o.RetryTools)...)
	errs = append(errs, checkTools(o.Tools)...)
	between := func(field string, d, maxD time.Duration) {
		if d < 0 || d > maxD {
			bad("%s must be between 0 (the default) and %v, not %v", field, maxD, d)
		}
	}
	between("CallTimeout", o.CallTimeout, MaxCallTimeout)
	between("TaskCallTimeout", o.TaskCallTimeout, MaxTaskCallTimeout)
	between("ListTimeout", o.ListTimeout, MaxCallTimeout)
	if o.MaxInFlight < 0 || o.MaxInFlight > MaxMaxInFlight {
		bad("MaxInFlight must be between 0 (the default) and %d, not %d", MaxMaxInFlight, o.MaxInFlight)
	}
	between("HoldTimeout", o.HoldTimeout, MaxHoldTimeout)
	inFlight := o.MaxInFlight
	if inFlight <= 0 {
		inFlight = DefaultMaxInFlight
	}
	if o.MaxHeldCalls < 0 || o.MaxHeldCalls > inFlight {
		bad("MaxHeldCalls must be between 0 (the default) and MaxInFlight, not %d", o.MaxHeldCalls)
	}
	if o.MaxResumedSessions < 0 || o.MaxResumedSessions > MaxMaxResumedSessions {
		bad("MaxResumedSessions must be between 0 (the default) and %d, not %d", MaxMaxResumedSessions, o.MaxResumedSessions)
	}
	if o.MaxSubscriptions < 0 || o.MaxSubscriptions > MaxMaxSubscriptions {
		bad("MaxSubscriptions must be between 0 (the default) and %d, not %d", MaxMaxSubscriptions, o.MaxSubscriptions)
	}
	if o.MaxTools < 0 {
		bad("MaxTools must not be negative")
	}
	if o.MaxToolBytes < 0 {
		bad("MaxToolBytes must not be negative")
	}
	if o.MaxAttempts < 0 {
		bad("MaxAttempts must not be negative")
	}
	return errors.Join(errs...)
}

// checkCommand checks UpstreamCommand and the fields that apply to an
// HTTP upstream only.
func (o Options) checkCommand() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.UpstreamCommand[0] == "" {
		bad("UpstreamCommand: the program (its first element) is empty")
	}
	for _, a := range o.UpstreamCommand {
		if strings.ContainsRune(a, 0) {
			bad("UpstreamCommand: an argument holds a NUL byte")
			break
		}
	}
	if len(o.UpstreamHeaders) > 0 {
		bad("UpstreamHeaders apply to an HTTP Upstream, not to UpstreamCommand")
	}
	if o.Transport != nil {
		bad("Transport applies to an HTTP Upstream, not to UpstreamCommand")
	}
	for _, v := range o.ProtocolVersions {
		if v != mcp.LatestProtocolVersion && v != mcp.ProtocolVersion20251125 && v != mcp.ProtocolVersion20250618 {
			bad("ProtocolVersions: %q is not a revision a stdio upstream speaks (2026-07-28, 2025-11-25, 2025-06-18)", v)
		}
	}
	return errs
}

// checkHeader refuses a header name that is not an HTTP token or that the
// protocol owns, and a value with control characters.
func checkHeader(name string, values []string) error {
	if name == "" || strings.ContainsFunc(name, func(r rune) bool {
		return r <= ' ' || r >= 0x7f || strings.ContainsRune(`"(),/:;<=>?@[\]{}`, r)
	}) {
		return fmt.Errorf("%q is not a valid header name", name)
	}
	canon := http.CanonicalHeaderKey(name)
	for _, p := range protocolHeaders {
		if canon == p || strings.HasSuffix(p, "-") && strings.HasPrefix(canon, p) {
			return fmt.Errorf("%s is set by the gateway's client and cannot be configured", canon)
		}
	}
	for _, v := range values {
		if strings.ContainsFunc(v, func(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }) {
			return fmt.Errorf("the value of %s holds a control character", canon)
		}
	}
	return nil
}

// checkGlobs refuses empty and malformed patterns, and more than MaxGlobs.
func checkGlobs(field string, globs []string) []error {
	var errs []error
	if len(globs) > MaxGlobs {
		errs = append(errs, fmt.Errorf("%s: %d patterns, more than %d", field, len(globs), MaxGlobs))
	}
	for _, g := range globs {
		if g == "" {
			errs = append(errs, fmt.Errorf("%s: an empty pattern", field))
			continue
		}
		if _, err := path.Match(g, ""); err != nil {
			errs = append(errs, fmt.Errorf("%s: pattern %q: %v", field, g, err))
		}
	}
	return errs
}

// matchAny reports whether name matches one of globs (already checked).
func matchAny(globs []string, name string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}

// withDefaults returns o with its zero values replaced by the defaults.
func (o Options) withDefaults() Options {
	def := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.CallTimeout, DefaultCallTimeout)
	def(&o.TaskCallTimeout, DefaultTaskCallTimeout)
	def(&o.ListTimeout, DefaultListTimeout)
	if o.MaxInFlight == 0 {
		o.MaxInFlight = DefaultMaxInFlight
	}
	def(&o.HoldTimeout, DefaultHoldTimeout)
	if o.MaxHeldCalls == 0 {
		o.MaxHeldCalls = min(DefaultMaxHeldCalls, o.MaxInFlight)
	}
	if o.MaxResumedSessions == 0 {
		o.MaxResumedSessions = DefaultMaxResumedSessions
	}
	if o.MaxSubscriptions == 0 {
		o.MaxSubscriptions = DefaultMaxSubscriptions
	}
	if o.MaxTools == 0 {
		o.MaxTools = DefaultMaxTools
	}
	if o.MaxToolBytes == 0 {
		o.MaxToolBytes = DefaultMaxToolBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}
