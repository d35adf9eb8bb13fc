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
// configured by the standard OTEL_* environment variables.
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
}

// New validates opts and returns a Tracer.
func New(opts Options) (*Tracer, error) {
	if opts.Provider == nil {
		return nil, errors.New("tracing: Options.Provider is required")
	}
	return &Tracer{opts: opts, tracer: opts.Provider.Tracer(instrumentation)}, nil
}
