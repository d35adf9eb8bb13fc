package worker

import (
	"context"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/proccpu"
	"github.com/taskwire/taskwire/store/memory"
)

// BenchmarkJobReportProgress measures what the progress path adds to one
// run of a job shorter than the progress interval: the run's lease keeper
// and progress state, the handler's reports, and taking the report still
// pending when the handler returns (which the batched completion carries).
// "none" is a run without a report, the baseline; the store is never
// written, since no report comes due. Besides ns/op it reports the
// process's CPU time per run (cpu-ns/op), which other processes on a loaded
// machine disturb less.
func BenchmarkJobReportProgress(b *testing.B) {
	mem, err := memory.New(memory.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := New(Options{Store: mem.Jobs()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	j := backend.JobRow{Lease: backend.Lease{TaskID: "t", Attempt: 1}, Kind: "k"}
	for _, bc := range []struct {
		name    string
		reports int
	}{{"none", 0}, {"one", 1}, {"ten", 10}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu0, cpuOK := proccpu.Used()
			for b.Loop() {
				claimed := time.Now()
				jctx, cancel := context.WithCancelCause(ctx)
				k := rt.keepLease(ctx, jctx, cancel, j, "k", claimed.Add(rt.opts.Lease))
				jc := newJob(j, rt.validator)
				jc.run = jobRun{rt: rt, base: ctx, jctx: jctx, cancel: cancel, kind: "k"}
				rt.startProgress(jc, k, claimed)
				for i := range bc.reports {
					if err := jc.ReportProgress("row 1 of 1", float64(i), 10); err != nil {
						b.Fatal(err)
					}
				}
				if last := jc.progress.finish(); (last == nil) != (bc.reports == 0) {
					b.Fatalf("pending report %v after %d reports", last, bc.reports)
				}
				k.stop()
				cancel(nil)
			}
			if cpu, ok := proccpu.Used(); ok && cpuOK {
				b.ReportMetric(float64(cpu-cpu0)/float64(b.N), "cpu-ns/op")
			}
		})
	}
}
