package worker_test

import (
	"context"
	"fmt"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/worker"
)

// ReportInput and Report are the demo's report tool types, cut down.
type ReportInput struct {
	Rows int `json:"rows"`
}

type Report struct {
	Rows int `json:"rows"`
}

func generateRow(int) {}

// A handler reports "row 400 of 1000" as it goes; the runtime writes the
// last report at most once a second, under the job's lease, and tasks/get
// returns it as the task's statusMessage.
func ExampleJob_ReportProgress() {
	rt, err := worker.New(worker.Options{Store: openStore()})
	if err != nil {
		panic(err)
	}
	err = worker.AddHandler(rt, "reports.generate", func(ctx context.Context, job *worker.Job, in ReportInput) (Report, error) {
		for row := 1; row <= in.Rows; row++ {
			if err := ctx.Err(); err != nil {
				return Report{}, context.Cause(ctx)
			}
			generateRow(row)
			if row%100 == 0 {
				// Best effort: only an invalid report fails.
				_ = job.ReportProgress(fmt.Sprintf("row %d of %d", row, in.Rows), float64(row), float64(in.Rows))
			}
		}
		return Report{Rows: in.Rows}, nil
	})
	if err != nil {
		panic(err)
	}
}

// openStore stands for opening a durable store such as *sqlite.Store.
func openStore() backend.JobStore { return nil }
