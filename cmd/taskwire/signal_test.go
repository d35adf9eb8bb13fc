package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/jobmetrics"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/worker"
)

// TestInterruptDrainsThenStops checks the two interrupts: the first prints
// that the node drains and for how long, and that a second stops at once;
// the second ends the node without waiting for the grace period, its
// running job released (not failed) once, to run again later.
//
// With a request in flight, the HTTP drain still runs when the second
// interrupt comes, before the worker runtime's context is cancelled: the
// runtime must not claim the released job again meanwhile.
func TestInterruptDrainsThenStops(t *testing.T) {
	for _, tc := range []struct {
		name     string
		inFlight bool
	}{
		{"idle", false},
		{"request in flight", true},
	} {
		t.Run(tc.name, func(t *testing.T) { testInterruptDrainsThenStops(t, tc.inFlight) })
	}
}

func testInterruptDrainsThenStops(t *testing.T, inFlight bool) {
	db := filepath.Join(t.TempDir(), "tasks.db")
	cfg := testConfig(db, 1)
	cfg.ShutdownGrace = time.Hour // a drain that would outlast the test
	cfg.BodyTimeout = time.Hour
	metrics := jobmetrics.New()
	cfg.WorkerMetrics = metrics
	signals := make(chan os.Signal, 2)
	cfg.Signals = signals

	pr, pw := io.Pipe()
	lines := make(chan string, 100)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	next := func(prefix string) string {
		t.Helper()
		timeout := time.After(waitFor)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("output ended before a line starting %q", prefix)
				}
				if strings.HasPrefix(l, prefix) {
					return l
				}
			case <-timeout:
				t.Fatalf("no output line starting %q", prefix)
			}
		}
	}

	errc := make(chan error, 1)
	go func() {
		errc <- runNode(context.Background(), cfg, "serve", pw)
		pw.Close()
	}()
	url := strings.TrimPrefix(next("taskwire: serving MCP at "), "taskwire: serving MCP at ")
	c := newClient(t, url)
	id := createTask(t, c, toolReports, map[string]any{"accountId": "sig", "rows": 1, "seconds": 3600})
	metrics.Await(t, worker.TransitionClaimed, 1)
	if inFlight {
		// A request whose body never ends: the HTTP drain waits for it
		// until the grace period or the body timeout (an hour each), or
		// the second interrupt.
		conn, err := net.Dial("tcp", strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 1024\r\n\r\n{")
	}

	signals <- os.Interrupt
	got := next("taskwire: draining")
	for _, w := range []string{"1h0m0s", "--shutdown-grace", "Ctrl-C again to stop at once"} {
		if !strings.Contains(got, w) {
			t.Errorf("drain line %q lacks %q", got, w)
		}
	}
	signals <- os.Interrupt
	next("taskwire: stopping at once")
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("runNode: %v", err)
		}
	case <-time.After(waitFor):
		t.Fatal("the second interrupt did not stop the node")
	}
	if n := metrics.Count(worker.TransitionReleased); n != 1 {
		t.Errorf("released %d jobs, want 1 (all: %v)", n, metrics.Snapshot())
	}

	// The task is still working in the store: it runs again on restart.
	n := start(t, testConfig(db, 0))
	if g := getTask(t, newClient(t, n.URL()), id); g.Status != mcp.TaskWorking {
		t.Errorf("task status after the forced stop = %s, want working", g.Status)
	}
}
