package prometheus_test

import (
	"context"
	"log"

	"github.com/taskwire/taskwire/admin"
	twprom "github.com/taskwire/taskwire/prometheus"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/worker"
)

// Example wires the metrics of a node (server, worker runtime and store)
// to one registry and serves it, with readiness, on a loopback admin
// listener. docs/operations.md shows the same code.
func Example() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: "tasks.db"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()

	reg := twprom.NewRegistry()
	sm, err := twprom.NewServerMetrics(reg)
	if err != nil {
		log.Fatal(err)
	}
	wm, err := twprom.NewWorkerMetrics(reg)
	if err != nil {
		log.Fatal(err)
	}
	if err := twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: []string{"reports.generate"}}); err != nil {
		log.Fatal(err)
	}

	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "app", Version: "1"})
	// ... register tools on ep ...
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep},
		Metrics:   sm,
		Observer:  sm.Observer(),
		// TaskManager: st, and the rest of the application's options.
	})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	if err := twprom.RegisterServerGauges(reg, srv); err != nil {
		log.Fatal(err)
	}
	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher(), Metrics: wm})
	if err != nil {
		log.Fatal(err)
	}
	_ = rt // ... register job handlers, then go rt.Run(ctx) ...

	h, err := admin.New(admin.Options{Metrics: twprom.Handler(reg), Ready: st.Ready})
	if err != nil {
		log.Fatal(err)
	}
	adm, err := admin.Listen("127.0.0.1:9090", h, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer adm.Shutdown(ctx)
	// ... serve srv on the MCP listener until shutdown ...
}
