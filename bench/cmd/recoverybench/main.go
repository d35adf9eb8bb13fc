// Command recoverybench measures how long the job of a SIGKILLed worker
// process waits before another run of it starts, with the worker runtime's
// default lease (30 s) and rescue settings, on SQLite and PostgreSQL.
//
// One task runs a handler that reports "run <attempt> pid <pid>" as soon as
// it starts and then runs until it is stopped. Each round kills the worker
// process running it (SIGKILL) and measures the time from the kill to the
// first report of the next run, as tasks/get would read it:
//
//   - sqlite: the killed worker is started again on the same database file
//     (a node that restarts), so the time includes the process's start;
//   - postgres: a second worker is already running when the first is
//     killed, and takes the job over; a new standby is started for the
//     next round.
//
// The report gives the median and the maximum over -kills rounds. Worker
// progress is written every 10 ms (Options.ProgressInterval) so that the
// report of the next run is not held back by the default interval of 1 s.
//
// Usage:
//
//	recoverybench [-stores sqlite,postgres] [-kills 10] [-pg-url URL]
//	recoverybench worker -store SPEC   a worker process (started by the harness)
//
// Everything runs on loopback; the PostgreSQL store works in a schema of
// its own, dropped at the end.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

func main() {
	var err error
	if len(os.Args) > 1 && os.Args[1] == "worker" {
		err = runWorker(os.Args[2:])
	} else {
		err = runBench(os.Args[1:], os.Stdout)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "recoverybench:", err)
		os.Exit(1)
	}
}

// openStore opens the store a spec names: "sqlite:PATH" or
// "postgres:SCHEMA:URL".
func openStore(ctx context.Context, spec string) (backend.Store, error) {
	quiet := slog.New(slog.DiscardHandler)
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "sqlite":
		return sqlite.Open(ctx, sqlite.Options{Path: rest, Logger: quiet})
	case "postgres":
		schema, url, _ := strings.Cut(rest, ":")
		return postgres.Open(ctx, postgres.Options{URL: url, Schema: schema, Logger: quiet})
	}
	return nil, fmt.Errorf("unknown store spec %q", kind)
}

// runWorker is a worker process: the runtime's defaults, one handler that
// reports its run and pid and then waits for its context to end.
func runWorker(args []string) error {
	fs := flag.NewFlagSet("recoverybench worker", flag.ContinueOnError)
	spec := fs.String("store", "", "store spec")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx := context.Background()
	st, err := openStore(ctx, *spec)
	if err != nil {
		return err
	}
	defer st.Close()
	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher(), ProgressInterval: 10 * time.Millisecond})
	if err != nil {
		return err
	}
	pid := os.Getpid()
	err = worker.AddHandler(rt, "spin", func(ctx context.Context, job *worker.Job, in struct{}) (struct{}, error) {
		if err := job.ReportStatus(fmt.Sprintf("run %d pid %d", job.Attempt(), pid)); err != nil {
			return struct{}{}, err
		}
		<-ctx.Done()
		return struct{}{}, ctx.Err()
	})
	if err != nil {
		return err
	}
	fmt.Println("ready")
	return rt.Run(ctx)
}

// workerProc is a running worker process.
type workerProc struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startWorker starts a worker process on spec and waits for it to be ready.
func startWorker(spec string) (*workerProc, error) {
	cmd := exec.Command(os.Args[0], "worker", "-store", spec)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	w := &workerProc{cmd: cmd, done: make(chan struct{})}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		ok := sc.Scan() && sc.Text() == "ready"
		ready <- ok
		_, _ = io.Copy(io.Discard, out)
	}()
	go func() {
		_ = cmd.Wait()
		close(w.done)
	}()
	select {
	case ok := <-ready:
		if !ok {
			w.kill()
			return nil, errors.New("worker did not start")
		}
	case <-time.After(30 * time.Second):
		w.kill()
		return nil, errors.New("worker start timed out")
	}
	return w, nil
}

// kill SIGKILLs the process and waits for it to end.
func (w *workerProc) kill() {
	_ = w.cmd.Process.Signal(syscall.SIGKILL)
	<-w.done
}

var runMessage = regexp.MustCompile(`^run (\d+) pid (\d+)$`)

// round is one state of the task as its reports show it.
type round struct{ run, pid int }

func runBench(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("recoverybench", flag.ContinueOnError)
	stores := fs.String("stores", "sqlite,postgres", "stores to measure, comma-separated: sqlite, postgres")
	kills := fs.Int("kills", 10, "kills per store")
	pgURL := fs.String("pg-url", "postgres://postgres@127.0.0.1:5432/test", "PostgreSQL URL (loopback only)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *kills < 1 {
		return errors.New("-kills must be at least 1")
	}
	for _, kind := range strings.Split(*stores, ",") {
		var times []time.Duration
		var err error
		switch kind {
		case "sqlite":
			times, err = benchSQLite(*kills)
		case "postgres":
			times, err = benchPostgres(*pgURL, *kills)
		default:
			err = fmt.Errorf("unknown store %q", kind)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		slices.Sort(times)
		fmt.Fprintf(stdout, "%-8s recovery after SIGKILL over %d kills: median %v, max %v\n", kind, len(times),
			times[len(times)/2].Round(time.Millisecond), times[len(times)-1].Round(time.Millisecond))
	}
	return nil
}

func benchSQLite(kills int) ([]time.Duration, error) {
	dir, err := os.MkdirTemp("", "recoverybench")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	spec := "sqlite:" + filepath.Join(dir, "tasks.db")
	return measure(spec, kills, false)
}

func benchPostgres(url string, kills int) ([]time.Duration, error) {
	ctx := context.Background()
	schema := fmt.Sprintf("recoverybench_%d", rand.Uint32())
	defer func() {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return
		}
		defer conn.Close(ctx)
		_, _ = conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	}()
	return measure("postgres:"+schema+":"+url, kills, true)
}

// measure runs the rounds on spec: with standby, a second worker runs
// before each kill; without, the killed worker is started again.
func measure(spec string, kills int, standby bool) ([]time.Duration, error) {
	ctx := context.Background()
	st, err := openStore(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
		Tool: "spin", Arguments: []byte(`{}`)})
	if err != nil {
		return nil, err
	}
	rc := task.RequestContext{Endpoint: "main", Tenant: "bench", Principal: "bench", ProtocolVersion: "2026-07-28"}
	tk, err := st.Enqueue(ctx, &task.CreationContext{Request: rc, Origin: o}, backend.EnqueueOptions{})
	if err != nil {
		return nil, err
	}
	rc.TaskID = tk.ID()
	current := func() (round, error) {
		got, ok, err := st.FindTask(ctx, rc)
		if err != nil || !ok {
			return round{}, fmt.Errorf("find task: %v", err)
		}
		m := runMessage.FindStringSubmatch(got.StatusMessage())
		if m == nil {
			return round{}, nil
		}
		run, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		return round{run, pid}, nil
	}
	await := func(after int) (round, error) {
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			r, err := current()
			if err != nil {
				return r, err
			}
			if r.run > after {
				return r, nil
			}
			time.Sleep(5 * time.Millisecond)
		}
		return round{}, errors.New("no new run within 2 minutes")
	}

	procs := map[int]*workerProc{}
	defer func() {
		for _, w := range procs {
			w.kill()
		}
	}()
	start := func() error {
		w, err := startWorker(spec)
		if err == nil {
			procs[w.cmd.Process.Pid] = w
		}
		return err
	}
	if err := start(); err != nil {
		return nil, err
	}
	r, err := await(0)
	if err != nil {
		return nil, err
	}
	var times []time.Duration
	for range kills {
		if standby && len(procs) < 2 {
			if err := start(); err != nil {
				return nil, err
			}
			time.Sleep(200 * time.Millisecond) // its hold and first passes
		}
		w := procs[r.pid]
		if w == nil {
			return nil, fmt.Errorf("run %d is in no worker of the harness", r.run)
		}
		killed := time.Now()
		w.kill()
		delete(procs, r.pid)
		if !standby {
			if err := start(); err != nil {
				return nil, err
			}
		}
		if r, err = await(r.run); err != nil {
			return nil, err
		}
		times = append(times, time.Since(killed))
	}
	return times, nil
}
