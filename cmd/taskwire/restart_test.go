package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/internal/jobmetrics"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/worker"
)

// TestMain checks that a node leaves no goroutine behind once shut down:
// the HTTP server, the worker runtime and the store all stop. With
// asMainEnv set, the test binary is the taskwire command instead, for
// tests of the process (runAsMain).
func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) != "" {
		main()
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}

// TestRestartKeepsTasks stops a serving node while its worker runs a
// report, then checks that the task outlives the process: a new API-only
// node on the same SQLite file still serves it (working, not failed), and a
// worker-only node, as `taskwire worker` runs, completes it, writing the
// report file once.
func TestRestartKeepsTasks(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "tasks.db")

	// Node A: serve with one worker, stopped in the middle of the job.
	m := jobmetrics.New()
	cfgA := testConfig(db, 1)
	cfgA.WorkerMetrics = m
	cfgA.ShutdownGrace = 50 * time.Millisecond
	a := start(t, cfgA)
	ca := newClient(t, a.URL())
	id := createTask(t, ca, toolReports, map[string]any{"accountId": "restart", "rows": 7, "seconds": 1.5})
	m.Await(t, worker.TransitionClaimed, 1)
	if err := a.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// The drain gave the job back: not completed, failed or cancelled.
	got := m.Snapshot()
	if got[worker.TransitionReleased] != 1 || got[worker.TransitionCompleted]+got[worker.TransitionFailed]+got[worker.TransitionCancelled] != 0 {
		t.Fatalf("transitions after shutdown = %v, want one release", got)
	}
	reportsDir := filepath.Join(dir, "reports")
	if files, _ := filepath.Glob(filepath.Join(reportsDir, "*")); len(files) != 0 {
		t.Fatalf("a released job left report files: %v", files)
	}

	// Node B: an API-only serve on the same file. The task is readable
	// and still working.
	b := start(t, testConfig(db, 0))
	cb := newClient(t, b.URL())
	if g := getTask(t, cb, id); g.Status != mcp.TaskWorking {
		t.Fatalf("after restart: status %q (error %v), want working", g.Status, g.Error)
	}

	// Node C: workers only, as `taskwire worker --store sqlite:…` runs.
	start(t, node.Config{
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: db}},
		Workers:       1,
		ShutdownGrace: 200 * time.Millisecond,
		PollInterval:  20 * time.Millisecond,
	})
	report := structured[Report](t, waitStatus(t, cb, id, mcp.TaskCompleted))
	if report.AccountID != "restart" || report.Rows != 7 || report.Checksum != reportChecksum("restart", 7) {
		t.Errorf("report = %+v", report)
	}
	if files := reportFiles(t, reportsDir); !slices.Equal(files, []string{id + ".json"}) {
		t.Errorf("reports dir holds %v, want only %s.json", files, id)
	}
}

// TestShutdownIsGraceful checks the order of a node's shutdown with a
// listen stream open: server.Close ends the stream, so that the HTTP
// shutdown does not wait for it, and the whole stop is quick.
func TestShutdownIsGraceful(t *testing.T) {
	n := start(t, testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1))
	c := newClient(t, n.URL())
	id := createTask(t, c, toolApprovals, map[string]any{"subject": "listen"})
	waitStatus(t, c, id, mcp.TaskInputRequired)

	// Open a listen stream on the real socket and read its
	// acknowledgement.
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	stream, res, err := c.Listen(ctx, &mcp.SubscriptionFilter{TaskIDs: []string{id}})
	if err != nil || stream == nil {
		t.Fatalf("listen: %v, response %+v", err, res)
	}
	defer stream.Close()
	first, err := stream.Next(ctx)
	if err != nil || !strings.Contains(string(first), mcp.NotificationSubscriptionsAcknowledged) {
		t.Fatalf("first listen message %s, %v", first, err)
	}

	began := time.Now()
	if err := n.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("shutdown took %v", d)
	}
	// The stream got a final response, not a cut connection.
	var last []byte
	for {
		msg, err := stream.Next(ctx)
		if errors.Is(err, mcptest.ErrStreamEnded) {
			break
		}
		if err != nil {
			t.Fatalf("listen stream: %v", err)
		}
		last = msg
	}
	if !strings.Contains(string(last), `"result"`) {
		t.Errorf("last listen message %s, want the final result", last)
	}
}
