package nodecmd_test

import (
	"context"
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
	Account string `json:"account" jsonschema:"the account to export"`
	Months  int    `json:"months" jsonschema:"months to export, 1 to 24"`
}

// ExportOut is its structured result.
type ExportOut struct {
	Account  string `json:"account"`
	Invoices int    `json:"invoices"`
}

func validateExport(in ExportIn) error {
	if in.Account == "" || in.Months < 1 || in.Months > 24 {
		return fmt.Errorf("account must be set and months between 1 and 24")
	}
	return nil
}

// export takes about a second a month, reporting each.
func export(ctx context.Context, job *worker.Job, in ExportIn) (ExportOut, error) {
	for i := 1; i <= in.Months; i++ {
		select {
		case <-time.After(time.Second):
		case <-ctx.Done():
			return ExportOut{}, context.Cause(ctx) // released on shutdown, run again later
		}
		_ = job.ReportProgress(fmt.Sprintf("month %d of %d", i, in.Months), float64(i), float64(in.Months))
	}
	return ExportOut{Account: in.Account, Invoices: 3 * in.Months}, nil
}

// The main of a program with one durable tool. Built as invoices, it has
// the commands of taskwire: `invoices serve` (SQLite invoices.db in the
// working directory, four in-process workers; --admin-addr for /metrics),
// `invoices serve --stdio`, `invoices migrate --store postgres://...`,
// `invoices serve --workers 0 --store postgres://...` on several API
// nodes and `invoices worker --store postgres://...`.
func Example() {
	var tools durable.Set
	durable.Add(&tools, durable.Tool[ExportIn, ExportOut]{
		Tool:     &mcp.Tool{Name: "invoices.export", Description: "Export an account's invoices, month by month."},
		Run:      export,
		Validate: validateExport,
	})
	os.Exit(nodecmd.Main(nodecmd.Program{Name: "invoices", Version: "1.0.0", Tools: &tools}))
}
