// Package tracing traces taskwire with OpenTelemetry: a span for every
// admitted MCP request (server.Tracer) and a span for every run of a job
// (worker.Tracer), linked to the span of the request that created the
// job's task, across processes and nodes.
//
// The server and the worker runtime depend on no tracing library: they
// call the small hook interfaces server.Tracer and worker.Tracer, and a
// task keeps the trace context of its creating request's span
// (task.CreationContext.Trace, stored by the durable stores beside the
// origin). This package implements both hooks:
//
//	tr, err := tracing.New(tracing.Options{Provider: tp}) // tp: an OpenTelemetry TracerProvider
//	srv, err := server.New(server.Options{Tracer: tr, ...})
//	rt, err := worker.New(worker.Options{Tracer: tr, ...})
//
// NewProviderFromEnv builds the TracerProvider the taskwire command uses,
// configured by the standard OTEL_* environment variables. Its spans are
// batched by a BatchProcessor, which applications that build their own
// provider can use too: it exports like the SDK's batch span processor but
// without a goroutine hand-off for every span.
//
// Attributes are bounded by default: method, registered tool name,
// outcome, protocol version and era on request spans; job kind, attempt
// and counts on run spans. Task IDs, principals, tenants and tool
// arguments are recorded only when Options asks for them. Errors are
// recorded by category (server.Outcome, worker.FailureCategory), never by
// their text.
package tracing

import (
	"errors"
	"sync"
	"sync/atomic"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Options configure a Tracer.
type Options struct {
	// Provider supplies the OpenTelemetry tracer. Required; a provider
	// whose tracers record nothing (go.opentelemetry.io/otel/trace/noop)
	// makes every span a no-op.
	Provider trace.TracerProvider
	// RecordTaskIDs adds the task ID to request spans of tools/call
	// (the task created) and tasks/* (the task named), and to run spans,
	// as taskwire.task.id.
	RecordTaskIDs bool
	// RecordIdentity adds the admitted principal and tenant to request
	// spans, as enduser.id and taskwire.tenant.
	RecordIdentity bool
	// RecordArguments adds a tools/call's arguments, as received and cut
	// to MaxRecordedArguments bytes, to its request span, as
	// taskwire.tool.arguments.
	RecordArguments bool
}

// MaxRecordedArguments bounds the bytes of the arguments a request span
// records with Options.RecordArguments.
const MaxRecordedArguments = 1024

// instrumentation is the instrumentation scope of every span.
const instrumentation = "github.com/taskwire/taskwire/tracing"

// Tracer implements server.Tracer and worker.Tracer with OpenTelemetry.
// It is safe for concurrent use.
type Tracer struct {
	opts   Options
	tracer trace.Tracer
	prop   propagation.TraceContext
	// The span start options every request or run span shares, made once.
	serverStart           []trace.SpanStartOption
	consumerKind, newRoot trace.SpanStartOption
	spanNames             spanNames
	requestAttrs          sync.Pool // of *requestAttrs
	runAttrs              sync.Pool // of *runAttrs
	finalWrites           finalWrites
}

// New validates opts and returns a Tracer.
func New(opts Options) (*Tracer, error) {
	if opts.Provider == nil {
		return nil, errors.New("tracing: Options.Provider is required")
	}
	t := &Tracer{
		opts:         opts,
		tracer:       opts.Provider.Tracer(instrumentation),
		serverStart:  []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)},
		consumerKind: trace.WithSpanKind(trace.SpanKindConsumer),
		newRoot:      trace.WithNewRoot(),
		finalWrites:  newFinalWrites(),
	}
	t.requestAttrs.New = func() any { return new(requestAttrs) }
	t.runAttrs.New = func() any { return new(runAttrs) }
	return t, nil
}

// maxSpanNames bounds the request span names a Tracer keeps: the server
// reports a method of the protocol or "unknown", a few dozen at most.
const maxSpanNames = 64

// spanNames makes the name of a request span ("mcp " and the method) once
// per method rather than once per request.
type spanNames struct {
	names sync.Map // method → span name
	n     atomic.Int32
}

// name returns the span name of method.
func (s *spanNames) name(method string) string {
	if v, ok := s.names.Load(method); ok {
		return v.(string)
	}
	name := "mcp " + method
	if s.n.Load() < maxSpanNames {
		if _, loaded := s.names.LoadOrStore(method, name); !loaded {
			s.n.Add(1)
		}
	}
	return name
}

// w3cCarrier carries one trace context's W3C headers to the propagator
// without a map.
type w3cCarrier struct{ traceparent, tracestate string }

// Get implements propagation.TextMapCarrier.
func (c *w3cCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.traceparent
	case "tracestate":
		return c.tracestate
	}
	return ""
}

// Set implements propagation.TextMapCarrier.
func (c *w3cCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.traceparent = value
	case "tracestate":
		c.tracestate = value
	}
}

// Keys implements propagation.TextMapCarrier.
func (c *w3cCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }
