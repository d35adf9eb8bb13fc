package tracing_test

import (
	"context"
	"log"
	"time"

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
