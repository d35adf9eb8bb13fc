package server

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// Tracer is told of every admitted request, like Observer, and may trace
// it: StartRequest runs after admission, before the request limiter, and
// the span it returns is ended exactly once, after the response is written
// or abandoned. The context StartRequest returns is the request's from then
// on, so the spans of tool handlers can be children of the request's span.
// The tracing package implements it with OpenTelemetry; the server itself
// depends on no tracing library.
//
// Calls run on the request's goroutine and must return quickly. A Tracer
// must be safe for concurrent use.
type Tracer interface {
	StartRequest(ctx context.Context, r TracedRequest) (context.Context, RequestSpan)
}

// TracedRequest describes an admitted request to a Tracer.
type TracedRequest struct {
	// Info names the request with bounded values.
	Info RequestInfo
	// ProtocolVersion is the revision the request speaks: the one it
	// declared (2026-07-28) or the one its session negotiated (2025-era).
	ProtocolVersion string
	// Incoming is the trace context the client sent, unvalidated: the
	// traceparent and tracestate of the request's params._meta when it
	// has a traceparent there, or else of the HTTP request's headers.
	Incoming task.TraceContext
}

// RequestSpan is the span of one admitted request.
type RequestSpan interface {
	// TraceContext is the span's own trace context. A task the request
	// creates keeps it (task.CreationContext.Trace), so that the worker
	// runs of the task can link to this span. The zero value stores
	// nothing.
	TraceContext() task.TraceContext
	// End ends the span with how the request ended.
	End(f FinishedRequest)
}

// FinishedRequest is how a traced request ended. Tool and Outcome are
// bounded; TaskID, Principal, Tenant and Arguments are not, and may carry
// user data: a Tracer records them only when its application asks for it.
type FinishedRequest struct {
	Outcome Outcome
	// Tool is the tool a tools/call named: a name registered on the
	// endpoint, or "unknown". Empty for other methods.
	Tool string
	// TaskID is the task the request created (a tools/call answered with
	// a task) or named (tasks/*), or empty.
	TaskID string
	// Principal and Tenant are the admitted identity.
	Principal, Tenant string
	// Arguments are a tools/call's arguments as received, or nil.
	Arguments json.RawMessage
}

// nopSpan is the span of a server without a Tracer.
type nopSpan struct{}

func (nopSpan) TraceContext() task.TraceContext { return task.TraceContext{} }
func (nopSpan) End(FinishedRequest)             {}

// startTrace starts the span of an admitted request; without a Tracer it
// returns ctx and a span that does nothing.
func (s *Server) startTrace(ctx context.Context, r *http.Request, info RequestInfo, version string, p *rawParams) (context.Context, RequestSpan) {
	if s.opts.Tracer == nil {
		return ctx, nopSpan{}
	}
	tr := TracedRequest{Info: info, ProtocolVersion: version}
	if p != nil && p.Meta != nil && p.Meta.TraceParent != "" {
		tr.Incoming = task.TraceContext{Traceparent: p.Meta.TraceParent, Tracestate: p.Meta.TraceState}
	} else if r != nil && r.Header != nil {
		tr.Incoming = task.TraceContext{Traceparent: r.Header.Get(headerTraceparent), Tracestate: r.Header.Get(headerTracestate)}
	}
	return s.opts.Tracer.StartRequest(ctx, tr)
}

// W3C trace context headers.
const (
	headerTraceparent = "Traceparent"
	headerTracestate  = "Tracestate"
)

// endTrace ends the span of c with outcome.
func (c *call) endTrace(outcome Outcome) {
	if _, ok := c.span.(nopSpan); ok || c.span == nil {
		return
	}
	f := FinishedRequest{Outcome: outcome, Principal: c.id.Principal, Tenant: c.id.Tenant, TaskID: c.createdTask}
	if p := c.params; p != nil {
		if f.TaskID == "" {
			f.TaskID = p.TaskID
		}
		if c.req.Method == mcp.MethodToolsCall {
			f.Tool, f.Arguments = unknownTool, p.Arguments
			if _, registered := c.ep.live.load().index[p.Name]; registered {
				f.Tool = p.Name
			}
		}
	}
	c.span.End(f)
}

// traceContext is the trace context a task created by c keeps.
func (c *call) traceContext() task.TraceContext {
	if c.span == nil {
		return task.TraceContext{}
	}
	return c.span.TraceContext()
}
