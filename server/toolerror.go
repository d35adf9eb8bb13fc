package server

import (
	"errors"
	"net/http"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// ToolError marks an error whose text is meant for the model: a tool
// handler that returns it (or an error wrapping it) answers with an isError
// tool result carrying the text. Plain tool handlers need it only for
// clarity, since their other errors become such results too; task creation
// handlers (AddTaskTool, and AddRawTaskTool when the call may create a
// task) need it, because any other error they return is taken as a failure
// of the server: the client gets only -32603 "Internal error" and the
// server logs the error's text, with the call's argument strings replaced
// by placeholders.
type ToolError struct {
	// Err is the error whose text the model reads.
	Err error
}

// NewToolError wraps err as a *ToolError; nil stays nil.
func NewToolError(err error) error {
	if err == nil {
		return nil
	}
	return &ToolError{Err: err}
}

// Error returns the text the model reads.
func (e *ToolError) Error() string { return e.Err.Error() }

// Unwrap returns Err.
func (e *ToolError) Unwrap() error { return e.Err }

// creationErrorResult maps the error of a handler that was offered a task
// creation context: protocol-level errors pass through as in
// toolErrorResult, a *ToolError becomes an isError result, and anything
// else (a store failure, a bug) is logged, scrubbed of the call's
// arguments, and answered with the fixed internal error. A store outage
// gets no 503 here: the handler ran, its task may have been committed, and
// a 503 tells the client that nothing was stored.
func (c *call) creationErrorResult(t *toolEntry, err error) (any, error) {
	var (
		te  *ToolError
		me  *mcp.Error
		ire *InputRequiredError
		pe  *protocolError
	)
	switch {
	case errors.Is(err, errContract):
		return nil, errInternal
	case errors.As(err, &te):
		return toolErrorResult(te)
	case errors.As(err, &me), errors.As(err, &ire), errors.As(err, &pe):
		return nil, err
	}
	c.srv.logger.Error("task creation failed", "endpoint", c.ep.opts.Name, "tool", t.tool.Name,
		"err", c.redactErr(err))
	return nil, errInternal
}

// credentials returns the secrets of a request's headers that an admission
// controller's error might repeat: the Authorization value and its token.
func credentials(h http.Header) []string {
	var out []string
	for _, v := range h.Values("Authorization") {
		out = append(out, v)
		if _, tok, ok := strings.Cut(v, " "); ok {
			out = append(out, strings.TrimSpace(tok))
		}
	}
	return out
}
