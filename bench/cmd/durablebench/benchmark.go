package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
	"text/tabwriter"
	"time"
)

// figure is one reported measurement.
type figure struct {
	Phase string
	What  string
	Rate  float64
	Unit  string
	Note  string
}

// runBenchmark implements "durablebench run".
func runBenchmark(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.needsPG() {
		if err := checkLoopbackURL(cfg.PGURL); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "durablebench: %s, %d CPUs, GOMAXPROCS %d, load average %s, %s\n",
		runtime.Version(), runtime.NumCPU(), runtime.GOMAXPROCS(0), loadAverage(), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(stdout, "taskwire module: %s\n", taskwireSource())
	if cfg.needsPG() {
		if err := pgDescribe(ctx, cfg.pgURL(), stdout); err != nil {
			return err
		}
		if cfg.SyncCommit != "" {
			fmt.Fprintf(stdout, "synchronous_commit=%s on every benchmark connection\n", cfg.SyncCommit)
		}
	}
	var figures []figure
	var failed []string
	for _, phase := range cfg.Phases {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		fmt.Fprintf(stdout, "\n== %s (load average %s)\n", phase, loadAverage())
		var fs []figure
		var err error
		switch phase {
		case "pg-insert":
			fs, err = runInsertPhase(ctx, cfg, "postgres", stdout)
		case "pg-worker":
			fs, err = runWorkerPhase(ctx, cfg, "postgres", stdout)
		case "river":
			fs, err = runRiverPhase(ctx, cfg, stdout)
		case "pg-e2e":
			fs, err = runE2EPhase(ctx, cfg, "postgres", false, stdout, stderr)
		case "pg-gateway-e2e":
			fs, err = runE2EPhase(ctx, cfg, "postgres", true, stdout, stderr)
		case "river-e2e":
			fs, err = runRiverE2EPhase(ctx, cfg, stdout, stderr)
		case "sqlite-insert":
			fs, err = runInsertPhase(ctx, cfg, "sqlite", stdout)
		case "sqlite-worker":
			fs, err = runWorkerPhase(ctx, cfg, "sqlite", stdout)
		case "sqlite-e2e":
			fs, err = runE2EPhase(ctx, cfg, "sqlite", false, stdout, stderr)
		case "sqlite-gateway-e2e":
			fs, err = runE2EPhase(ctx, cfg, "sqlite", true, stdout, stderr)
		case "pg-queues":
			fs, err = runWorkerPhase(ctx, cfg.forQueues(), "postgres", stdout)
		case "sqlite-queues":
			fs, err = runWorkerPhase(ctx, cfg.forQueues(), "sqlite", stdout)
		}
		if err != nil {
			fmt.Fprintf(stdout, "   FAILED: %v\n", err)
			failed = append(failed, phase)
			continue
		}
		figures = append(figures, fs...)
	}
	fmt.Fprintf(stdout, "\nload average at the end: %s\n\n", loadAverage())
	printFigures(stdout, figures)
	printComparison(stdout, figures)
	if len(failed) > 0 {
		return fmt.Errorf("phases failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

// taskwireSource says which taskwire source the binary was built from: the
// replace target of the taskwire module.
func taskwireSource() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, m := range bi.Deps {
		if m.Path == "github.com/taskwire/taskwire" {
			if m.Replace != nil {
				return "replaced by " + m.Replace.Path
			}
			return m.Version
		}
	}
	return "unknown"
}

// printFigures prints the table of every figure.
func printFigures(w io.Writer, figures []figure) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\tmeasurement\trate\tsettings")
	for _, f := range figures {
		fmt.Fprintf(tw, "%s\t%s\t%.0f %s\t%s\n", f.Phase, f.What, f.Rate, f.Unit, f.Note)
	}
	_ = tw.Flush()
}

// printComparison prints the ratios the issue asks about.
func printComparison(w io.Writer, figures []figure) {
	find := func(phase, unit, prefix string) (float64, bool) {
		for _, f := range figures {
			if f.Phase == phase && f.Unit == unit && strings.HasPrefix(f.What, prefix) {
				return f.Rate, true
			}
		}
		return 0, false
	}
	fmt.Fprintln(w)
	tw, okTW := find("pg-worker", "jobs/s", "taskwire postgres: worker")
	rv, okRV := find("river", "jobs/s", "River "+riverVersion+": worker")
	if okTW && okRV {
		verdict := "NOT MET"
		if tw >= rv {
			verdict = "met"
		}
		fmt.Fprintf(w, "taskwire worker throughput / River tuned, same run: %.0f / %.0f jobs/s = %.2fx (target >= 1x: %s)\n", tw, rv, tw/rv, verdict)
	}
	te, okTE := find("pg-e2e", "tasks/s", "taskwire postgres")
	re, okRE := find("river-e2e", "tasks/s", riverE2EWhat)
	if okTE && okRE {
		verdict := "NOT MET"
		if te >= re {
			verdict = "MET"
		}
		fmt.Fprintf(w, "taskwire e2e / net/http+River e2e, same run: %.0f / %.0f tasks/s = %.2fx (target >= 1x: %s)\n", te, re, te/re, verdict)
	}
	ti, okTI := find("pg-worker", "jobs/s", "taskwire postgres: insert + work")
	ri, okRI := find("river", "jobs/s", "River "+riverVersion+": insert + work")
	if okTI && okRI {
		fmt.Fprintf(w, "insert + work, taskwire / River, same run: %.0f / %.0f jobs/s = %.2fx\n", ti, ri, ti/ri)
	}
	for _, kind := range []string{"postgres", "sqlite"} {
		e, okE := find(phaseName(kind, "insert"), "tasks/s", "taskwire")
		r, okR := find(phaseName(kind, "insert"), "rows/s", kind)
		if okE && okR {
			fmt.Fprintf(w, "%s creation rate, store.Enqueue / raw single-row INSERT: %.0f / %.0f = %.0f%%\n", kind, e, r, 100*e/r)
		}
	}
}
