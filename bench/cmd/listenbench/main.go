// Command listenbench measures taskwire's task notifications
// (subscriptions/listen) over loopback HTTP.
//
// Each benchmark runs against a taskwire server with the store/memory manager
// in its own subprocess of this binary (listenbench serve). The latency
// benchmarks share one method: a driver inside the server process completes
// tasks at a steady rate and records the time of each commit, the clients
// record when each notification arrives, and the report gives the
// commit-to-arrival latency (p50, p99, max) over every (task, listener)
// pair and how many notifications arrived.
//
//   - latency: many listening clients, each following its own few tasks;
//   - fanout: many listens of one tenant, all following the same few tasks,
//     completed one after the other (one commit, many notifications);
//   - distinct: many listens, each following its own single task, all of
//     which are completed;
//   - churn: many listens, one task each, while another client creates
//     tasks over HTTP (tools/call) at a steady rate;
//   - rss: the resident memory of the server process before and after it
//     holds many idle listen streams opened from the harness.
//
// Usage:
//
//	listenbench [run flags]           every benchmark (the default command)
//	listenbench run [run flags]       same as above
//	listenbench latency [run flags]   one benchmark only (likewise fanout,
//	                                  distinct, churn and rss)
//	listenbench serve [serve flags]   the server subprocess (used by the harness)
//
// All traffic stays on 127.0.0.1, and every run stops by itself. A run fails
// (exits non-zero) when a listen is refused, a stream breaks, or a
// notification is missing or wrong.
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
			fmt.Fprintf(os.Stderr, "listenbench: %v\n", err)
		}
		os.Exit(exitCode(err))
	}
}

// exitCode maps a command error to a process exit status: 2 for usage
// errors, 1 for everything else.
func exitCode(err error) int {
	var uerr usageError
	if errors.Is(err, flag.ErrHelp) || errors.As(err, &uerr) {
		return 2
	}
	return 1
}

// usageError reports a bad command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// run dispatches to the subcommand named by the first argument.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "run", "latency", "fanout", "distinct", "churn", "rss":
		return runBenchmarks(ctx, cmd, args, stdout, stderr)
	case "serve":
		return runServe(ctx, args, os.Stdin, stdout, stderr)
	case "help":
		fmt.Fprintln(stdout, "usage: listenbench [run|latency|fanout|distinct|churn|rss|serve] [flags]; listenbench <command> -h for flags")
		return nil
	default:
		return usageError{fmt.Sprintf("unknown command %q (want run, latency, fanout, distinct, churn, rss or serve)", cmd)}
	}
}
