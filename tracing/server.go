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
//
// It runs once for every admitted request, so it allocates little: the
// span's attributes, options and the incoming headers' carrier live in the
// requestSpan it returns, and span names and the span kind are made once.
func (t *Tracer) StartRequest(ctx context.Context, r server.TracedRequest) (context.Context, server.RequestSpan) {
	s := &requestSpan{t: t}
	if r.Incoming.Traceparent != "" {
		s.carrier = w3cCarrier{traceparent: r.Incoming.Traceparent, tracestate: r.Incoming.Tracestate}
		ctx = t.prop.Extract(ctx, &s.carrier)
	}
	attrs := append(s.attrs[:0],
		attribute.String(AttrMethod, r.Info.Method),
		attribute.String(AttrEndpoint, r.Info.Endpoint))
	switch v := r.ProtocolVersion; {
	case mcp.IsModernVersion(v):
		attrs = append(attrs, attribute.String(AttrProtocolVersion, v), attrEra2026)
	case mcp.IsLegacyVersion(v):
		attrs = append(attrs, attribute.String(AttrProtocolVersion, v), attrEra2025)
	}
	s.opts = [2]trace.SpanStartOption{t.serverKind, trace.WithAttributes(attrs...)}
	ctx, s.span = t.tracer.Start(ctx, t.spanNames.name(r.Info.Method), s.opts[:]...)
	return ctx, s
}

// The era attributes, made once.
var (
	attrEra2026 = attribute.String(AttrEra, Era2026)
	attrEra2025 = attribute.String(AttrEra, Era2025)
)

// maxRequestAttrs bounds the attributes a request span sets at once: at
// End, outcome, tool, task ID, principal, tenant, arguments and error
// type.
const maxRequestAttrs = 8

// requestSpan is the span of one request, with room for what starting and
// ending it needs, so that neither allocates on its own.
type requestSpan struct {
	t       *Tracer
	span    trace.Span
	carrier w3cCarrier
	opts    [2]trace.SpanStartOption
	// attrs holds the attributes given at start and, once the SDK copied
	// them, those set at End.
	attrs [maxRequestAttrs]attribute.KeyValue
}

// TraceContext implements server.RequestSpan: the span's own context, in
// W3C form.
func (s *requestSpan) TraceContext() task.TraceContext {
	return traceContextOf(s.t.prop, s.span.SpanContext())
}

// End implements server.RequestSpan.
func (s *requestSpan) End(f server.FinishedRequest) {
	attrs := append(s.attrs[:0], attribute.String(AttrOutcome, string(f.Outcome)))
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
	var carrier w3cCarrier
	prop.Inject(trace.ContextWithSpanContext(context.Background(), sc), &carrier)
	return task.TraceContext{Traceparent: carrier.traceparent, Tracestate: carrier.tracestate}
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
