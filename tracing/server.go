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
// span gets all its attributes at End, in one call, from a buffer the
// Tracer pools (a sampler sees the span's name, which carries the method,
// and its kind); the incoming headers' carrier lives in the requestSpan it
// returns; span names and the start options are made once.
func (t *Tracer) StartRequest(ctx context.Context, r server.TracedRequest) (context.Context, server.RequestSpan) {
	s := &requestSpan{t: t, method: r.Info.Method, endpoint: r.Info.Endpoint, version: r.ProtocolVersion}
	if r.Incoming.Traceparent != "" {
		s.carrier = w3cCarrier{traceparent: r.Incoming.Traceparent, tracestate: r.Incoming.Tracestate}
		ctx = t.prop.Extract(ctx, &s.carrier)
	}
	ctx, s.span = t.tracer.Start(ctx, t.spanNames.name(r.Info.Method), t.serverStart...)
	return ctx, s
}

// The era attributes, made once.
var (
	attrEra2026 = attribute.String(AttrEra, Era2026)
	attrEra2025 = attribute.String(AttrEra, Era2025)
)

// maxRequestAttrs bounds the attributes a request span gets: method,
// endpoint, protocol version, era, outcome, tool, task ID, principal,
// tenant, arguments and error type.
const maxRequestAttrs = 11

// requestAttrs holds a request span's attributes while End hands them to
// the span, which copies them; the Tracer pools them.
type requestAttrs [maxRequestAttrs]attribute.KeyValue

// requestSpan is the span of one request, with what ending it needs.
type requestSpan struct {
	t                         *Tracer
	span                      trace.Span
	carrier                   w3cCarrier
	method, endpoint, version string
}

// TraceContext implements server.RequestSpan: the span's own context, in
// W3C form.
func (s *requestSpan) TraceContext() task.TraceContext {
	return traceContextOf(s.t.prop, s.span.SpanContext())
}

// End implements server.RequestSpan.
func (s *requestSpan) End(f server.FinishedRequest) {
	buf := s.t.requestAttrs.Get().(*requestAttrs)
	attrs := append(buf[:0],
		attribute.String(AttrMethod, s.method),
		attribute.String(AttrEndpoint, s.endpoint))
	switch v := s.version; {
	case mcp.IsModernVersion(v):
		attrs = append(attrs, attribute.String(AttrProtocolVersion, v), attrEra2026)
	case mcp.IsLegacyVersion(v):
		attrs = append(attrs, attribute.String(AttrProtocolVersion, v), attrEra2025)
	}
	attrs = append(attrs, attribute.String(AttrOutcome, string(f.Outcome)))
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
	clear(attrs) // the rest of buf is still zero
	s.t.requestAttrs.Put(buf)
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
