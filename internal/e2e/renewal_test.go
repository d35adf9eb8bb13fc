package e2e

import (
	"os"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// TestListenRenewalDuringOutage checks that a listen keeps following its
// task when its grant is renewed while the database is down. `taskwire
// serve` grants listens for a minute and renews them after about 30 s; the
// test stops PostgreSQL from 28 s to 34 s after the listen opened, so the
// renewal meets the outage, then answers the task's input and expects the
// terminal notification.
//
// It takes about 45 s and runs only with TASKWIRE_E2E_SLOW=1. It fails on
// the server as of this writing: the renewal's reconcile treats a failed
// lookup like an unknown task and stops following it, while the stream
// stays open and silent (see the report accompanying this test).
func TestListenRenewalDuringOutage(t *testing.T) {
	if testing.Short() || os.Getenv("TASKWIRE_E2E_SLOW") != "1" {
		t.Skip("takes about 45 s; set TASKWIRE_E2E_SLOW=1 to run it")
	}
	pg := startPrivatePostgres(t)
	common := []string{"--store", pg.URL(), "--schema", "e2e_renewal", "--lease", "2s", "--log-level", "warn"}
	n1 := startProc(t, "node-1", append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "1", "--reports-dir", t.TempDir()}, common...)...)
	n2 := startProc(t, "node-2", append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0", "--reports-dir", t.TempDir()}, common...)...)
	c1, c2 := newClient(t, n1.url, "carol"), newClient(t, n2.url, "carol")

	r := c1.mustCall(t, mcp.MethodToolsCall, "approvals.request", map[string]any{
		"name": "approvals.request", "arguments": map[string]any{"subject": "renewal"}})
	h, err := r.TaskHandle()
	if err != nil {
		t.Fatalf("approvals.request: %v: %s", err, r.Body)
	}
	id := h.TaskID
	var status mcp.TaskStatus
	poll(t, 10*time.Second, 50*time.Millisecond, func() string { return "task " + string(status) }, func() bool {
		status = c1.getTask(t, id).Status
		return status == mcp.TaskInputRequired
	})
	listener := c2.listen(t, id)
	opened := time.Now()
	if acc := listener.awaitAck(t); len(acc) != 1 || acc[0] != id {
		t.Fatalf("acknowledged %v, want [%s]", acc, id)
	}

	// The renewal comes 30 s to 31 s after the listen opened: the
	// database is down from 28 s to 34 s. These waits schedule the outage
	// against the server's timer; they synchronize nothing.
	time.Sleep(28*time.Second - time.Since(opened))
	pg.stop()
	time.Sleep(34*time.Second - time.Since(opened))
	pg.start(false)

	// Answer the input once node 1 reaches the database again.
	poll(t, 20*time.Second, 100*time.Millisecond, func() string { return "tasks/update kept failing" }, func() bool {
		u := c1.mustCall(t, mcp.MethodTasksUpdate, id, map[string]any{"taskId": id, "inputResponses": map[string]any{
			"approval": map[string]any{"action": "accept", "content": map[string]any{"approve": true}}}})
		return u.Error == nil
	})
	if g := c1.awaitTerminal(t, id, 20*time.Second); g.Status != mcp.TaskCompleted {
		t.Fatalf("task %q", g.Status)
	}
	if n := listener.awaitTerminal(t, id, 15*time.Second); n.Status != mcp.TaskCompleted {
		t.Errorf("notified %q", n.Status)
	}
}
