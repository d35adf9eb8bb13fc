// Command soak runs the attacks of a hostile network against a real
// `taskwire serve` process and checks that the node stays healthy.
//
// It builds cmd/taskwire, starts `taskwire serve` on a loopback port with a
// SQLite store in a temporary directory and a descriptor limit of -nofile,
// and runs for -duration, all at once:
//
//   - idle: -waves waves of -idle connections that announce a 10 MiB body
//     and send a few bytes of it;
//   - trickle: -trickle connections (more than -nofile) that send a body at
//     one byte a second, reconnecting when the server cuts them off;
//   - flood: one client creating reports.generate tasks (seconds 0) as fast
//     as it can;
//   - listens: one client with nine Bearer names opening as many
//     subscriptions/listen streams as it can, at most -listens;
//   - ordinary: one client calling text.stats inline, a call every 10 ms,
//     whose latencies are measured.
//
// Every client connects from a loopback address of its own, as over a
// network, since the server bounds connections, sessions and listens per
// client address: the idle and trickle connections each from one of many
// addresses (127.1.x.y and 127.2.x.y), so that together they still hold
// the node's connection slots; the listen hog's nine names share one
// address, and with it one caller's listens.
//
// At the end, with the attacks still running, a new client (a Bearer name of
// its own) calls a tool, creates a task and opens a listen stream. The soak
// prints each check as PASS or FAIL with its figures and exits with status 1
// when one fails:
//
//	rss        the server's VmRSS stays under -max-rss-mb
//	p99        ordinary calls answer with p99 under -max-p99, without errors
//	idle       every idle connection is answered or closed by the server
//	trickle    trickled bodies are cut off by the server
//	flood      the creation flood is answered 429 with Retry-After
//	listens    the listen hog is refused (429) before -listens streams
//	newcomer   the new client is served: inline call, task, listen
//
// Everything stays on loopback; the server is killed when the soak ends.
//
//	go run ./cmd/soak                      # from the bench module, about 70 s
//	go run ./cmd/soak -duration 20s -trickle 300 -idle 100
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
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
}

// config holds the flags.
type config struct {
	Duration    time.Duration
	NoFile      int
	Trickle     int
	Idle        int
	Waves       int
	Listens     int
	BodyTimeout time.Duration
	MaxRSSMB    int
	MaxP99      time.Duration
	Binary      string
	Verbose     bool
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("soak", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.DurationVar(&c.Duration, "duration", 60*time.Second, "how long the attacks run (5s to 10m)")
	fs.IntVar(&c.NoFile, "nofile", 1024, "descriptor limit of the server process")
	fs.IntVar(&c.Trickle, "trickle", 1030, "connections trickling a body at 1 byte/s")
	fs.IntVar(&c.Idle, "idle", 200, "connections of each idle wave announcing 10 MiB")
	fs.IntVar(&c.Waves, "waves", 3, "idle waves")
	fs.IntVar(&c.Listens, "listens", 2000, "most listen streams the listen hog opens")
	fs.DurationVar(&c.BodyTimeout, "body-timeout", 10*time.Second, "the server's --body-timeout")
	fs.IntVar(&c.MaxRSSMB, "max-rss-mb", 256, "the server's VmRSS must stay under this many MB")
	fs.DurationVar(&c.MaxP99, "max-p99", 50*time.Millisecond, "ordinary calls' p99 must stay under this")
	fs.StringVar(&c.Binary, "taskwire", "", "taskwire binary to run (default: build cmd/taskwire)")
	fs.BoolVar(&c.Verbose, "v", false, "print the server's log")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	switch {
	case fs.NArg() > 0:
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	case c.Duration < 5*time.Second || c.Duration > 10*time.Minute:
		return c, errors.New("-duration must be between 5s and 10m")
	case c.NoFile < 256 || c.Trickle < 0 || c.Idle < 0 || c.Waves < 0 || c.Listens < 0:
		return c, errors.New("-nofile must be at least 256, and counts must not be negative")
	case c.Trickle+c.Idle+c.Listens > 20000:
		return c, errors.New("at most 20000 attacking connections")
	case c.BodyTimeout <= 0 || c.MaxRSSMB <= 0 || c.MaxP99 <= 0:
		return c, errors.New("-body-timeout, -max-rss-mb and -max-p99 must be positive")
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	raiseNoFile()
	dir, err := os.MkdirTemp("", "taskwire-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := cfg.Binary
	if bin == "" {
		if bin, err = buildTaskwire(ctx, dir); err != nil {
			return err
		}
	}
	srv, err := startServer(ctx, cfg, bin, dir, stderr)
	if err != nil {
		return err
	}
	defer srv.Close()
	fmt.Fprintf(stdout, "soak: taskwire serve pid %d at %s, descriptor limit %d, body timeout %v; attacking for %v\n",
		srv.cmd.Process.Pid, srv.addr, cfg.NoFile, cfg.BodyTimeout, cfg.Duration)

	res := soak(ctx, cfg, srv)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if srv.exited() {
		res.checks = append(res.checks, check{"server", false, "the server process exited during the soak"})
	}
	failed := 0
	for _, c := range res.checks {
		verdict := "PASS"
		if !c.ok {
			verdict = "FAIL"
			failed++
		}
		fmt.Fprintf(stdout, "%s  %-9s %s\n", verdict, c.name, c.detail)
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d checks failed", failed, len(res.checks))
	}
	fmt.Fprintf(stdout, "soak: all %d checks passed\n", len(res.checks))
	return nil
}

// check is one verdict of the soak.
type check struct {
	name   string
	ok     bool
	detail string
}
