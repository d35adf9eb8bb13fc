// Command invoices is a complete taskwire node with one durable tool,
// invoices.export: each call is a task that a worker runs from the store,
// reporting its progress month by month, and that any node of a fleet can
// answer for.
//
// It has the commands and flags of taskwire serve, worker and migrate:
//
//	invoices serve                          # SQLite invoices.db here, 4 workers, http://127.0.0.1:8080/mcp
//	invoices serve --admin-addr 127.0.0.1:9090   # and /metrics, /healthz, the console
//	invoices serve --stdio                  # for an MCP host that starts its servers
//	invoices migrate --store postgres://…   # a fleet: migrate once,
//	invoices serve --workers 0 --store postgres://…   # API nodes,
//	invoices worker --store postgres://…    # and workers
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node/nodecmd"
	"github.com/taskwire/taskwire/worker"
)

// ExportIn is the input of invoices.export.
type ExportIn struct {
	Account string `json:"account" jsonschema:"the account whose invoices to export"`
	Months  int    `json:"months" jsonschema:"how many months back, 1 to 24"`
}

// ExportOut is its structured result.
type ExportOut struct {
	Account  string `json:"account"`
	Invoices int    `json:"invoices"`
}

// monthTook is how long one month's export takes.
const monthTook = time.Second

func validate(in ExportIn) error {
	if in.Account == "" || in.Months < 1 || in.Months > 24 {
		return errors.New("account is required and months must be between 1 and 24")
	}
	return nil
}

// export exports one month at a time. On shutdown its context ends: the job
// is released and runs again later, on this node or another.
func export(ctx context.Context, job *worker.Job, in ExportIn) (ExportOut, error) {
	invoices := 0
	for i := 1; i <= in.Months; i++ {
		select {
		case <-time.After(monthTook):
		case <-ctx.Done():
			return ExportOut{}, context.Cause(ctx)
		}
		invoices += 3 // this demo's account has three invoices a month
		if err := job.ReportProgress(fmt.Sprintf("month %d of %d", i, in.Months), float64(i), float64(in.Months)); err != nil {
			return ExportOut{}, err
		}
	}
	return ExportOut{Account: in.Account, Invoices: invoices}, nil
}

func main() {
	var tools durable.Set
	durable.Add(&tools, durable.Tool[ExportIn, ExportOut]{
		Tool:     &mcp.Tool{Name: "invoices.export", Description: "Export an account's invoices, month by month."},
		Run:      export,
		Validate: validate,
	})
	os.Exit(nodecmd.Main(nodecmd.Program{Name: "invoices", Tools: &tools}))
}
