package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestWorkerFlagsOnEveryWorkerCommand: every command that runs workers
// takes --queues and --no-fast-recovery and parses --queues alike,
// refusing a malformed list as a usage error before anything is opened or
// connected.
func TestWorkerFlagsOnEveryWorkerCommand(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	for _, tc := range []struct {
		args []string
		name string // how the error names the command
	}{
		{[]string{"serve"}, "serve"},
		{[]string{"serve", "--stdio"}, "serve"},
		{[]string{"worker"}, "worker"},
		{[]string{"gateway"}, "gateway"},
		{[]string{"gateway", "worker"}, "gateway worker"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			args := append(tc.args, "--store", db, "--no-fast-recovery", "--queues", "mail")
			code, stdout, stderr := runMainOut(t, args...)
			want := "taskwire: " + tc.name + `: --queues: "mail" is not name=workers` + "\n"
			if code != exitUsage || stdout != "" || !strings.HasPrefix(stderr, want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, exitUsage, want)
			}
		})
	}
	code, _, stderr := runMainOut(t, "serve", "--store", db, "--workers", "0", "--queues", "default=1")
	if want := "taskwire: serve: --queues needs workers; --workers 0 runs none\n"; code != exitUsage || !strings.HasPrefix(stderr, want) {
		t.Errorf("serve --workers 0 --queues: exit %d, stderr %q; want %q", code, stderr, want)
	}
}

// TestServeQueues: serve's --queues reaches its workers, which serve only
// the queues named (the demo's tools use the default queue) and run the
// sum of their workers without --workers; --no-fast-recovery leaves the
// workers without the liveness mark of fast recovery (on SQLite, a lock
// file in the database's .instances directory).
func TestServeQueues(t *testing.T) {
	for _, noFast := range []bool{false, true} {
		dir := t.TempDir()
		db := filepath.Join(dir, "q.db")
		args := []string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + db, "--queues", "default=2",
			"--reports-dir", filepath.Join(dir, "out"), "--shutdown-grace", "1s", "--log-level", "warn"}
		if noFast {
			args = append(args, "--no-fast-recovery")
		}
		out := runCommand(t, args, func(t *testing.T, url string) {
			c := newClient(t, url)
			id := createTask(t, c, toolReports, map[string]any{"accountId": "q", "rows": 2, "seconds": 0})
			waitStatus(t, c, id, mcp.TaskCompleted)
			// The job was claimed, so the runtime holds its mark by now.
			marks, err := os.ReadDir(db + ".instances")
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if noFast && len(marks) != 0 {
				t.Errorf("--no-fast-recovery: the workers hold liveness marks %v", marks)
			}
			if !noFast && len(marks) == 0 {
				t.Errorf("without --no-fast-recovery the workers hold no liveness mark")
			}
		})
		if !strings.Contains(out, "2 workers") {
			t.Errorf("--queues default=2 without --workers: output lacks \"2 workers\":\n%s", out)
		}
	}
	err := run(t.Context(), []string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(t.TempDir(), "n.db"),
		"--queues", "nosuch=1", "--log-level", "warn"}, io.Discard, io.Discard, noEnv)
	if err == nil || !strings.Contains(err.Error(), `Options.Queues names queues no handler uses: "nosuch"`) {
		t.Errorf("serve --queues nosuch=1 = %v; want the queue refused", err)
	}
}

// TestGatewayQueues: gateway's --queues reaches the workers of its task
// tools (here refused, as no tool uses the queue).
func TestGatewayQueues(t *testing.T) {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "slow.build"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return nil, struct{}{}, nil
	})
	upstream := serveUpstream(t, ep)
	for _, cmd := range [][]string{{"gateway", "--addr", "127.0.0.1:0"}, {"gateway", "worker"}} {
		args := append(cmd, "--upstream", upstream, "--task-tools", "slow.*", "--queues", "nosuch=1", "--no-fast-recovery",
			"--store", "sqlite:"+filepath.Join(t.TempDir(), "gw.db"), "--log-level", "warn")
		err := run(t.Context(), args, io.Discard, io.Discard, noEnv)
		if err == nil || !strings.Contains(err.Error(), `Options.Queues names queues no handler uses: "nosuch"`) {
			t.Errorf("%q = %v; want the queue refused", cmd, err)
		}
	}
}
