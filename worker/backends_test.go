package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// realStore is a store the runtime's cross-backend tests run on.
type realStore interface {
	backend.Store
	backend.OperatorSource
}

// eachBackend runs fn as a subtest on a fresh store of every kind: the
// in-memory backend, SQLite (a file of the test) and PostgreSQL (a schema
// of the test; fails under CI=true when no server is configured).
func eachBackend(t *testing.T, fn func(t *testing.T, st realStore)) {
	ctx := context.Background()
	quiet := slog.New(slog.DiscardHandler)
	t.Run("memory", func(t *testing.T) {
		m, err := memory.New(memory.Options{})
		must(t, err)
		fn(t, m)
	})
	t.Run("sqlite", func(t *testing.T) {
		st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Logger: quiet})
		must(t, err)
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
	t.Run("postgres", func(t *testing.T) {
		raw := pgtest.URL(t)
		st, err := postgres.Open(ctx, postgres.Options{URL: raw, Schema: pgtest.Schema(t, raw, "twwork_"), Logger: quiet})
		must(t, err)
		t.Cleanup(func() { st.Close() })
		fn(t, st)
	})
}

// rig is a runtime over st on the real clock, with short intervals.
type rig struct {
	st   realStore
	rt   *worker.Runtime
	rc   task.RequestContext
	stop func()
}

func newRig(t *testing.T, st realStore, opts worker.Options) *rig {
	t.Helper()
	opts.Store, opts.Events = st.Jobs(), st.EventPublisher()
	if opts.Lease == 0 {
		opts.Lease = 3 * time.Second
	}
	opts.PollInterval, opts.ShutdownGrace = 20*time.Millisecond, time.Second
	opts.ProgressInterval = 10 * time.Millisecond
	opts.Backoff = func(int) time.Duration { return 0 }
	rt, err := worker.New(opts)
	must(t, err)
	return &rig{st: st, rt: rt, rc: task.RequestContext{Endpoint: "main", Tenant: "t1", Principal: "p1",
		ProtocolVersion: "2026-07-28"}}
}

// start runs the runtime until the test ends.
func (r *rig) start(t *testing.T) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.rt.Run(ctx) }()
	r.stop = func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(r.stop)
}

// enqueue creates a task of tool with args.
func (r *rig) enqueue(t *testing.T, tool, args string, opts backend.EnqueueOptions) string {
	t.Helper()
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
		Tool: tool, Arguments: json.RawMessage(args)})
	must(t, err)
	tk, err := r.st.Enqueue(context.Background(), &task.CreationContext{Request: r.rc, Origin: o}, opts)
	must(t, err)
	return tk.ID()
}

// wait polls the task until it is terminal, calling seen with every
// snapshot read.
func (r *rig) wait(t *testing.T, id string, seen func(task.Task)) task.Task {
	t.Helper()
	rc := r.rc
	rc.TaskID = id
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		tk, ok, err := r.st.FindTask(context.Background(), rc)
		if err != nil || !ok {
			t.Fatalf("FindTask: %v %t", err, ok)
		}
		if seen != nil {
			seen(tk)
		}
		if tk.Status().Terminal() {
			return tk
		}
		if time.Now().After(deadline) {
			t.Fatalf("task still %s", tk.Status())
		}
	}
}

// history returns the task's recorded steps.
func (r *rig) history(t *testing.T, id string) backend.OperatorTask {
	t.Helper()
	ot, err := r.st.Operator().Task(context.Background(), id)
	must(t, err)
	return ot
}

// newMemoryJobs returns the JobStore of an empty in-memory backend.
func newMemoryJobs(t *testing.T) backend.JobStore {
	m, err := memory.New(memory.Options{})
	must(t, err)
	return m.Jobs()
}
