package worker_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// maintenanceWatch counts transitions and wakes a waiter at every
// maintenance pass and job transition.
type maintenanceWatch struct {
	mu     sync.Mutex
	counts map[worker.Transition]int
	wake   chan struct{}
}

func newMaintenanceWatch() *maintenanceWatch {
	return &maintenanceWatch{counts: map[worker.Transition]int{}, wake: make(chan struct{}, 1)}
}

func (m *maintenanceWatch) add(tr worker.Transition, n int) {
	m.mu.Lock()
	m.counts[tr] += n
	m.mu.Unlock()
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *maintenanceWatch) JobTransition(_ string, tr worker.Transition) { m.add(tr, 1) }
func (m *maintenanceWatch) JobFailure(string, worker.FailureCategory)    {}
func (m *maintenanceWatch) HandlerDuration(string, time.Duration)        {}
func (m *maintenanceWatch) Maintenance(tr worker.Transition, n int)      { m.add(tr, n) }

func (m *maintenanceWatch) count(tr worker.Transition) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[tr]
}

// await waits, woken by the runtime's reports, until cond holds.
func (m *maintenanceWatch) await(t *testing.T, what string, cond func() bool, state ...func() string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-m.wake:
		case <-deadline:
			for _, s := range state {
				t.Log(s())
			}
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestRetentionKeepsTablesBounded runs a long life of a SQLite store on an
// injected clock: round after round of tasks are created and completed,
// then the clock moves past their TTL and the outbox retention. The
// runtime's maintenance prunes finished jobs at once, and expired tasks and
// old outbox rows once the clock passes their horizons, in batches, so the
// tables hold one round's rows at most however many rounds run.
func TestRetentionKeepsTablesBounded(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testRetention(t, func(t *testing.T, now func() time.Time, ttl time.Duration) (backend.Store, func() (int, int, int)) {
			path := filepath.Join(t.TempDir(), "tasks.db")
			st, err := sqlite.Open(context.Background(), sqlite.Options{Path: path, Now: now,
				DefaultTTL: ttl, EventPoll: -1, Logger: slog.New(slog.DiscardHandler)})
			must(t, err)
			t.Cleanup(func() { st.Close() })
			db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
			must(t, err)
			t.Cleanup(func() { db.Close() })
			return st, func() (int, int, int) {
				return rowCounts(t, "", func(q string) (n int, err error) { return n, db.QueryRow(q).Scan(&n) })
			}
		})
	})
	t.Run("postgres", func(t *testing.T) {
		raw := pgtest.URL(t)
		schema := pgtest.Schema(t, raw, "twretain_")
		testRetention(t, func(t *testing.T, now func() time.Time, ttl time.Duration) (backend.Store, func() (int, int, int)) {
			st, err := postgres.Open(context.Background(), postgres.Options{URL: raw, Schema: schema, Now: now,
				DefaultTTL: ttl, Logger: slog.New(slog.DiscardHandler)})
			must(t, err)
			t.Cleanup(func() { st.Close() })
			conn, err := pgx.Connect(context.Background(), raw)
			must(t, err)
			t.Cleanup(func() { conn.Close(context.Background()) })
			return st, func() (int, int, int) {
				return rowCounts(t, pgx.Identifier{schema}.Sanitize()+".", func(q string) (n int, err error) {
					return n, conn.QueryRow(context.Background(), q).Scan(&n)
				})
			}
		})
	})
}

// rowCounts counts the rows of a store's tasks, jobs and outbox tables
// (prefix qualifies their names) with count, which runs one count(*)
// query, so that the test sees what the store keeps rather than what its
// API reports.
func rowCounts(t *testing.T, prefix string, count func(query string) (int, error)) (tasks, jobs, outbox int) {
	t.Helper()
	n := make([]int, 3)
	for i, table := range []string{"tasks", "jobs", "outbox"} {
		var err error
		n[i], err = count("SELECT count(*) FROM " + prefix + table)
		must(t, err)
	}
	return n[0], n[1], n[2]
}

func testRetention(t *testing.T, open func(t *testing.T, now func() time.Time, ttl time.Duration) (backend.Store, func() (tasks, jobs, outbox int))) {
	const (
		rounds   = 12
		perRound = 30
		batch    = 16 // smaller than a round: passes work in several batches
		ttl      = time.Minute
	)
	ctx := context.Background()
	var clock atomic.Int64
	clock.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	st, stats := open(t, now, ttl)

	watch := newMaintenanceWatch()
	rt, err := worker.New(worker.Options{
		Store: st.Jobs(), Events: st.EventPublisher(), Concurrency: 8, Now: now, Metrics: watch,
		PollInterval: 5 * time.Millisecond, CleanupEvery: time.Millisecond, CleanupBatch: batch,
		OutboxRetention: ttl, JobRetention: ttl / 2, ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler),
	})
	must(t, err)
	must(t, worker.AddHandler(rt, "noop", func(context.Context, *worker.Job, struct{}) (struct{}, error) {
		return struct{}{}, nil
	}))
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	defer func() {
		stop()
		must(t, <-done)
	}()

	rc := task.RequestContext{Endpoint: "main", Tenant: "t1", Principal: "p1", ProtocolVersion: "2026-07-28"}
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
		Tool: "noop", Arguments: json.RawMessage(`{}`)})
	must(t, err)
	maxOutbox := 0
	for round := range rounds {
		var last string
		for range perRound {
			tk, err := st.Enqueue(ctx, &task.CreationContext{Request: rc, Origin: o}, backend.EnqueueOptions{})
			must(t, err)
			last = tk.ID()
		}
		watch.await(t, "the round's completions", func() bool {
			return watch.count(worker.TransitionCompleted) == (round+1)*perRound
		})
		// Finished jobs stay for JobRetention, then go; their tasks stay
		// readable.
		if _, jobs, _ := stats(); jobs != perRound {
			t.Fatalf("round %d: %d jobs within their retention, want %d", round, jobs, perRound)
		}
		clock.Add(int64(ttl/2 + time.Second))
		watch.await(t, "finished jobs pruned", func() bool { _, jobs, _ := stats(); return jobs == 0 })
		tasks, _, outbox := stats()
		if tasks != perRound {
			t.Fatalf("round %d: %d tasks before expiry, want %d", round, tasks, perRound)
		}
		maxOutbox = max(maxOutbox, outbox)

		// Past the TTL the tasks are invisible at once, then deleted; past
		// the retention the outbox rows go.
		clock.Add(int64(2*ttl - ttl/2 - time.Second))
		r := rc
		r.TaskID = last
		if _, found, err := st.FindTask(ctx, r); err != nil || found {
			t.Fatalf("round %d: an expired task is still visible: %v %v", round, found, err)
		}
		var tasksLeft, outboxLeft int
		watch.await(t, "expired tasks deleted and the outbox pruned", func() bool {
			tasksLeft, _, outboxLeft = stats()
			return tasksLeft == 0 && outboxLeft == 0
		}, func() string {
			return fmt.Sprintf("round %d: %d tasks, %d outbox rows left", round, tasksLeft, outboxLeft)
		})
	}
	if maxOutbox > 3*perRound {
		t.Errorf("the outbox held %d rows in a round of %d tasks", maxOutbox, perRound)
	}
	// A pass reports its count after its rows are gone: wait for the last
	// pass's report rather than read the counts while it may be on its way.
	for _, tr := range []worker.Transition{worker.TransitionJobPruned, worker.TransitionExpiredDeleted} {
		watch.await(t, fmt.Sprintf("%s reaching %d", tr, rounds*perRound), func() bool {
			return watch.count(tr) >= rounds*perRound
		}, func() string { return fmt.Sprintf("%s: %d, want at least %d", tr, watch.count(tr), rounds*perRound) })
	}
	// How many outbox rows a task leaves is the store's choice (PostgreSQL
	// writes none for a creation and one for a batch of completions); every
	// round leaves some.
	if n := watch.count(worker.TransitionOutboxPruned); n < rounds {
		t.Errorf("%s: %d, want at least %d", worker.TransitionOutboxPruned, n, rounds)
	}
}
