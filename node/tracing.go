package node

import (
	"context"
	"fmt"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/tracing"
	"github.com/taskwire/taskwire/worker"
)

// traceFlushTimeout bounds the flush of the spans still batched when a
// node stops.
const traceFlushTimeout = 5 * time.Second

// nodeTracing is a node's tracing, configured by the OTEL_* environment
// variables (tracing.NewProviderFromEnv): nil, and no cost, when they ask
// for no export.
type nodeTracing struct {
	provider *sdktrace.TracerProvider
	tracer   *tracing.Tracer
}

// newNodeTracing returns the node's tracing, or nil when the environment
// configures none.
func newNodeTracing(ctx context.Context) (*nodeTracing, error) {
	tp, err := tracing.NewProviderFromEnv(ctx)
	if err != nil || tp == nil {
		return nil, err
	}
	tr, err := tracing.New(tracing.Options{Provider: tp})
	if err != nil {
		tp.Shutdown(ctx)
		return nil, err
	}
	return &nodeTracing{provider: tp, tracer: tr}, nil
}

// serverTracer returns the server's Tracer, or nil for none.
func (t *nodeTracing) serverTracer() server.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// workerTracer returns the runtime's Tracer, or nil for none.
func (t *nodeTracing) workerTracer() worker.Tracer {
	if t == nil {
		return nil
	}
	return t.tracer
}

// shutdown flushes the batched spans within traceFlushTimeout and stops
// the exporter.
func (t *nodeTracing) shutdown() error {
	if t == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), traceFlushTimeout)
	defer cancel()
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("flushing traces: %w", err)
	}
	return nil
}
