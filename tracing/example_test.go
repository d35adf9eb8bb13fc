package tracing_test

import (
	"context"
	"fmt"
	"log"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/tracing"
	"github.com/taskwire/taskwire/worker"
)

// Example traces a node (server and worker runtime) with the provider the
// OTEL_* environment variables configure, and flushes the spans on the
// way out.
func Example() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: "tasks.db"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	tp, err := tracing.NewProviderFromEnv(ctx)
	if err != nil {
		log.Fatal(err)
	}
	var (
		srvTracer server.Tracer
		rtTracer  worker.Tracer
	)
	if tp != nil { // nil: OTEL_EXPORTER_OTLP_ENDPOINT is not set
		defer func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			tp.Shutdown(ctx) // flushes the spans still batched
		}()
		tr, err := tracing.New(tracing.Options{Provider: tp})
		if err != nil {
			log.Fatal(err)
		}
		srvTracer, rtTracer = tr, tr
	}

	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "app", Version: "1"})
	// ... register tools on ep ...
	srv, err := server.New(server.Options{
		Endpoints:   []*server.Endpoint{ep},
		TaskManager: st,
		Tracer:      srvTracer,
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher(), Tracer: rtTracer})
	if err != nil {
		log.Fatal(err)
	}
	_ = rt // ... register job handlers, then go rt.Run(ctx) ...
}

// ExampleNewBatchProcessor batches the spans of a provider the
// application builds itself, with a larger queue than the default.
func ExampleNewBatchProcessor() {
	exp := &countingExporter{} // in production, for example otlptracehttp.New(ctx)
	bp, err := tracing.NewBatchProcessor(exp, tracing.BatchOptions{MaxQueueSize: 8192})
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(bp))
	_, span := tp.Tracer("example").Start(context.Background(), "work")
	span.End()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tp.Shutdown(ctx); err != nil { // exports the queue, then shuts exp down
		log.Fatal(err)
	}
	fmt.Println("exported:", exp.n.Load(), "dropped:", bp.Dropped())
	// Output: exported: 1 dropped: 0
}
