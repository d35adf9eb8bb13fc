package e2e

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" database/sql driver, to inspect the store's file

	"github.com/taskwire/taskwire/mcp"
)

// checksum is the checksum reports.generate documents: SHA-256 of the
// account ID and the row count separated by a NUL byte, in hexadecimal.
func checksum(accountID string, rows int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", accountID, rows))
	return hex.EncodeToString(sum[:])
}

// crashTask is one reports.generate call of TestCrashSQLite.
type crashTask struct {
	key  string
	args map[string]any
	id   string // "" when the call was not acknowledged
}

// TestCrashSQLite SIGKILLs `taskwire serve` while its two workers run
// reports and while a client is still creating tasks, then restarts it on
// the same SQLite file and reports directory. Every acknowledged task is
// still readable and reaches exactly one terminal state, completed; each
// completed task has exactly one report file, matching its result; and
// retrying every idempotency key returns the acknowledged task.
func TestCrashSQLite(t *testing.T) {
	n, base := 20, 2.0 // tasks, and seconds of work of the first (the others take 0.05 s more each)
	if testing.Short() {
		n, base = 8, 1.0
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "tasks.db")
	reportsDir := filepath.Join(dir, "reports")
	args := []string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + db, "--workers", "2",
		"--lease", "2s", "--reports-dir", reportsDir, "--log-level", "warn", "--shutdown-grace", "2s"}

	first := startProc(t, "serve#1", args...)
	c1 := newClient(t, first.url, "acme")
	var tasks []*crashTask
	for i := range n {
		ct := &crashTask{key: fmt.Sprintf("crash-%d", i), args: map[string]any{
			"accountId": fmt.Sprintf("acct-%d", i), "rows": 100 + i,
			"seconds": base + 0.05*float64(i), "idempotencyKey": fmt.Sprintf("crash-%d", i),
		}}
		ct.id = c1.createReport(t, ct.args)
		tasks = append(tasks, ct)
	}

	// Mid-work: a couple of reports done, two running, the rest queued.
	done := map[string]json.RawMessage{} // results seen before the crash
	poll(t, time.Duration(base*4+20)*time.Second, 50*time.Millisecond, func() string {
		return fmt.Sprintf("%d of %d tasks completed before the crash", len(done), n)
	}, func() bool {
		for _, ct := range tasks {
			if _, ok := done[ct.id]; ok {
				continue
			}
			g, raw, err := c1.tryGetTask(context.Background(), ct.id)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case g.Status == mcp.TaskCompleted:
				done[ct.id] = raw
			case g.Status.Terminal():
				t.Fatalf("task %s ended %q before the crash: %v", ct.id, g.Status, g.Error)
			}
		}
		return len(done) >= 2
	})
	if len(done) == n {
		t.Fatal("every task completed before the crash; nothing was running")
	}

	// Keep creating tasks while the process dies: the acknowledged ones
	// must survive, the others may or may not exist.
	var late []*crashTask
	lateDone := make(chan struct{})
	lateAcked := make(chan struct{}, 1)
	go func() {
		defer close(lateDone)
		for i := 0; ; i++ {
			ct := &crashTask{key: fmt.Sprintf("late-%d", i), args: map[string]any{
				"accountId": fmt.Sprintf("late-%d", i), "rows": 1 + i, "seconds": 0.1,
				"idempotencyKey": fmt.Sprintf("late-%d", i),
			}}
			late = append(late, ct)
			id, err := c1.tryCreateReport(context.Background(), ct.args)
			if err != nil {
				return // the process is gone
			}
			ct.id = id
			if i == 2 {
				lateAcked <- struct{}{}
			}
			if i > 500 {
				return
			}
		}
	}()
	select {
	case <-lateAcked:
	case <-lateDone:
		t.Fatal("creating tasks failed before the crash")
	case <-time.After(requestTimeout):
		t.Fatal("no task created within the request timeout")
	}
	first.kill()
	if ws, ok := first.cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("serve#1 ended with %v, want SIGKILL", first.cmd.ProcessState)
	}
	select {
	case <-lateDone:
	case <-time.After(requestTimeout + 5*time.Second):
		t.Fatal("the creating client did not notice the crash")
	}
	ackedLate := 0
	for _, ct := range late {
		if ct.id != "" {
			ackedLate++
		}
	}
	// The file shows what the dead process was doing: jobs it had claimed
	// and not finished, whose leases must expire before they run again.
	running := sqliteJobs(t, db, "running")
	for id, owner := range running {
		if !strings.HasSuffix(owner, fmt.Sprintf("-%d", first.pid())) {
			t.Errorf("job %s is leased to %q, not to the killed process", id, owner)
		}
	}
	if len(running) == 0 {
		t.Fatal("no job was running when the process was killed")
	}
	t.Logf("crash with %d of %d reports completed and %d running; %d tasks created during the crash, %d acknowledged",
		len(done), n, len(running), len(late), ackedLate)
	all := append(slices.Clone(tasks), late...)

	// Restart on the same file and directory.
	second := startProc(t, "serve#2", args...)
	c2 := newClient(t, second.url, "acme")

	// Retrying every key returns the acknowledged task; a key whose call
	// was cut off gets a task now (the one that committed, or a new one).
	ids := map[string]string{} // task ID -> key
	for _, ct := range all {
		id := c2.createReport(t, ct.args)
		switch {
		case ct.id != "" && id != ct.id:
			t.Errorf("key %s: retry returned task %s, want the acknowledged %s", ct.key, id, ct.id)
		case ct.id == "":
			ct.id = id
		}
		if other, dup := ids[id]; dup {
			t.Errorf("keys %s and %s share task %s", other, ct.key, id)
		}
		ids[id] = ct.key
	}

	// Every task reaches completed, and stays exactly as it was.
	timeout := time.Duration(float64(n)*(base+0.05*float64(n))/2+30) * time.Second
	final := map[string]json.RawMessage{}
	for _, ct := range all {
		g := c2.awaitTerminal(t, ct.id, timeout)
		r := report(t, g)
		if r.AccountID != ct.args["accountId"] || r.Rows != ct.args["rows"] || r.Checksum != checksum(r.AccountID, r.Rows) {
			t.Errorf("task %s (%s): report %+v", ct.id, ct.key, r)
		}
		_, raw, err := c2.tryGetTask(context.Background(), ct.id)
		if err != nil {
			t.Fatal(err)
		}
		final[ct.id] = raw
	}
	// The runs the crash cut off were claimed again after their lease.
	attempts := sqliteAttempts(t, db)
	for id := range running {
		if attempts[id] < 2 {
			t.Errorf("job %s, running at the crash, completed at attempt %d", id, attempts[id])
		}
	}
	for id, before := range done {
		if !jsonEqual(before, final[id]) {
			t.Errorf("task %s changed after completing:\nbefore the crash %s\nafter           %s", id, before, final[id])
		}
	}

	// One report file per task, holding the task's result; nothing else
	// but, for a task whose run was killed mid-write, its temporary file.
	entries, err := os.ReadDir(reportsDir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]bool{}
	for _, e := range entries {
		name := e.Name()
		if id, ok := strings.CutSuffix(name, ".json"); ok && ids[id] != "" {
			files[id] = true
			continue
		}
		if strings.HasSuffix(name, ".tmp") && strings.HasPrefix(name, ".") {
			if id, _, _ := strings.Cut(name[1:], "."); ids[id] != "" && done[id] == nil {
				t.Logf("reports: %s is the temporary file of a run killed mid-write", name)
				continue
			}
		}
		t.Errorf("reports: unexpected file %s", name)
	}
	for _, ct := range all {
		if !files[ct.id] {
			t.Errorf("reports: no file for task %s (%s)", ct.id, ct.key)
			continue
		}
		b, err := os.ReadFile(filepath.Join(reportsDir, ct.id+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var onDisk Report
		var res struct {
			StructuredContent Report `json:"structuredContent"`
		}
		var g mcp.GetTaskResult
		json.Unmarshal(final[ct.id], &g)
		json.Unmarshal(g.Result, &res)
		if err := json.Unmarshal(b, &onDisk); err != nil || onDisk != res.StructuredContent {
			t.Errorf("reports/%s.json = %s (%v), want the task's result %+v", ct.id, b, err, res.StructuredContent)
		}
	}

	// Terminal is final: polling again much later changes nothing.
	for _, ct := range all {
		_, raw, err := c2.tryGetTask(context.Background(), ct.id)
		if err != nil {
			t.Fatal(err)
		}
		if !jsonEqual(raw, final[ct.id]) {
			t.Errorf("task %s changed:\n%s\n%s", ct.id, final[ct.id], raw)
		}
	}
	second.stop(t)
}

// jsonEqual compares two JSON values, ignoring member order and spacing.
func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return string(xb) == string(yb)
}

// sqliteJobs returns the lease owners of the jobs in state, read from the
// store's file.
func sqliteJobs(t *testing.T, db, state string) map[string]string {
	t.Helper()
	out := map[string]string{}
	queryFile(t, db, "SELECT task_id, COALESCE(lease_owner, '') FROM jobs WHERE state = ?", []any{state}, func(rows *sql.Rows) error {
		var id, owner string
		err := rows.Scan(&id, &owner)
		out[id] = owner
		return err
	})
	return out
}

// sqliteCompleted returns the IDs of the completed tasks. It reads the task
// rows, not the jobs: the workers' retention prunes done jobs as they go.
func sqliteCompleted(t *testing.T, db string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	queryFile(t, db, "SELECT id FROM tasks WHERE status = 'completed'", nil, func(rows *sql.Rows) error {
		var id string
		err := rows.Scan(&id)
		out[id] = true
		return err
	})
	return out
}

// sqliteAttempts returns the attempt number of every job.
func sqliteAttempts(t *testing.T, db string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	queryFile(t, db, "SELECT task_id, attempt FROM jobs", nil, func(rows *sql.Rows) error {
		var id string
		var n int64
		err := rows.Scan(&id, &n)
		out[id] = n
		return err
	})
	return out
}

func queryFile(t *testing.T, db, query string, args []any, scan func(*sql.Rows) error) {
	t.Helper()
	conn, err := sql.Open("sqlite", "file:"+db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rows, err := conn.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := scan(rows); err != nil {
			t.Fatal(err)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}
