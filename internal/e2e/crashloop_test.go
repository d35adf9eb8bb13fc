package e2e

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Parameters of TestRepeatedWorkerCrashes.
const (
	loopLease   = 2 * time.Second // --lease; rescue passes run every half lease
	loopWorkers = 8               // --workers of the worker process
	loopWork    = 0.4             // seconds of simulated work per report
	loopKills   = 5
	// loopLongWork is the work of the one long task, created first: longer
	// than the time between kills, so that every kill interrupts it.
	loopLongWork = 6.0
	// loopMaxDelay bounds how much later than its neighbours in the queue
	// an interrupted task may complete: its lease expires (one lease after
	// the last heartbeat), a rescue pass finds it (half a lease), the
	// restarted worker claims it first and runs it; plus room for a slow
	// start of the restarted process. A job sent to the back of the queue
	// completes about as late as the last task instead.
	loopMaxDelay = 2*loopLease + 4*time.Second
)

// loopTask is one task of TestRepeatedWorkerCrashes as the store's file
// shows it at the end.
type loopTask struct {
	id                     string
	createdMs, finishedMs  int64
	status                 string
	attempt                int64
	failures, interrupted  int
	delay                  time.Duration // completion after the queue neighbours' (interrupted tasks)
	latency                time.Duration // creation to completion
	reportsMatch, reported bool
}

// TestRepeatedWorkerCrashes queues 500 reports behind an API-only `serve`
// and SIGKILLs the `taskwire worker` process that runs them five times
// while the queue drains, restarting it at once each time. A long task,
// queued first, runs at every kill: it completes after five interrupted
// runs and no failure. Every task
// completes exactly once (one report file, equal to its result, no handler
// failure counted for an interrupted run), and the jobs the kills
// interrupted keep their place in the queue: each completes within
// loopMaxDelay of its neighbours in creation order, and on average within
// twice the creation-to-completion time of the uninterrupted tasks.
func TestRepeatedWorkerCrashes(t *testing.T) {
	n := 500
	if testing.Short() {
		n = 200
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "tasks.db")
	reportsDir := filepath.Join(dir, "reports")
	api := startProc(t, "serve", "serve", "--addr", "127.0.0.1:0", "--store", "sqlite:"+db, "--workers", "0",
		"--log-level", "warn")
	workerArgs := []string{"worker", "--store", "sqlite:" + db, "--workers", strconv.Itoa(loopWorkers),
		"--lease", loopLease.String(), "--reports-dir", reportsDir, "--log-level", "warn", "--shutdown-grace", "1s"}

	began := time.Now()
	long, err := createWithRetry(newClient(t, api.url, "tenant-long"), map[string]any{
		"accountId": "long", "rows": 1, "seconds": loopLongWork,
	})
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond) // first in the queue: created in a millisecond of its own
	ids := createReports(t, api.url, n)
	t.Logf("created %d tasks in %v", n, time.Since(began).Round(time.Millisecond))

	// Drain, killing the worker at 10%, 20%, ... of the tasks completed,
	// each time once the runs the previous kills interrupted have completed
	// (or, should they not, loopMaxDelay later), so that a kill interrupts
	// fresh runs, and the long task again.
	drainStart := time.Now()
	w := launchProc(t, "worker#1", workerArgs...)
	kills := 0
	var lastKill time.Time
	victims := map[string]bool{} // runs the kills interrupted, but the long task's
	deadline := time.Now().Add(3 * time.Minute)
	for {
		done := sqliteCompleted(t, db)
		if len(done) == n+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d tasks completed after 3 minutes", len(done), n+1)
		}
		pending := 0
		for id := range victims {
			if _, ok := done[id]; !ok {
				pending++
			}
		}
		if kills < loopKills && len(done) >= (kills+1)*n/10 && (pending == 0 || time.Since(lastKill) > loopMaxDelay) {
			var running []string
			for id, owner := range sqliteJobs(t, db, "running") {
				if strings.HasSuffix(owner, fmt.Sprintf("-%d", w.pid())) {
					running = append(running, id)
				}
			}
			if len(running) > 0 {
				w.kill()
				kills++
				lastKill = time.Now()
				for _, id := range running {
					if id != long {
						victims[id] = true
					}
				}
				t.Logf("kill %d at %d of %d completed, %d running", kills, len(done), n+1, len(running))
				w = launchProc(t, fmt.Sprintf("worker#%d", kills+1), workerArgs...)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	drain := time.Since(drainStart)
	w.checkHealthy(t)
	api.checkHealthy(t)

	tasks := loopTasks(t, db)
	if len(tasks) != n+1 || tasks[0].id != long {
		t.Fatalf("the store holds %d tasks, want %d, the long one first", len(tasks), n+1)
	}
	// The long task was running at every kill: each counted as an
	// interrupted run, none as one of its (default 10) attempts.
	if lt := tasks[0]; lt.status != "completed" || lt.failures != 0 || lt.interrupted != kills {
		t.Errorf("long task: %s after %d failures and %d interrupted runs, want completed after %d kills",
			lt.status, lt.failures, lt.interrupted, kills)
	}
	t.Logf("long task (%.0f s of work): completed after %d interrupted runs, %v after its creation",
		loopLongWork, tasks[0].interrupted, tasks[0].latency)
	tasks = tasks[1:]
	checkReports(t, api.url, reportsDir, ids, tasks, long)

	// Queue order: an interrupted task completes soon after its
	// neighbours in creation order (the claim order of this queue).
	var interrupted, uninterrupted []*loopTask
	for _, tk := range tasks {
		if tk.interrupted > 0 {
			interrupted = append(interrupted, tk)
		} else {
			uninterrupted = append(uninterrupted, tk)
		}
		if tk.status != "completed" || tk.failures != 0 {
			t.Errorf("task %s: %s after %d failures, %d interrupted runs", tk.id, tk.status, tk.failures, tk.interrupted)
		}
	}
	if len(interrupted) == 0 {
		t.Fatal("no run was interrupted")
	}
	for i, tk := range tasks {
		if tk.interrupted == 0 {
			continue
		}
		var near []int64
		for lo, hi := i-1, i+1; len(near) < 10 && (lo >= 0 || hi < len(tasks)); lo, hi = lo-1, hi+1 {
			for _, j := range []int{lo, hi} {
				if j >= 0 && j < len(tasks) && tasks[j].interrupted == 0 {
					near = append(near, tasks[j].finishedMs)
				}
			}
		}
		slices.Sort(near)
		tk.delay = time.Duration(tk.finishedMs-near[len(near)/2]) * time.Millisecond
		if tk.delay > loopMaxDelay {
			t.Errorf("task %s (queue position %d, %d interrupted runs) completed %v after its neighbours, want within %v",
				tk.id, i, tk.interrupted, tk.delay, loopMaxDelay)
		}
	}
	meanI, meanU := meanLatency(interrupted), meanLatency(uninterrupted)
	maxDelay := slices.MaxFunc(interrupted, func(a, b *loopTask) int { return cmp.Compare(a.delay, b.delay) }).delay
	t.Logf("%d tasks drained in %v with %d kills: %d interrupted, creation to completion mean %v (p50 %v, max %v); "+
		"%d uninterrupted, mean %v (p50 %v, max %v); ratio of means %.2f; interrupted tasks completed at most %v after their neighbours",
		n, drain.Round(time.Millisecond), kills, len(interrupted), meanI, pctLatency(interrupted, 50), pctLatency(interrupted, 100),
		len(uninterrupted), meanU, pctLatency(uninterrupted, 50), pctLatency(uninterrupted, 100),
		float64(meanI)/float64(meanU), maxDelay)
	if meanI > 2*meanU {
		t.Errorf("interrupted tasks took %v on average from creation to completion, uninterrupted ones %v: more than twice", meanI, meanU)
	}
	api.stop(t)
	w.stop(t)
}

// createReports creates n reports.generate tasks over a few concurrent
// connections of several tenants, in order of their index, and returns
// their IDs. A creation refused with 429 (an admission limit) is retried
// after its Retry-After.
func createReports(t *testing.T, url string, n int) []string {
	t.Helper()
	const conns = 8
	ids := make([]string, n)
	errs := make(chan error, conns)
	var wg sync.WaitGroup
	for c := range conns {
		cl := newClient(t, url, fmt.Sprintf("tenant-%d", c))
		wg.Go(func() {
			for i := c; i < n; i += conns {
				id, err := createWithRetry(cl, map[string]any{
					"accountId": fmt.Sprintf("acct-%d", i), "rows": 1 + i, "seconds": loopWork,
				})
				if err != nil {
					errs <- fmt.Errorf("task %d: %w", i, err)
					return
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return ids
}

// createWithRetry calls reports.generate, retrying a 429 for up to a
// minute.
func createWithRetry(c *client, args map[string]any) (string, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
		r, err := c.call(ctx, 0, mcp.MethodToolsCall, "reports.generate", map[string]any{"name": "reports.generate", "arguments": args})
		cancel()
		if err != nil {
			return "", err
		}
		if r.Status == 429 && time.Now().Before(deadline) {
			wait, _ := strconv.Atoi(r.Header.Get("Retry-After"))
			time.Sleep(time.Duration(max(wait, 1)) * time.Second)
			continue
		}
		h, err := r.TaskHandle()
		if err != nil || r.Error != nil || h.TaskID == "" {
			return "", fmt.Errorf("reports.generate: HTTP %d, error %v, %v: %s", r.Status, r.Error, err, r.Body)
		}
		return h.TaskID, nil
	}
}

// loopTasks reads every task and its job from the store's file, in creation
// order (the claim order of jobs enqueued to run at once).
func loopTasks(t *testing.T, db string) []*loopTask {
	t.Helper()
	var out []*loopTask
	queryFile(t, db, `SELECT t.id, t.created_at, t.updated_at, t.status, j.attempt, j.failures, j.interrupted_runs
		FROM tasks t JOIN jobs j ON j.task_id = t.id ORDER BY t.created_at, t.id`, nil, func(rows *sql.Rows) error {
		tk := &loopTask{}
		err := rows.Scan(&tk.id, &tk.createdMs, &tk.finishedMs, &tk.status, &tk.attempt, &tk.failures, &tk.interrupted)
		tk.latency = time.Duration(tk.finishedMs-tk.createdMs) * time.Millisecond
		out = append(out, tk)
		return err
	})
	return out
}

// checkReports reads every task through tasks/get and checks that it
// completed with the right report, and that the reports directory holds
// exactly one file per task, equal to its result, and one for each of the
// other tasks.
func checkReports(t *testing.T, url, reportsDir string, ids []string, tasks []*loopTask, others ...string) {
	t.Helper()
	c := newClient(t, url, "")
	byID := map[string]int{}
	for i, id := range ids {
		byID[id] = i
	}
	for _, tk := range tasks {
		i, ok := byID[tk.id]
		if !ok {
			t.Errorf("the store holds task %s that no creation returned", tk.id)
			continue
		}
		c.tenant = fmt.Sprintf("tenant-%d", i%8)
		r := report(t, c.getTask(t, tk.id))
		want := Report{AccountID: fmt.Sprintf("acct-%d", i), Rows: 1 + i, Checksum: checksum(fmt.Sprintf("acct-%d", i), 1+i),
			GeneratedAt: r.GeneratedAt}
		if r != want {
			t.Errorf("task %s: report %+v, want %+v", tk.id, r, want)
		}
		b, err := os.ReadFile(filepath.Join(reportsDir, tk.id+".json"))
		var onDisk Report
		if err != nil || json.Unmarshal(b, &onDisk) != nil || onDisk != r {
			t.Errorf("reports/%s.json = %s (%v), want the task's result %+v", tk.id, b, err, r)
		}
	}
	entries, err := os.ReadDir(reportsDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".json")
		if _, known := byID[id]; !ok || !known && !slices.Contains(others, id) {
			t.Errorf("reports: unexpected file %s", e.Name())
		}
	}
	if len(entries) != len(ids)+len(others) {
		t.Errorf("reports: %d files for %d tasks", len(entries), len(ids)+len(others))
	}
}

func meanLatency(ts []*loopTask) time.Duration {
	var sum time.Duration
	for _, tk := range ts {
		sum += tk.latency
	}
	return (sum / time.Duration(len(ts))).Round(time.Millisecond)
}

// pctLatency is the p-th percentile of the tasks' latencies (100: the
// maximum).
func pctLatency(ts []*loopTask, p int) time.Duration {
	ls := make([]time.Duration, len(ts))
	for i, tk := range ts {
		ls[i] = tk.latency
	}
	slices.Sort(ls)
	return ls[min(len(ls)-1, len(ls)*p/100)]
}
