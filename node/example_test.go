package node_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/worker"
)

// ExportIn is the input of invoices.export.
type ExportIn struct {
	Account string `json:"account"`
	Months  int    `json:"months" jsonschema:"1 to 24"`
}

// ExportOut is its result.
type ExportOut struct {
	Account  string `json:"account"`
	Invoices int    `json:"invoices"`
}

func export(ctx context.Context, job *worker.Job, in ExportIn) (ExportOut, error) {
	for i := 1; i <= in.Months; i++ {
		_ = job.ReportProgress(fmt.Sprintf("month %d of %d", i, in.Months), float64(i), float64(in.Months))
	}
	return ExportOut{Account: in.Account, Invoices: 3 * in.Months}, nil
}

// A node with one durable tool: the endpoint at http://127.0.0.1:8080/mcp
// and four in-process workers over a SQLite file. The store is handed
// over once; sessions, the Tasks extension and the ordered shutdown come
// with the node. Run returns when ctx ends or at SIGINT/SIGTERM, after
// the running jobs have drained (a second signal stops at once).
func Example() {
	var tools durable.Set
	durable.Add(&tools, durable.Tool[ExportIn, ExportOut]{
		Tool: &mcp.Tool{Name: "invoices.export", Description: "Export an account's invoices."},
		Run:  export,
	})
	spec, err := node.ParseStoreSpec("sqlite:invoices.db")
	if err != nil {
		log.Fatal(err)
	}
	n, err := node.New(node.Config{
		Name:      "invoices",
		StoreSpec: spec,
		Tools:     &tools,
		Addr:      "127.0.0.1:8080",
		Workers:   4,
		AdminAddr: "127.0.0.1:9090", // /metrics, /healthz, /readyz
		Messages:  os.Stdout,
		Logger:    slog.New(slog.NewTextHandler(os.Stderr, nil)),
	})
	if err != nil {
		log.Fatal(err) // every problem of the configuration, at once
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGHUP)
	defer stop()
	if err := n.Run(ctx); err != nil {
		log.Fatal(err)
	}
}
