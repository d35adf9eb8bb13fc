// Command durablebench measures taskwire's durable task path on PostgreSQL
// and SQLite, side by side with River on the same PostgreSQL database.
//
// Phases (select them with -phases; by default all run, in this order):
//
//	pg-insert      creation rate: store.Enqueue, one task per transaction, from
//	               G goroutines, against a raw single-row pgx INSERT of a row of
//	               the same size into a scratch table, same pool and goroutines
//	pg-worker      worker throughput: N tasks pre-created with store.Enqueue,
//	               then a worker.Runtime with a no-op handler works them all
//	river          River, tuned for throughput: the same N no-op jobs inserted
//	               with InsertMany, then worked by a client with many workers
//	pg-e2e         end to end over HTTP: a server (task-required tool that
//	               enqueues) and a worker runtime in one subprocess, K clients in
//	               this process doing tools/call, then tasks/get until completed
//	river-e2e      the same load against the peer built without taskwire: a
//	               net/http JSON service that inserts a River job with InsertTx
//	               and reads its state back with JobGet, and a River client
//	               working the jobs, in one subprocess
//	sqlite-insert  as pg-insert on store/sqlite (temporary file, WAL,
//	               synchronous=NORMAL) against a raw single-row INSERT through
//	               the same driver
//	sqlite-worker  as pg-worker on store/sqlite
//	sqlite-e2e     as pg-e2e on store/sqlite
//	pg-queues      claim throughput across queues: pg-worker four times side by
//	               side (without, with, with, without), with the jobs in one
//	               queue and spread over -queues queues (one kind each) that one
//	               runtime serves with an even share of -concurrency
//	sqlite-queues  as pg-queues on store/sqlite
//
// Every PostgreSQL phase works in a schema of its own (twbench_<random> or
// riverbench_<random>) that it drops when it ends; SQLite phases work in a
// temporary directory they remove. Everything runs on loopback and every
// phase is bounded by -phase-timeout.
//
// Usage:
//
//	durablebench [run] [flags]    run the benchmark (the default command)
//	durablebench compare [-base ref] [-head ref] [-rounds R] [-- run flags]
//	                              build durablebench at a base git ref (main by
//	                              default) and at the head (the working tree or
//	                              a ref), run both alternately R times, and print
//	                              each measure's median and range on both sides
//	                              and the ratio head/base
//	durablebench e2e-serve ...    serve the e2e phase's server and worker (started by run)
//	durablebench river-e2e-serve ...
//	                              serve river-e2e's service and River client (started by run)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintf(os.Stderr, "durablebench: %v\n", err)
		}
		os.Exit(exitCode(err))
	}
}

// usageError reports a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// exitCode maps a command error to a process exit status: 2 for usage
// errors, 1 for everything else.
func exitCode(err error) int {
	var uerr usageError
	if errors.Is(err, flag.ErrHelp) || errors.As(err, &uerr) {
		return 2
	}
	return 1
}

// run dispatches to the subcommand named by the first argument.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return runBenchmark(ctx, args, stdout, stderr)
	case "compare":
		return runCompare(ctx, args, stdout, stderr)
	case "e2e-serve":
		return runE2EServe(ctx, args, stdout, stderr)
	case "river-e2e-serve":
		return runRiverE2EServe(ctx, args, stdout, stderr)
	case "help":
		fmt.Fprintln(stdout, "usage: durablebench [run|compare|e2e-serve|river-e2e-serve] [flags]; durablebench <command> -h for flags")
		return nil
	default:
		return usageError{fmt.Sprintf("unknown command %q (want run, compare, e2e-serve or river-e2e-serve)", cmd)}
	}
}
