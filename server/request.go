package server

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// Request is what an application handler sees of one admitted request. It is
// valid only until the handler returns.
type Request struct {
	// Method is the JSON-RPC method, such as "tools/call".
	Method string
	// Endpoint is the configured name of the endpoint that received it.
	Endpoint string
	// Name is the tool or prompt name, or the resource URI.
	Name string
	// Identity is who the request acts for, as admitted.
	Identity Identity
	// Meta is the request's _meta: protocol version, client capabilities,
	// client info, log level, progress token, trace context.
	Meta *mcp.RequestMeta
	// Arguments are the raw tool arguments exactly as received (tools/call).
	Arguments json.RawMessage
	// InputResponses are the client's answers to an earlier input_required
	// result (MRTR). Nil on a first call.
	InputResponses mcp.InputResponses

	state        []byte
	round        int
	taskCreation *task.CreationContext
	created      *task.Task // see CreatedTask
	creationKey  string     // see CreationKey
	id           mcp.ID
	stream       *responseStream
}

// CreationKey returns the idempotency key that a program passed to
// Server.CreateTask (CreateTaskParams.IdempotencyKey) for this call, or ""
// for a client's call and a CreateTask without one. A task tool that
// deduplicates creations should prefer it to a key it reads from the
// arguments; durable tools do.
func (r *Request) CreationKey() string { return r.creationKey }

// Capabilities returns the client capabilities declared by this request.
// Capabilities are per request: never infer them from earlier requests.
func (r *Request) Capabilities() *mcp.ClientCapabilities { return r.Meta.ClientCapabilities }

// RequestState returns the application state the handler attached to its
// previous input_required result (see InputRequired), verified and unsealed.
// It is nil on a first call. The framework has already checked that the state
// was issued by this server for the same identity, endpoint, method, target
// and arguments, and that it has not expired.
func (r *Request) RequestState() []byte { return r.state }

// Round returns how many input_required rounds this request has completed:
// 0 on a first call, 1 on the retry after the first input_required result,
// and so on. It is verified like RequestState.
func (r *Request) Round() int { return r.round }

// ErrNoProgressToken is returned by ReportProgress when the request did not
// ask for progress notifications.
var ErrNoProgressToken = errors.New("server: the request carries no progress token")

// ReportProgress sends notifications/progress for this request when the
// client asked for it with a progress token. The first notification turns the
// response into an SSE stream. total and message are omitted when zero.
func (r *Request) ReportProgress(ctx context.Context, progress, total float64, message string) error {
	if r.Meta == nil || len(r.Meta.ProgressToken) == 0 {
		return ErrNoProgressToken
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := mcp.ProgressParams{ProgressToken: r.Meta.ProgressToken, Progress: progress, Message: message}
	if total != 0 {
		p.Total = &total
	}
	b, err := json.Marshal(&p)
	if err != nil {
		return err
	}
	return r.stream.notify(mcp.NotificationProgress, b)
}

// Log sends notifications/message for this request when the request's log
// level admits level. It does nothing when the client set no log level. data
// must encode as JSON.
func (r *Request) Log(ctx context.Context, level mcp.LoggingLevel, logger string, data any) error {
	if r.Meta == nil || r.Meta.LogLevel == "" {
		return nil
	}
	want, ok := r.Meta.LogLevel.Severity()
	got, ok2 := level.Severity()
	if !ok || !ok2 || got < want {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	d, err := json.Marshal(data)
	if err != nil {
		return err
	}
	b, err := json.Marshal(&mcp.LoggingMessageParams{Level: level, Logger: logger, Data: d})
	if err != nil {
		return err
	}
	return r.stream.notify(mcp.NotificationMessage, b)
}

// InputRequiredError asks the client for input before the request can
// complete (multi round-trip requests). Return it from a tool, prompt or
// resource handler with InputRequired.
type InputRequiredError struct {
	Requests mcp.InputRequests
	State    []byte
}

func (e *InputRequiredError) Error() string { return "server: input required" }

// InputRequired returns an error that makes the server answer with
// resultType "input_required" and the given input requests. state is opaque
// application data the server seals (authenticated encryption, bound to the
// identity, endpoint, method, target and arguments, with an expiry) and hands
// back through Request.RequestState when the client retries with its answers.
//
// Every request must be one the client declared a capability for (for
// example form or URL elicitation); otherwise the client receives HTTP 400
// with -32021 naming the missing capabilities, and the handler should not
// have asked.
func InputRequired(requests mcp.InputRequests, state []byte) error {
	return &InputRequiredError{Requests: requests, State: state}
}
