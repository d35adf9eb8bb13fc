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
// worker throughputs.
func runWorkerPhase(ctx context.Context, cfg config, kind string, out io.Writer) ([]figure, error) {
	if !cfg.Progress {
		return runWorkerRun(ctx, cfg, kind, false, out)
	}
	var figs []figure
	var rates [2][]float64 // without, with
	order := []bool{false, true, true, false}
	total := len(order) * cfg.ProgressRounds
	for i := range total {
		progress := order[i%len(order)]
		what := "no-op handler"
		if progress {
			what = "one progress report per job"
		}
		fmt.Fprintf(out, "   -- run %d of %d: %s\n", i+1, total, what)
		fs, err := runWorkerRun(ctx, cfg, kind, progress, out)
		if err != nil {
			return nil, err
		}
		// The second figure of a run is its worker throughput.
		k := 0
		if progress {
			k = 1
		}
		rates[k] = append(rates[k], fs[1].Rate)
		if i < 2 {
			figs = append(figs, fs...)
		}
	}
	plain, with := median(rates[0]), median(rates[1])
	fmt.Fprintf(out, "   progress: median worker throughput %.0f jobs/s with a report per job (runs: %s), %.0f without "+
		"(runs: %s): %.1f %%\n", with, fmtRates(rates[1]), plain, fmtRates(rates[0]), 100*with/plain)
	return append(figs, figure{Phase: phaseName(kind, "worker"), What: "taskwire " + kind +
		": median throughput with a progress report per job, relative to without",
		Rate: 100 * with / plain, Unit: "%", Note: fmt.Sprintf("%d runs each", len(rates[0]))}), nil
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

// progressCounts returns how many tasks hold a progress count.
func (t *storeTarget) progressCounts(ctx context.Context) (int, error) {
	var n int
	switch t.Kind {
	case "postgres":
		conn, err := pgx.Connect(ctx, t.cfg.pgURL())
		if err != nil {
			return 0, err
		}
		defer conn.Close(ctx)
		err = conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{t.Where}.Sanitize()+
			".tasks WHERE progress IS NOT NULL").Scan(&n)
		return n, err
	default:
		db, err := sql.Open("sqlite", "file:"+t.Where+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			return 0, err
		}
		defer db.Close()
		err = db.QueryRowContext(ctx, "SELECT count(*) FROM tasks WHERE progress IS NOT NULL").Scan(&n)
		return n, err
	}
}
