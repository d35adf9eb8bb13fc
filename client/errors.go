package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// Sentinel errors. Test for them with errors.Is.
var (
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("client: closed")
	// ErrResponseTooLarge: a response body, an SSE event or a stream
	// exceeded the limits of Options.
	ErrResponseTooLarge = errors.New("client: response exceeds the configured limit")
	// ErrTaskNotFound: the server does not know the task (unknown, expired
	// after its TTL, or not visible to this caller; servers answer the three
	// alike).
	ErrTaskNotFound = errors.New("client: task not found")
	// ErrTaskCancelled: the task ended in the cancelled state. The error
	// returned is a *TaskCancelledError.
	ErrTaskCancelled = errors.New("client: task was cancelled")
	// ErrTooManyRounds: the server kept answering input_required beyond
	// Options.MaxInputRounds.
	ErrTooManyRounds = errors.New("client: too many input rounds")
	// ErrAlreadyAnswered: Task.Answer was given a key this handle answered
	// before; every input request key is answered once.
	ErrAlreadyAnswered = errors.New("client: input request key already answered")
	// ErrUnsupported: the operation does not exist in the negotiated
	// protocol revision.
	ErrUnsupported = errors.New("client: not supported by the negotiated protocol revision")
)

// RPCError is a JSON-RPC error the server answered a request with.
type RPCError struct {
	// Code is the JSON-RPC error code, such as -32602.
	Code int64
	// Message is the server's message, unfiltered.
	Message string
	// Data is the error's data member as sent, nil when absent; Error never
	// prints it.
	Data json.RawMessage
	// HTTPStatus is the status of the HTTP response that carried the error
	// (200 when the server sent it inside a normal response).
	HTTPStatus int
	// Method is the request method that failed.
	Method string
}

// Error implements error. It never includes Data.
func (e *RPCError) Error() string {
	return fmt.Sprintf("client: %s: jsonrpc error %d: %s", e.Method, e.Code, e.Message)
}

// MissingCapabilities returns the capabilities a -32021 error says the
// request must declare, or nil for other errors.
func (e *RPCError) MissingCapabilities() *mcp.ClientCapabilities {
	if e.Code != mcp.CodeMissingRequiredClientCapability {
		return nil
	}
	var d mcp.MissingCapabilitiesData
	if json.Unmarshal(e.Data, &d) != nil {
		return nil
	}
	return d.RequiredCapabilities
}

// SupportedVersions returns the versions a -32022 error lists, or nil.
func (e *RPCError) SupportedVersions() []string {
	if e.Code != mcp.CodeUnsupportedProtocolVersion {
		return nil
	}
	var d mcp.UnsupportedVersionData
	if json.Unmarshal(e.Data, &d) != nil {
		return nil
	}
	return d.Supported
}

func rpcError(method string, status int, e *mcp.Error) *RPCError {
	return &RPCError{Code: e.Code, Message: e.Message, Data: e.Data, HTTPStatus: status, Method: method}
}

// AuthError: the server answered HTTP 401 or 403. WWWAuthenticate keeps the
// challenge header (for example the resource_metadata URL or the
// insufficient_scope error) so that a caller can obtain a better token.
type AuthError struct {
	// StatusCode is 401 (no or an invalid token) or 403 (refused).
	StatusCode int
	// WWWAuthenticate is the response's WWW-Authenticate header, empty
	// when the server sent none.
	WWWAuthenticate string
}

// Error implements error.
func (e *AuthError) Error() string {
	if e.StatusCode == 403 {
		return "client: forbidden (HTTP 403)"
	}
	return "client: unauthorized (HTTP 401)"
}

// ConnectionError: the server could not be reached or the connection broke
// before a response arrived (DNS, refused, reset, TLS, a stream that ended
// early). Err is the cause.
type ConnectionError struct {
	// Op is what failed: the request's method, "DELETE" (Close ending a
	// 2025-era session), "token" (Options.Token failed) or "connect" (the
	// context ended while another call negotiated).
	Op string
	// Err is the cause; a context's error when the context ended.
	Err error
}

// Error implements error.
func (e *ConnectionError) Error() string { return "client: " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *ConnectionError) Unwrap() error { return e.Err }

// HTTPError: the server answered with an unexpected HTTP status and no
// JSON-RPC error. Body holds at most the first 512 bytes. NoEndpoint tells
// the common mistake of a URL with a wrong path apart.
type HTTPError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// ContentType is the response's media type, without parameters.
	ContentType string
	// Body is the start of the response body, clipped to 512 bytes.
	Body []byte
	// Method is the request method, or "DELETE" (Close ending a session).
	Method string
}

// Error implements error: the method and the status, and for NoEndpoint
// the hint that the URL names no MCP endpoint. It never includes Body.
func (e *HTTPError) Error() string {
	s := fmt.Sprintf("client: %s: unexpected HTTP status %d", e.Method, e.StatusCode)
	if text := http.StatusText(e.StatusCode); text != "" {
		s += " " + text
	}
	if e.NoEndpoint() {
		s += ": no MCP endpoint at this URL (is its path right?)"
	}
	return s
}

// NoEndpoint reports whether the status says that no MCP endpoint answers
// at the client's URL: HTTP 404, 405 or 501 to server/discover or
// initialize, the requests that open a conversation, as a web server
// answers for a path it does not serve or a method it does not take. (A
// 404 to a later request of a 2025-era session means that the session
// ended, which the client handles by opening a new one.)
func (e *HTTPError) NoEndpoint() bool {
	switch e.Method {
	case mcp.MethodServerDiscover, mcp.MethodInitialize:
	default:
		return false
	}
	switch e.StatusCode {
	case http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusNotImplemented:
		return true
	}
	return false
}

// ProtocolError: the server's answer broke the protocol (malformed JSON, a
// response for another request id, a task result without a task ID, a body
// over the limits). Err, when set, is the cause; ErrResponseTooLarge is one.
type ProtocolError struct {
	// Method is the request method whose answer broke the protocol.
	Method string
	// Reason says what was wrong, in words.
	Reason string
	// Err is the cause, nil when there is none.
	Err error
}

// Error implements error.
func (e *ProtocolError) Error() string {
	s := "client: " + e.Method + ": " + e.Reason
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns the cause.
func (e *ProtocolError) Unwrap() error { return e.Err }

func protoErr(method, reason string, err error) *ProtocolError {
	return &ProtocolError{Method: method, Reason: reason, Err: err}
}

// TaskFailedError: the task ended in the failed state. Err is the JSON-RPC
// error the server reported for it (code, message, data).
type TaskFailedError struct {
	// TaskID is the task's ID.
	TaskID string
	// StatusMessage is the task's last status message, empty when none.
	StatusMessage string
	// Err is the error the server reported for the task; never nil.
	Err *RPCError
}

// Error implements error. It names neither the task ID nor the error data.
func (e *TaskFailedError) Error() string {
	return fmt.Sprintf("client: task failed: jsonrpc error %d: %s", e.Err.Code, e.Err.Message)
}

// Unwrap returns the JSON-RPC error.
func (e *TaskFailedError) Unwrap() error { return e.Err }

// TaskCancelledError: the task ended in the cancelled state. It matches
// ErrTaskCancelled with errors.Is.
type TaskCancelledError struct {
	// TaskID is the task's ID.
	TaskID string
	// StatusMessage is the task's last status message, empty when none.
	StatusMessage string
}

// Error implements error.
func (e *TaskCancelledError) Error() string { return ErrTaskCancelled.Error() }

// Is reports whether target is ErrTaskCancelled.
func (e *TaskCancelledError) Is(target error) bool { return target == ErrTaskCancelled }

// InputRequiredError: the server needs input that no configured handler can
// provide (no handler for the method, or a task whose input must be
// answered with Task.Answer). Keys lists the pending request keys, sorted;
// Requests holds them. TaskID is empty for a request's own input round.
type InputRequiredError struct {
	// TaskID is the task that waits for the input; empty for a request's
	// own input round.
	TaskID string
	// Keys are the pending request keys, sorted.
	Keys []string
	// Requests are the pending requests, by key.
	Requests mcp.InputRequests
}

// Error implements error.
func (e *InputRequiredError) Error() string {
	return "client: input required for " + strings.Join(e.Keys, ", ")
}

func newInputRequiredError(taskID string, reqs mcp.InputRequests) *InputRequiredError {
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return &InputRequiredError{TaskID: taskID, Keys: keys, Requests: reqs}
}
