package durable_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"net/http"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/worker"
)

// The business logic: the tool's input and output, and the handler.

type ReportInput struct {
	AccountID      string `json:"accountId"`
	IdempotencyKey string `json:"idempotencyKey,omitempty"`
}

type Report struct {
	AccountID string `json:"accountId"`
	Rows      int    `json:"rows"`
}

func generateReport(ctx context.Context, job *worker.Job, in ReportInput) (Report, error) {
	return Report{AccountID: in.AccountID, Rows: 42}, nil
}

// reportTools is the one declaration an application's API nodes and workers
// share.
func reportTools() *durable.Set {
	var s durable.Set
	durable.Add(&s, durable.Tool[ReportInput, Report]{
		Tool:        &mcp.Tool{Name: "reports.generate", Description: "Generate an account report."},
		Run:         generateReport,
		TaskOptions: durable.TaskOptions{IdempotencyKey: "idempotencyKey"},
	})
	return &s
}

// A durable tool declared once with Add, served on an API node with Serve
// and run on a worker with Work; here one process does both over one
// SQLite store.
func Example() {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: "tasks.db"})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	tools := reportTools()

	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "reports", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	if err := tools.Serve(ep, st); err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: st,
		Admission: server.DevAdmission()})
	if err != nil {
		log.Fatal(err)
	}

	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher()})
	if err != nil {
		log.Fatal(err)
	}
	if err := tools.Work(rt); err != nil {
		log.Fatal(err)
	}
	go func() { log.Fatal(rt.Run(ctx)) }()
	log.Fatal(http.ListenAndServe("127.0.0.1:8080", srv))
}

// Check names every problem of a set at once: here a handler whose name
// has a typo, which would otherwise leave every task of the tool working
// forever.
func ExampleSet_Check() {
	var s durable.Set
	durable.Declare(&s, durable.ToolDecl[ReportInput, Report]{
		Tool:        &mcp.Tool{Name: "reports.generate"},
		TaskOptions: durable.TaskOptions{IdempotencyKey: "idempotencyKey"},
	})
	durable.Implement(&s, "report.generate", generateReport)
	fmt.Println(s.Check())
	// Output:
	// durable: tool "report.generate": has a handler but no declaration
	// durable: tool "reports.generate": declared but has no handler
}

// A split deployment: the declarations live in a package that both
// binaries import; only the worker binary links the handlers.
func ExampleImplement() {
	declare := func(s *durable.Set) {
		durable.Declare(s, durable.ToolDecl[ReportInput, Report]{
			Tool:        &mcp.Tool{Name: "reports.generate"},
			TaskOptions: durable.TaskOptions{IdempotencyKey: "idempotencyKey"},
		})
	}

	var api durable.Set // the API binary: declarations only
	declare(&api)
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "reports", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: sqlite.MemoryPath, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		log.Fatal(err)
	}
	defer st.Close()
	fmt.Println("serve:", api.Serve(ep, st))

	var work durable.Set // the worker binary: declarations and handlers
	declare(&work)
	durable.Implement(&work, "reports.generate", generateReport)
	fmt.Println("check:", work.Check())
	// Output:
	// serve: <nil>
	// check: <nil>
}
