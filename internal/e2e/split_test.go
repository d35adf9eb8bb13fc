package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// TestSplitSQLite runs an API-only `taskwire serve --workers 0` and a
// separate `taskwire worker` on one SQLite file. The worker process runs
// the task; a listener on the API process receives the terminal snapshot,
// which only the outbox (not the API process's own writes) can tell it of.
func TestSplitSQLite(t *testing.T) {
	dir := t.TempDir()
	store := "sqlite:" + filepath.Join(dir, "tasks.db")
	reports := filepath.Join(dir, "reports")
	api := startProc(t, "serve-api", "serve", "--addr", "127.0.0.1:0", "--store", store, "--workers", "0",
		"--log-level", "warn", "--shutdown-grace", "2s")
	w := startProc(t, "worker", "worker", "--store", store, "--workers", "1", "--reports-dir", reports,
		"--log-level", "warn", "--shutdown-grace", "2s")
	c := newClient(t, api.url, "acme")

	id := c.createReport(t, map[string]any{"accountId": "split", "rows": 7, "seconds": 1.5})
	listener := c.listen(t, id)
	if acc := listener.awaitAck(t); len(acc) != 1 || acc[0] != id {
		t.Fatalf("acknowledged task IDs %v, want [%s]", acc, id)
	}
	n := listener.awaitTerminal(t, id, 20*time.Second)
	g := c.getTask(t, id)
	if n.Status != mcp.TaskCompleted || g.Status != mcp.TaskCompleted || !jsonEqual(n.Result, g.Result) {
		t.Fatalf("notified %q with %s; tasks/get %q with %s", n.Status, n.Result, g.Status, g.Result)
	}
	if r := report(t, g); r.AccountID != "split" || r.Rows != 7 || r.Checksum != checksum("split", 7) {
		t.Errorf("report %+v", r)
	}
	if files, _ := os.ReadDir(reports); len(files) != 1 || files[0].Name() != id+".json" {
		t.Errorf("the worker's reports directory holds %v, want %s.json", files, id)
	}
	api.checkHealthy(t)
	w.checkHealthy(t)
}
