package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// TestFleetPostgres runs three `taskwire serve` nodes on one PostgreSQL
// schema. A task created on node A is read on B. A alone runs workers; it is
// SIGKILLed while running the task, and a worker process started afterwards
// finishes the task once A's lease has expired. Another tenant gets the same
// -32602 for the task as for an unknown ID, byte for byte, on every node.
// A listener on C, which has no workers, receives the terminal snapshot
// through the database's notifications.
func TestFleetPostgres(t *testing.T) {
	pgURL := sharedPostgres(t)
	schema := newSchema(t, pgURL)
	work := 4.0 // seconds of the report: A must still be running it when killed
	if testing.Short() {
		work = 3
	}
	dirA, dirD := t.TempDir(), t.TempDir()
	common := []string{"--store", pgURL, "--schema", schema, "--lease", "2s", "--log-level", "warn", "--shutdown-grace", "2s"}
	serve := func(name, workers, reports string) *proc {
		return launchProc(t, name, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", workers, "--reports-dir", reports}, common...)...)
	}
	// Started together on a fresh schema: they migrate it once, under the
	// store's advisory lock.
	a := serve("node-A", "1", dirA)
	b := serve("node-B", "0", t.TempDir())
	c := serve("node-C", "0", t.TempDir())
	for _, p := range []*proc{a, b, c} {
		p.awaitServing()
		if !strings.Contains(p.stdout.String(), " schema "+schema+")") {
			t.Errorf("%s does not name its schema:\n%s", p.name, p.stdout)
		}
	}
	alice := map[*proc]*client{a: newClient(t, a.url, "alice"), b: newClient(t, b.url, "alice"), c: newClient(t, c.url, "alice")}
	bob := map[*proc]*client{a: newClient(t, a.url, "bob"), b: newClient(t, b.url, "bob"), c: newClient(t, c.url, "bob")}

	// Another tenant cannot tell the task from one that does not exist.
	isolation := func(id string, nodes ...*proc) {
		t.Helper()
		unknown := randomTaskID()
		var want []byte
		for _, p := range nodes {
			for _, m := range []struct{ method, param string }{
				{mcp.MethodTasksGet, ""},
				{mcp.MethodTasksCancel, ""},
				{mcp.MethodTasksUpdate, "inputResponses"},
			} {
				params := func(taskID string) map[string]any {
					ps := map[string]any{"taskId": taskID}
					if m.param != "" {
						ps[m.param] = map[string]any{"approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}
					}
					return ps
				}
				ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
				other, err1 := bob[p].call(ctx, 7, m.method, id, params(id))
				missing, err2 := bob[p].call(ctx, 7, m.method, unknown, params(unknown))
				cancel()
				if err1 != nil || err2 != nil {
					t.Fatalf("%s on %s: %v, %v", m.method, p.name, err1, err2)
				}
				if other.Status != 200 || other.Error == nil || other.Error.Code != mcp.CodeInvalidParams {
					t.Errorf("%s of another tenant's task on %s: HTTP %d %s", m.method, p.name, other.Status, other.Body)
				}
				if !bytes.Equal(other.Body, missing.Body) || other.Status != missing.Status {
					t.Errorf("%s on %s: another tenant's task answers\n%s\nan unknown ID answers\n%s", m.method, p.name, other.Body, missing.Body)
				}
				if bytes.Contains(other.Body, []byte(id)) {
					t.Errorf("%s on %s echoes the task ID: %s", m.method, p.name, other.Body)
				}
				if want == nil {
					want = other.Body
				} else if !bytes.Equal(other.Body, want) {
					t.Errorf("%s on %s answers %s, other nodes %s", m.method, p.name, other.Body, want)
				}
			}
		}
	}

	// Every node, A included, answers another tenant alike. A short task
	// serves for this, so that nothing slow sits between the long task's
	// claim and A's death below.
	quick := alice[a].createReport(t, map[string]any{"accountId": "fleet", "rows": 1, "seconds": 0, "idempotencyKey": "fleet-0"})
	if g := alice[b].awaitTerminal(t, quick, 30*time.Second); g.Status != mcp.TaskCompleted {
		t.Fatalf("short task %q (error %v), want completed", g.Status, g.Error)
	}
	isolation(quick, a, b, c)
	t.Logf("another tenant and an unknown ID both get: %s", bob[b].mustCall(t, mcp.MethodTasksGet, quick, map[string]any{"taskId": quick}).Body)

	args := map[string]any{"accountId": "fleet", "rows": 42, "seconds": work, "idempotencyKey": "fleet-1"}
	id := alice[a].createReport(t, args)
	created := time.Now()

	// B reads it from the shared store.
	if g := alice[b].getTask(t, id); g.Status != mcp.TaskWorking {
		t.Fatalf("on B: task %q (error %v), want working", g.Status, g.Error)
	}

	// A's worker claims it: A is the only process with workers.
	suffix := "-" + strconv.Itoa(a.pid())
	var job jobRow
	poll(t, 10*time.Second, 20*time.Millisecond, func() string { return fmt.Sprintf("job %+v, want running on A", job) }, func() bool {
		job = readJob(t, pgURL, schema, id)
		return job.State == "running"
	})
	claimed := time.Now()
	if !strings.HasSuffix(job.Owner, suffix) || job.Attempt != 1 {
		t.Fatalf("job %+v, want attempt 1 owned by A (pid %d)", job, a.pid())
	}

	// A listener on C, which hears of changes only through PostgreSQL.
	listener := alice[c].listen(t, id)
	if acc := listener.awaitAck(t); len(acc) != 1 || acc[0] != id {
		t.Fatalf("C acknowledged task IDs %v, want [%s]", acc, id)
	}

	// Kill A mid-task: its worker has neither finished nor written.
	if elapsed := time.Since(claimed); elapsed > time.Duration((work-1)*float64(time.Second)) {
		t.Fatalf("too slow: %v passed since the claim, the %vs report may be done", elapsed, work)
	}
	a.kill()
	killed := time.Now()
	if g := alice[b].getTask(t, id); g.Status != mcp.TaskWorking {
		t.Fatalf("after A died: task %q (error %v), want working", g.Status, g.Error)
	}

	// Another node's worker finishes it once A's lease has expired.
	d := startProc(t, "worker-D", append([]string{"worker", "--workers", "1", "--reports-dir", dirD}, common...)...)
	g := alice[b].awaitTerminal(t, id, 30*time.Second)
	r := report(t, g)
	if r.AccountID != "fleet" || r.Rows != 42 || r.Checksum != checksum("fleet", 42) {
		t.Errorf("report %+v", r)
	}
	if job = readJob(t, pgURL, schema, id); job.State != "done" || job.Attempt != 2 {
		t.Errorf("job %+v, want done at attempt 2 (A's claim, then D's)", job)
	}
	t.Logf("task finished %v after creation, %v after A was killed", time.Since(created).Round(time.Millisecond), time.Since(killed).Round(time.Millisecond))
	if files, _ := os.ReadDir(dirA); len(files) != 1 || files[0].Name() != quick+".json" {
		t.Errorf("A, killed mid-task, holds reports %v, want only the short task's %s.json", files, quick)
	}
	if files, _ := os.ReadDir(dirD); len(files) != 1 || files[0].Name() != id+".json" {
		t.Errorf("D's reports directory holds %v, want %s.json", files, id)
	} else if b, err := os.ReadFile(filepath.Join(dirD, id+".json")); err != nil || !bytes.Contains(b, []byte(r.GeneratedAt)) {
		t.Errorf("D's report %s (%v), want generatedAt %s", b, err, r.GeneratedAt)
	}

	// C's listener got the terminal snapshot through PostgreSQL.
	n := listener.awaitTerminal(t, id, 20*time.Second)
	if n.Status != mcp.TaskCompleted || !jsonEqual(n.Result, g.Result) {
		t.Errorf("C notified %q with result %s, want completed with %s", n.Status, n.Result, g.Result)
	}
	if gc := alice[c].getTask(t, id); gc.Status != mcp.TaskCompleted || !jsonEqual(gc.Result, g.Result) {
		t.Errorf("on C: %q %s", gc.Status, gc.Result)
	}
	// The idempotency key finds the task from any node.
	if again := alice[c].createReport(t, args); again != id {
		t.Errorf("retry on C returned task %s, want %s", again, id)
	}
	isolation(id, b, c)

	for _, p := range []*proc{b, c, d} {
		p.checkHealthy(t)
	}

	// migrate takes --schema too; the schema is already current.
	m := launchProc(t, "migrate", "migrate", "--store", pgURL, "--schema", schema, "--log-level", "warn")
	select {
	case <-m.done:
	case <-time.After(startTimeout):
		t.Fatal("migrate did not finish")
	}
	if m.err != nil || !strings.Contains(m.stdout.String(), "is at schema version") {
		t.Errorf("migrate --schema: %v\n%s", m.err, m.output())
	}
}

// randomTaskID returns a well-formed task ID that no task has.
func randomTaskID() string {
	var b [16]byte
	rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}
