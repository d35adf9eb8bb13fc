package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// The crawl worker: this test binary, started again with these variables
// set, runs a worker of the crawl tool (crawlWorkerMain) instead of the
// tests, so that TestCheckpointAfterKill can SIGKILL a real process.
const (
	crawlStoreEnv = "TASKWIRE_E2E_CRAWL_STORE" // "sqlite:PATH" or "postgres:SCHEMA:URL"
	crawlLogEnv   = "TASKWIRE_E2E_CRAWL_LOG"   // the file the worker appends its steps to
	// crawlDefaultsEnv, when set, makes the worker keep the runtime's
	// default lease and rescue settings (TestRecoveryAfterKill).
	crawlDefaultsEnv = "TASKWIRE_E2E_CRAWL_DEFAULTS"
	crawlLease       = 1500 * time.Millisecond
	crawlPages       = 20
)

type crawlArgs struct {
	Pages  int `json:"pages"`
	PageMs int `json:"pageMs"`
}

// openCrawlStore opens the store a crawl variable names.
func openCrawlStore(ctx context.Context, spec string) (backend.Store, error) {
	quiet := slog.New(slog.DiscardHandler)
	kind, rest, _ := strings.Cut(spec, ":")
	if kind == "sqlite" {
		return sqlite.Open(ctx, sqlite.Options{Path: rest, Logger: quiet})
	}
	schema, url, _ := strings.Cut(rest, ":")
	return postgres.Open(ctx, postgres.Options{URL: url, Schema: schema, Logger: quiet})
}

// crawlWorkerMain runs the crawl worker until it is killed. Each page
// takes pageMs, then is checkpointed; the worker appends a line to the log
// when a run starts (with the checkpoint it resumes from) and when a page
// is done (before its checkpoint).
func crawlWorkerMain() int {
	ctx := context.Background()
	st, err := openCrawlStore(ctx, os.Getenv(crawlStoreEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, "crawl worker:", err)
		return 1
	}
	logf, err := os.OpenFile(os.Getenv(crawlLogEnv), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "crawl worker:", err)
		return 1
	}
	var mu sync.Mutex
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(logf, format+"\n", args...)
	}
	opts := worker.Options{Store: st.Jobs(), Events: st.EventPublisher(), Lease: crawlLease,
		PollInterval: 50 * time.Millisecond, RescueEvery: 200 * time.Millisecond, ProgressInterval: 10 * time.Millisecond}
	if os.Getenv(crawlDefaultsEnv) != "" {
		opts = worker.Options{Store: st.Jobs(), Events: st.EventPublisher(), ProgressInterval: 10 * time.Millisecond}
	}
	rt, err := worker.New(opts)
	if err == nil {
		err = worker.AddHandler(rt, "crawl", func(ctx context.Context, job *worker.Job, in crawlArgs) (crawlArgs, error) {
			var done int
			if _, err := job.LastCheckpoint(&done); err != nil {
				return crawlArgs{}, worker.Permanent(err)
			}
			note("run %d resumes after page %d", job.Attempt(), done)
			for page := done + 1; page <= in.Pages; page++ {
				time.Sleep(time.Duration(in.PageMs) * time.Millisecond)
				note("page %d run %d", page, job.Attempt())
				if err := job.Checkpoint(page); err != nil {
					return crawlArgs{}, err
				}
				_ = job.ReportProgress(fmt.Sprintf("page %d of %d", page, in.Pages), float64(page), float64(in.Pages))
			}
			return in, nil
		})
	}
	if err == nil {
		err = rt.Run(ctx)
	}
	fmt.Fprintln(os.Stderr, "crawl worker:", err)
	return 1
}

// TestCheckpointAfterKill runs a crawl of 20 pages, each checkpointed, in
// a worker process that is SIGKILLed around page 10, on SQLite and on
// PostgreSQL, and starts a new worker process: the new run resumes after
// the last checkpointed page (the handler sees the checkpoint), pages
// checkpointed before the kill never run again, the task's progress count
// (as tasks/get reads it) never decreases, and the task completes.
func TestCheckpointAfterKill(t *testing.T) {
	for _, backendName := range []string{"sqlite", "postgres"} {
		t.Run(backendName, func(t *testing.T) {
			spec := "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
			if backendName == "postgres" {
				url := sharedPostgres(t)
				spec = "postgres:" + newSchema(t, url) + ":" + url
			}
			checkpointAfterKill(t, spec, crawlKill{})
		})
	}
}

// crawlKill says how checkpointAfterKill kills and replaces the worker.
type crawlKill struct {
	// secondFirst starts the second worker before the first is killed
	// (instead of after): it takes over the job while running.
	secondFirst bool
	// within, when set, bounds the time from the task's creation to its
	// completion.
	within time.Duration
}

func checkpointAfterKill(t *testing.T, spec string, how crawlKill) {
	ctx := context.Background()
	st, err := openCrawlStore(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	logPath := filepath.Join(t.TempDir(), "crawl.log")
	t.Setenv(crawlStoreEnv, spec)
	t.Setenv(crawlLogEnv, logPath)

	args, _ := json.Marshal(crawlArgs{Pages: crawlPages, PageMs: 150})
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
		Tool: "crawl", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	rc := task.RequestContext{Endpoint: "main", Tenant: "acme", Principal: "u1", ProtocolVersion: "2026-07-28"}
	tk, err := st.Enqueue(ctx, &task.CreationContext{Request: rc, Origin: o}, backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rc.TaskID = tk.ID()
	created := time.Now()
	var high float64
	var last task.Task
	read := func() task.Task {
		got, ok, err := st.FindTask(ctx, rc)
		if err != nil || !ok {
			t.Fatalf("FindTask: %v %t", err, ok)
		}
		if p, ok := got.Progress(); ok {
			if p.Current < high {
				t.Errorf("progress went back from %v to %v", high, p.Current)
			}
			high = max(high, p.Current)
		}
		last = got
		return got
	}

	first := launchBinary(t, os.Args[0], "crawl#1", "-test.run=^$")
	poll(t, 60*time.Second, 10*time.Millisecond, func() string { return fmt.Sprintf("progress %v before the kill", high) },
		func() bool { read(); return high >= crawlPages/2 })
	if how.secondFirst {
		launchBinary(t, os.Args[0], "crawl#2", "-test.run=^$")
	}
	first.kill()
	killed, atKill := time.Now(), high
	if !how.secondFirst {
		launchBinary(t, os.Args[0], "crawl#2", "-test.run=^$")
	}
	poll(t, 60*time.Second, 10*time.Millisecond, func() string { return "task still " + string(last.Status()) },
		func() bool { return read().Status().Terminal() })
	if last.Status() != task.Completed || string(last.Result().StructuredContent) != string(args) {
		t.Fatalf("task %s, result %v", last.Status(), last.Result())
	}
	took := time.Since(created)
	t.Logf("completed %v after the kill, %v after its creation (%d pages of 150 ms left at the kill)",
		time.Since(killed).Round(time.Millisecond), took.Round(time.Millisecond), crawlPages-int(atKill))
	if how.within > 0 && took > how.within {
		t.Errorf("completed %v after its creation, want at most %v", took.Round(time.Millisecond), how.within)
	}
	checkCrawlLog(t, logPath)
}

var (
	runLine  = regexp.MustCompile(`^run (\d+) resumes after page (\d+)$`)
	pageLine = regexp.MustCompile(`^page (\d+) run (\d+)$`)
)

// checkCrawlLog checks the steps the two workers logged: run 1 from page
// 1, run 2 resuming after run 1's last checkpoint, every page done, and
// no page redone but the one whose checkpoint the kill may have cut off.
func checkCrawlLog(t *testing.T, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var resumes []int
	pages := map[int][]int{} // run → pages
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if m := runLine.FindStringSubmatch(line); m != nil {
			resumes = append(resumes, atoi(m[2]))
		} else if m := pageLine.FindStringSubmatch(line); m != nil {
			run := atoi(m[2])
			pages[run] = append(pages[run], atoi(m[1]))
		} else {
			t.Fatalf("unexpected log line %q", line)
		}
	}
	if len(resumes) != 2 || resumes[0] != 0 || len(pages) != 2 {
		t.Fatalf("runs %v, pages %v; want two runs, the first from the start\n%s", resumes, pages, b)
	}
	run1, run2 := pages[1], pages[2]
	lastOf1 := run1[len(run1)-1]
	if r := resumes[1]; r < crawlPages/2 || (r != lastOf1 && r != lastOf1-1) {
		t.Errorf("run 2 resumed after page %d; run 1 did pages up to %d (killed after page %d was reported)", r, lastOf1,
			crawlPages/2)
	}
	if run2[0] != resumes[1]+1 || run2[len(run2)-1] != crawlPages || len(run2) != crawlPages-resumes[1] {
		t.Errorf("run 2 did pages %v, want %d to %d", run2, resumes[1]+1, crawlPages)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
