package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// Attribute keys of request spans.
const (
	AttrMethod          = "mcp.method.name"
	AttrProtocolVersion = "mcp.protocol.version"
	AttrEra             = "taskwire.mcp.era"
	AttrEndpoint        = "taskwire.endpoint"
	AttrTool            = "gen_ai.tool.name"
	AttrOutcome         = "taskwire.outcome"
	AttrErrorType       = "error.type"
	AttrTaskID          = "taskwire.task.id"
	AttrPrincipal       = "enduser.id"
	AttrTenant          = "taskwire.tenant"
	AttrArguments       = "taskwire.tool.arguments"
)

// Eras, as AttrEra values.
const (
	Era2026 = "2026"
	Era2025 = "2025"
)

// StartRequest implements server.Tracer: a server span named "mcp " and
// the method, the child of a valid incoming trace context (an invalid one
// is ignored and the span starts a trace).
func (t *Tracer) StartRequest(ctx context.Context, r server.TracedRequest) (context.Context, server.RequestSpan) {
	if r.Incoming.Traceparent != "" {
		carrier := propagation.MapCarrier{"traceparent": r.Incoming.Traceparent}
		if r.Incoming.Tracestate != "" {
			carrier["tracestate"] = r.Incoming.Tracestate
		}
		ctx = t.prop.Extract(ctx, carrier)
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrMethod, r.Info.Method),
		attribute.String(AttrEndpoint, r.Info.Endpoint),
	}
	switch v := r.ProtocolVersion; {
	case mcp.IsModernVersion(v):
		attrs = append(attrs, attribute.String(AttrProtocolVersion, v), attribute.String(AttrEra, Era2026))
	case mcp.IsLegacyVersion(v):
		attrs = append(attrs, attribute.String(AttrProtocolVersion, v), attribute.String(AttrEra, Era2025))
	}
	ctx, span := t.tracer.Start(ctx, "mcp "+r.Info.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
	return ctx, &requestSpan{t: t, span: span}
}

// requestSpan is the span of one request.
type requestSpan struct {
	t    *Tracer
	span trace.Span
}

// TraceContext implements server.RequestSpan: the span's own context, in
// W3C form.
func (s *requestSpan) TraceContext() task.TraceContext {
	return traceContextOf(s.t.prop, s.span.SpanContext())
}

// End implements server.RequestSpan.
func (s *requestSpan) End(f server.FinishedRequest) {
	attrs := []attribute.KeyValue{attribute.String(AttrOutcome, string(f.Outcome))}
	if f.Tool != "" {
		attrs = append(attrs, attribute.String(AttrTool, f.Tool))
	}
	o := s.t.opts
	if o.RecordTaskIDs && f.TaskID != "" {
		attrs = append(attrs, attribute.String(AttrTaskID, f.TaskID))
	}
	if o.RecordIdentity {
		attrs = append(attrs, attribute.String(AttrPrincipal, f.Principal), attribute.String(AttrTenant, f.Tenant))
	}
	if o.RecordArguments && f.Arguments != nil {
		attrs = append(attrs, attribute.String(AttrArguments, truncate(string(f.Arguments), MaxRecordedArguments)))
	}
	switch f.Outcome {
	case server.OutcomeInternalError, server.OutcomeTimeout:
		s.span.SetStatus(codes.Error, string(f.Outcome))
		attrs = append(attrs, attribute.String(AttrErrorType, string(f.Outcome)))
	case server.OutcomeProtocolError, server.OutcomeBusy, server.OutcomeRateLimited, server.OutcomeCanceled:
		attrs = append(attrs, attribute.String(AttrErrorType, string(f.Outcome)))
	}
	s.span.SetAttributes(attrs...)
	s.span.End()
}

// traceContextOf returns sc in W3C form, or the zero TraceContext when sc
// is not valid.
func traceContextOf(prop propagation.TraceContext, sc trace.SpanContext) task.TraceContext {
	if !sc.IsValid() {
		return task.TraceContext{}
	}
	carrier := propagation.MapCarrier{}
	prop.Inject(trace.ContextWithSpanContext(context.Background(), sc), carrier)
	return task.TraceContext{Traceparent: carrier["traceparent"], Tracestate: carrier["tracestate"]}
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n]
}
