package server

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// protocolError is a JSON-RPC error together with the HTTP status and safe
// headers it is sent with.
type protocolError struct {
	status int
	err    *mcp.Error
	header http.Header
}

func (e *protocolError) Error() string { return e.err.Error() }

func newProtocolError(status int, err *mcp.Error) *protocolError {
	return &protocolError{status: status, err: err}
}

// Errors that the pipeline sends. They never echo request values, except
// where the protocol requires it or the caller needs it to correct the
// call: -32022 names the requested version, resource-not-found the
// requested URI and unknownToolError the requested tool.
var (
	errParse          = newProtocolError(http.StatusBadRequest, mcp.NewError(mcp.CodeParseError, "Parse error"))
	errTooDeep        = newProtocolError(http.StatusBadRequest, mcp.NewError(mcp.CodeParseError, "Parse error: JSON nesting too deep"))
	errBodyTooLarge   = newProtocolError(http.StatusRequestEntityTooLarge, mcp.NewError(mcp.CodeInvalidRequest, "Invalid Request: body too large"))
	errMissingMeta    = newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: _meta must carry io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"))
	errMethodNotFound = newProtocolError(http.StatusNotFound, mcp.MethodNotFound())
	errInternal       = newProtocolError(http.StatusOK, mcp.InternalError())
	errQueueFull      = busy("Server busy")
	errDeadline       = newProtocolError(http.StatusGatewayTimeout, mcp.NewError(mcp.CodeInternalError, "Request deadline exceeded"))
	errUnknownPrompt  = newProtocolError(http.StatusOK, mcp.InvalidParams("Invalid params: unknown prompt"))
	errBadCursor      = newProtocolError(http.StatusOK, mcp.InvalidParams("Invalid params: invalid cursor"))
	errStreamGone     = newProtocolError(http.StatusOK, mcp.NewError(mcp.CodeInternalError, "Stream closed"))
	errBadState       = newProtocolError(http.StatusOK, mcp.InvalidParams("Invalid params: invalid requestState"))
)

// errStoreUnavailable answers a request whose store call failed because
// the store could not be reached in time (see storeUnavailable): HTTP 503
// with Retry-After, so that a client retries instead of reading a contract
// failure, and the fixed -32603 "Internal error", so that it learns no more
// than that.
var errStoreUnavailable = busy(mcp.InternalError().Message)

// storeFailure maps the error of a task or session store call that is not
// one the protocol names: errStoreUnavailable when the store could not be
// reached in time, else the fixed internal error. Callers check the
// request's own deadline first (errDeadline). A task creation whose
// handler ran does not use it: a 503 says nothing was stored, and the
// creating transaction may have committed (see creationErrorResult).
func storeFailure(err error) *protocolError {
	if storeUnavailable(err) {
		return errStoreUnavailable
	}
	return errInternal
}

// storeUnavailable reports whether err says the store is out of reach:
// the store marked it task.ErrUnavailable, its own deadline passed (a
// frozen connection, an exhausted pool, a held lock), or the network
// failed (a refused or reset connection).
func storeUnavailable(err error) bool {
	var ne net.Error
	return errors.Is(err, task.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne)
}

// CodeRateLimited is the implementation-defined JSON-RPC code sent with HTTP
// 429 when a rate limiter denies a request.
const CodeRateLimited = -31999

// maxEchoedToolName bounds the bytes of a tool name that unknownToolError
// repeats: the longest name the MCP specification allows (128 characters
// of A-Z, a-z, 0-9, _, - and .).
const maxEchoedToolName = 128

// unknownToolError is the -32602 of a tools/call whose tool does not exist
// or is hidden from the caller by the catalog policy, the same bytes for
// both. It names the requested tool so that the caller sees which name was
// wrong: quoted as a Go string of ASCII only (control, non-ASCII and
// invalid bytes escaped, so that nothing in it reaches a terminal or a log
// raw), and cut on a character boundary after maxEchoedToolName bytes,
// marked "(cut)".
func unknownToolError(name string) *protocolError {
	msg := "Invalid params: unknown tool "
	if len(name) <= maxEchoedToolName {
		msg += strconv.QuoteToASCII(name)
	} else {
		n := maxEchoedToolName
		for n > 0 && !utf8.RuneStart(name[n]) {
			n--
		}
		msg += strconv.QuoteToASCII(name[:n]) + " (cut)"
	}
	return invalidParams(msg)
}

func invalidRequest(msg string) *protocolError {
	return newProtocolError(http.StatusBadRequest, mcp.NewError(mcp.CodeInvalidRequest, msg))
}

func invalidParams(msg string) *protocolError {
	return newProtocolError(http.StatusOK, mcp.InvalidParams(msg))
}

func headerMismatch(msg string) *protocolError {
	return newProtocolError(http.StatusBadRequest, mcp.HeaderMismatch(msg))
}

func missingCapabilities(required *mcp.ClientCapabilities) *protocolError {
	return newProtocolError(http.StatusBadRequest, mcp.MissingCapabilities(required))
}

func rateLimited(retryAfter time.Duration) *protocolError {
	secs := int64((retryAfter + time.Second - 1) / time.Second)
	if secs < 1 {
		secs = 1
	}
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(secs, 10))
	return &protocolError{
		status: http.StatusTooManyRequests,
		err:    mcp.NewError(CodeRateLimited, "Rate limit exceeded"),
		header: h,
	}
}

// asProtocolError converts an error from application code into what the
// client sees. A *mcp.Error becomes a JSON-RPC error of HTTP 200 (except the
// codes whose status the transport fixes); a *Rejection keeps its status;
// anything else is the fixed internal error.
func asProtocolError(err error) *protocolError {
	var pe *protocolError
	if errors.As(err, &pe) {
		return pe
	}
	var rej *Rejection
	if errors.As(err, &rej) {
		return rej.protocolError()
	}
	var me *mcp.Error
	if errors.As(err, &me) {
		return newProtocolError(statusForCode(me.Code), me)
	}
	return errInternal
}

// statusForCode is the HTTP status for a JSON-RPC error code returned by
// application code.
func statusForCode(code int64) int {
	switch code {
	case mcp.CodeHeaderMismatch, mcp.CodeMissingRequiredClientCapability,
		mcp.CodeUnsupportedProtocolVersion, mcp.CodeParseError, mcp.CodeInvalidRequest:
		return http.StatusBadRequest
	case mcp.CodeMethodNotFound:
		return http.StatusNotFound
	}
	return http.StatusOK
}
