package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// runWorkerPhase is pg-worker or sqlite-worker. With -progress it runs
// on fresh stores of the same kind, in the same process, in the order
// without, with, with, without a progress report in every job, repeated
// -progress-rounds times (so that drift of the machine's load and the order
// of the runs weigh on both sides alike), and compares the medians of the
// worker throughputs and of this process's CPU time per job. The CPU time
// is the steadier figure on a loaded machine: it does not count the time
// the process waits for a core.
func runWorkerPhase(ctx context.Context, cfg config, kind string, out io.Writer) ([]figure, error) {
	if !cfg.Progress && !cfg.Checkpoint && !cfg.queuePhase {
		r, err := runWorkerRun(ctx, cfg, kind, false, out)
		return r.figs, err
	}
	var figs []figure
	var rates, cpus [2][]float64 // without, with; jobs/s and µs per job
	order := []bool{false, true, true, false}
	total := len(order) * cfg.ProgressRounds
	for i := range total {
		progress := order[i%len(order)]
		what := "no-op handler"
		switch {
		case cfg.queuePhase && progress:
			what = fmtQueues(cfg.Queues, cfg.Concurrency)
		case cfg.queuePhase:
			what = fmtQueues(1, cfg.Concurrency)
		case progress:
			what = "one " + cfg.variant() + " per job"
		}
		fmt.Fprintf(out, "   -- run %d of %d: %s\n", i+1, total, what)
		r, err := runWorkerRun(ctx, cfg, kind, progress, out)
		if err != nil {
			return nil, err
		}
		k := 0
		if progress {
			k = 1
		}
		rates[k] = append(rates[k], r.rate)
		cpus[k] = append(cpus[k], float64(r.cpuPerJob)/float64(time.Microsecond))
		if i < 2 {
			figs = append(figs, r.figs...)
		}
	}
	v := compareProgress(rates, cpus)
	if cfg.Checkpoint {
		v.variant = cfg.variant()
	}
	runs := fmt.Sprintf("%d runs each", len(rates[0]))
	if cfg.queuePhase {
		v.with, v.without = fmt.Sprintf("with the jobs in %d queues", cfg.Queues), "in one queue"
		fmt.Fprintf(out, "   queues: %s\n", v)
		phase := cfg.workerPhase(kind)
		return append(figs,
			figure{Phase: phase, What: fmt.Sprintf("taskwire %s: median worker throughput with the jobs in %d queues, relative to one queue",
				kind, cfg.Queues), Rate: v.rate, Unit: "%", Note: runs},
			figure{Phase: phase, What: fmt.Sprintf("taskwire %s: median CPU time of this process per job with the jobs in %d queues, "+
				"relative to one queue", kind, cfg.Queues), Rate: v.cpu, Unit: "%", Note: runs}), nil
	}
	fmt.Fprintf(out, "   %s: %s\n", cfg.variant(), v)
	return append(figs,
		figure{Phase: phaseName(kind, "worker"), What: "taskwire " + kind +
			": median throughput with a " + cfg.variant() + " per job, relative to without", Rate: v.rate, Unit: "%", Note: runs},
		figure{Phase: phaseName(kind, "worker"), What: "taskwire " + kind +
			": median CPU time of this process per job with a " + cfg.variant() + " per job, relative to without",
			Rate: v.cpu, Unit: "%", Note: runs}), nil
}

// progressVerdict compares the runs with a progress report per job to the
// runs without.
type progressVerdict struct {
	rates, cpus [2][]float64 // without, with: jobs/s and µs of CPU per job, per run
	rate, cpu   float64      // medians with, relative to without, in %
	variant     string       // what the runs with do per job; "" a progress report
	// with and without, when set, describe the two sides instead of
	// variant ("with the jobs in 4 queues", "in one queue").
	with, without string
}

// variant names what the handler of the runs with does in every job.
func (c config) variant() string {
	if c.Checkpoint && c.CheckpointLater {
		return "deferred checkpoint"
	}
	if c.Checkpoint {
		return "checkpoint"
	}
	return "progress report"
}

func compareProgress(rates, cpus [2][]float64) progressVerdict {
	return progressVerdict{rates: rates, cpus: cpus,
		rate: 100 * median(rates[1]) / median(rates[0]), cpu: 100 * median(cpus[1]) / median(cpus[0])}
}

// progressTarget is the goal: with progress within 10 % of without.
const progressTarget = 10.0

// String renders the medians, the runs and the verdict on both figures.
func (v progressVerdict) String() string {
	met := func(ok bool) string {
		if ok {
			return "met"
		}
		return "missed"
	}
	what := v.variant
	if what == "" {
		what = "report"
	}
	with, without := "with a "+what+" per job", "without"
	if v.with != "" {
		with, without = v.with, v.without
	}
	return fmt.Sprintf("median worker throughput %.0f jobs/s "+with+" (runs: %s), %.0f "+without+" (runs: %s): %.1f %%; "+
		"median CPU of this process per job %.1f µs with (runs: %s), %.1f µs without (runs: %s): %.1f %%; "+
		"within %.0f %%: by jobs/s %s, by CPU per job %s",
		median(v.rates[1]), fmtRates(v.rates[1]), median(v.rates[0]), fmtRates(v.rates[0]), v.rate,
		median(v.cpus[1]), fmtFloats(v.cpus[1]), median(v.cpus[0]), fmtFloats(v.cpus[0]), v.cpu,
		progressTarget, met(v.rate >= 100-progressTarget), met(v.cpu <= 100+progressTarget))
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// fmtFloats renders xs with one decimal.
func fmtFloats(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.1f", x)
	}
	return strings.Join(parts, ", ")
}

func fmtRates(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprintf("%.0f", x)
	}
	return strings.Join(parts, ", ")
}

// ReportProgress counts the runtime's progress writes.
func (s *instrumented) ReportProgress(ctx context.Context, l backend.Lease, message string, p *task.Progress) error {
	t0 := time.Now()
	err := s.jobStore.ReportProgress(ctx, l, message, p)
	s.stats.progress.add(1, time.Since(t0))
	return err
}

// SaveCheckpoints counts the runtime's checkpoint writes.
func (s *instrumented) SaveCheckpoints(ctx context.Context, items []backend.CheckpointWrite) ([]bool, error) {
	t0 := time.Now()
	lost, err := s.jobStore.SaveCheckpoints(ctx, items)
	s.stats.checkpoints.add(len(items), time.Since(t0))
	return lost, err
}

// checkpointCounts returns how many jobs hold a checkpoint.
func (t *storeTarget) checkpointCounts(ctx context.Context) (int, error) {
	return t.countRows(ctx, "jobs", "checkpoint IS NOT NULL")
}

// progressCounts returns how many tasks hold a progress count.
func (t *storeTarget) progressCounts(ctx context.Context) (int, error) {
	return t.countRows(ctx, "tasks", "progress IS NOT NULL")
}

// countRows counts the rows of table (in the phase's schema or file) where
// cond holds; table and cond are the benchmark's own constants.
func (t *storeTarget) countRows(ctx context.Context, table, cond string) (int, error) {
	var n int
	switch t.Kind {
	case "postgres":
		conn, err := pgx.Connect(ctx, t.cfg.pgURL())
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		err = conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{t.Where}.Sanitize()+"."+table+" WHERE "+cond).Scan(&n)
		return n, err
	default:
		db, err := sql.Open("sqlite", "file:"+t.Where+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			return 0, err
		}
		defer db.Close()
		err = db.QueryRowContext(ctx, "SELECT count(*) FROM "+table+" WHERE "+cond).Scan(&n)
		return n, err
	}
}
