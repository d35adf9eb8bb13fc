package mcp

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// JSON-RPC error codes used by the 2026-07-28 revision.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	CodeInternalError  = -32603

	// CodeHeaderMismatch: a required HTTP header is missing, malformed, or
	// disagrees with the request body. Sent with HTTP 400.
	CodeHeaderMismatch = -32020
	// CodeMissingRequiredClientCapability: processing the request needs a
	// client capability the request did not declare. Sent with HTTP 400 and
	// data {"requiredCapabilities": ClientCapabilities}.
	CodeMissingRequiredClientCapability = -32021
	// CodeUnsupportedProtocolVersion: the requested protocol version is not
	// implemented. Sent with HTTP 400 and data {"supported": [...], "requested": "..."}.
	CodeUnsupportedProtocolVersion = -32022
)

// JSON-RPC error codes of the 2025 era (2025-06-18 and 2025-11-25), which
// the 2026-07-28 revision does not use.
const (
	// CodeSessionNotFound: the request names an Mcp-Session-Id the server
	// does not know (never issued, ended or expired); the client starts a
	// new session with initialize. Sent with HTTP 404.
	CodeSessionNotFound = -32001
	// CodeRequestCancelled: the error of a 2025-11-25 task that was
	// cancelled, as tasks/result reports it.
	CodeRequestCancelled = -32800
)

// Error is a JSON-RPC error object. It implements the error interface so that
// handlers can return protocol errors directly.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

// NewError returns an Error with the given code and message and no data.
func NewError(code int64, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Error implements the error interface. The text never includes Data, which
// may carry request-derived values.
func (e *Error) Error() string {
	return fmt.Sprintf("jsonrpc error %d: %s", e.Code, e.Message)
}

// WithData returns a copy of e whose data member is the JSON encoding of v.
// It panics if v cannot be encoded, which is a programming error.
func (e *Error) WithData(v any) *Error {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mcp: error data cannot be encoded: %v", err))
	}
	c := *e
	c.Data = b
	return &c
}

// InternalError returns the fixed internal error, which carries no data and
// reveals nothing about its cause. The server sends it for every contract
// failure (unverifiable task handles, sanitizer or output-schema failures,
// limits exceeded, handler panics).
func InternalError() *Error { return &Error{Code: CodeInternalError, Message: "Internal error"} }

// InvalidParams returns a -32602 error with the given message. Messages must
// not echo request values such as task IDs.
func InvalidParams(message string) *Error { return &Error{Code: CodeInvalidParams, Message: message} }

// MethodNotFound returns the -32601 error. It never echoes the method name.
func MethodNotFound() *Error { return &Error{Code: CodeMethodNotFound, Message: "Method not found"} }

// HeaderMismatch returns a -32020 error with the given message.
func HeaderMismatch(message string) *Error { return &Error{Code: CodeHeaderMismatch, Message: message} }

// MissingCapabilitiesData is the data member of a -32021 error.
type MissingCapabilitiesData struct {
	RequiredCapabilities *ClientCapabilities `json:"requiredCapabilities"`
}

// MissingCapabilities returns a -32021 error listing the capabilities the
// request must declare.
func MissingCapabilities(required *ClientCapabilities) *Error {
	return (&Error{Code: CodeMissingRequiredClientCapability, Message: "Missing required client capability"}).
		WithData(MissingCapabilitiesData{RequiredCapabilities: required})
}

// UnsupportedVersionData is the data member of a -32022 error.
type UnsupportedVersionData struct {
	Supported []string `json:"supported"`
	Requested string   `json:"requested"`
}

// MaxEchoedVersion bounds the requested version a -32022 error echoes, in
// bytes. Protocol versions are dates such as "2026-07-28"; a longer value is
// cut, so that an error never repeats an arbitrary amount of request data.
const MaxEchoedVersion = 32

// UnsupportedVersion returns a -32022 error naming the supported versions
// and the requested one, cut to at most MaxEchoedVersion bytes (at a
// character boundary).
func UnsupportedVersion(supported []string, requested string) *Error {
	if len(requested) > MaxEchoedVersion {
		cut := MaxEchoedVersion
		for cut > 0 && !utf8.RuneStart(requested[cut]) {
			cut--
		}
		requested = requested[:cut]
	}
	return (&Error{Code: CodeUnsupportedProtocolVersion, Message: "Unsupported protocol version"}).
		WithData(UnsupportedVersionData{Supported: supported, Requested: requested})
}
