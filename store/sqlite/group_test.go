package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// groupHarness lines writes up behind a held writer connection, so that a
// test decides which calls share a group: the first call leads a group of
// one that waits for the connection, and the calls started after it queue,
// in order, for the next group.
type groupHarness struct {
	t    *testing.T
	s    *Store
	path string
	held *sql.Conn
}

func newGroupHarness(t *testing.T, opts Options) *groupHarness {
	t.Helper()
	opts.Path = filepath.Join(t.TempDir(), "tasks.db")
	opts.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	opts.EventPoll = -1
	if opts.Timeout == 0 {
		opts.Timeout = time.Minute
	}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	for _, q := range []string{
		`CREATE TABLE scratch (k TEXT PRIMARY KEY) STRICT`,
		`CREATE TABLE parent (id TEXT PRIMARY KEY) STRICT`,
		`CREATE TABLE child (parent TEXT REFERENCES parent (id) DEFERRABLE INITIALLY DEFERRED) STRICT`,
	} {
		if _, err := s.w.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	return &groupHarness{t: t, s: s, path: opts.Path}
}

// hold is holdFor of a write of fn.
func (h *groupHarness) hold(fn func(*wtx) ([]string, error)) <-chan error {
	h.t.Helper()
	return h.holdFor(func() error { return h.s.write(context.Background(), fn) })
}

// release frees the writer connection.
func (h *groupHarness) release() {
	h.t.Helper()
	if err := h.held.Close(); err != nil {
		h.t.Fatal(err)
	}
}

// start calls write with fn and waits until the call is queued.
func (h *groupHarness) start(ctx context.Context, fn func(*wtx) ([]string, error)) <-chan error {
	h.t.Helper()
	return h.startCall(func() error { return h.s.write(ctx, fn) })
}

// startCall runs call, a call of the store that writes once, and waits
// until its write is queued.
func (h *groupHarness) startCall(call func() error) <-chan error {
	h.t.Helper()
	h.s.group.mu.Lock()
	n := len(h.s.group.queue)
	h.s.group.mu.Unlock()
	done := run(call)
	h.waitFor("the call to queue", func(g *writeGroup) bool { return len(g.queue) == n+1 })
	return done
}

// run runs call in a goroutine of its own and returns its error's channel.
func run(call func() error) <-chan error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	return done
}

// holdFor takes the writer connection and starts call, whose write leads
// a group of one that waits for the connection.
func (h *groupHarness) holdFor(call func() error) <-chan error {
	h.t.Helper()
	c, err := h.s.w.Conn(context.Background())
	if err != nil {
		h.t.Fatal(err)
	}
	h.held = c
	done := run(call)
	h.waitFor("the leader to take its group of one", func(g *writeGroup) bool { return g.leading && len(g.queue) == 0 })
	return done
}

// waitFor polls the write queue until cond holds, for at most 20 s.
func (h *groupHarness) waitFor(what string, cond func(*writeGroup) bool) {
	h.t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		h.s.group.mu.Lock()
		ok := cond(&h.s.group)
		h.s.group.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("waited 20 s for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// insert returns a write fn inserting k into scratch.
func insert(k string) func(*wtx) ([]string, error) {
	return func(tx *wtx) ([]string, error) {
		_, err := tx.ExecContext(context.Background(), `INSERT INTO scratch (k) VALUES (?)`, k)
		return nil, err
	}
}

// keys returns the keys of scratch, sorted.
func (h *groupHarness) keys() []string {
	h.t.Helper()
	rows, err := h.s.r.Query(`SELECT k FROM scratch ORDER BY k`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	var ks []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			h.t.Fatal(err)
		}
		ks = append(ks, k)
	}
	if err := rows.Err(); err != nil {
		h.t.Fatal(err)
	}
	return ks
}

// result waits for a call's error.
func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("a write still runs after 20 s")
		return nil
	}
}

// walCommits counts the commit frames in the WAL file beside path: every
// committed write transaction ends with one. It reads the frames of the
// WAL's current generation (those whose salts match its header's).
func walCommits(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path + "-wal")
	if errors.Is(err, os.ErrNotExist) || len(b) < 32 {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	pageSize := int(binary.BigEndian.Uint32(b[8:12]))
	salts := b[16:24]
	n := 0
	for off := 32; off+24+pageSize <= len(b); off += 24 + pageSize {
		frame := b[off : off+24]
		if !bytes.Equal(frame[8:16], salts) {
			break
		}
		if binary.BigEndian.Uint32(frame[4:8]) != 0 { // the database size after a commit
			n++
		}
	}
	return n
}

func groupCreation(t *testing.T) *task.CreationContext {
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "ep", Operation: "tools/call",
		Tool: "tool", Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return &task.CreationContext{Request: task.RequestContext{Endpoint: "ep", Tenant: "t"}, Origin: o}
}

// TestGroupCommitsWaitingWrites enqueues tasks while a write waits for the
// writer connection: those queued behind it commit together, at most
// maxGroup to a transaction, as the commit frames in the WAL show, and
// every task is published and readable.
func TestGroupCommitsWaitingWrites(t *testing.T) {
	for _, tc := range []struct {
		waiting int
		commits int // the leader's, then the groups'
	}{
		{waiting: 1, commits: 2},
		{waiting: 10, commits: 2},
		{waiting: maxGroup + 6, commits: 3},
	} {
		t.Run(fmt.Sprint(tc.waiting), func(t *testing.T) {
			h := newGroupHarness(t, Options{})
			if _, err := h.s.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var published []string
			defer h.s.pub.Subscribe(func(id string) {
				mu.Lock()
				published = append(published, id)
				mu.Unlock()
			})()
			cc := groupCreation(t)
			ids := make([]string, tc.waiting+1)
			enqueue := func(i int) func() error {
				return func() error {
					tk, err := h.s.Enqueue(context.Background(), cc, backend.EnqueueOptions{})
					ids[i] = tk.ID()
					return err
				}
			}
			dones := []<-chan error{h.holdFor(enqueue(0))}
			for i := 1; i <= tc.waiting; i++ {
				dones = append(dones, h.startCall(enqueue(i)))
			}
			h.release()
			for i, d := range dones {
				if err := result(t, d); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			if got := walCommits(t, h.path); got != tc.commits {
				t.Errorf("%d writes committed in %d transactions, want %d", tc.waiting+1, got, tc.commits)
			}
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(ids, published); diff != "" {
				t.Errorf("published task IDs (-committed +published):\n%s", diff)
			}
			for _, id := range ids {
				if _, ok, err := h.s.FindTask(context.Background(), task.RequestContext{TaskID: id, Endpoint: "ep",
					Tenant: "t"}); !ok || err != nil {
					t.Errorf("FindTask(%s) = %v, %v after commit", id, ok, err)
				}
			}
		})
	}
}

// TestGroupMemberFailureKeepsOthers runs failing members in one group: an
// error after a write, a constraint violation and a panic are rolled back
// to their savepoints and reach their own callers only; the other members
// commit, each seeing the writes of the members before it.
func TestGroupMemberFailureKeepsOthers(t *testing.T) {
	h := newGroupHarness(t, Options{})
	errBoom := errors.New("boom")
	var sawB bool
	lead := h.hold(insert("lead"))
	b := h.start(context.Background(), insert("b"))
	c := h.start(context.Background(), func(tx *wtx) ([]string, error) {
		if _, err := insert("c")(tx); err != nil {
			return nil, err
		}
		return nil, errBoom
	})
	d := h.start(context.Background(), func(tx *wtx) ([]string, error) {
		if err := tx.QueryRowContext(context.Background(), `SELECT count(*) FROM scratch WHERE k = 'b'`).Scan(&sawB); err != nil {
			return nil, err
		}
		return insert("d")(tx)
	})
	dup := h.start(context.Background(), insert("b"))
	panics := make(chan any, 1)
	p := h.startCall(func() error {
		defer func() { panics <- recover() }()
		return h.s.write(context.Background(), func(tx *wtx) ([]string, error) {
			insert("p")(tx)
			panic("member panic")
		})
	})
	g := h.start(context.Background(), insert("g"))
	h.release()

	for name, done := range map[string]<-chan error{"lead": lead, "b": b, "d": d, "g": g} {
		if err := result(t, done); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := result(t, c); !errors.Is(err, errBoom) {
		t.Errorf("the failing member: %v, want its own error", err)
	}
	if err := result(t, dup); err == nil || !bytes.Contains([]byte(err.Error()), []byte("UNIQUE")) {
		t.Errorf("the duplicate insert: %v, want a UNIQUE constraint error", err)
	}
	select {
	case p := <-panics:
		if p != "member panic" {
			t.Errorf("the panicking member's caller recovered %v", p)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the panicking member still runs after 20 s")
	}
	<-p
	if !sawB {
		t.Error("a member did not see an earlier member's write")
	}
	if diff := cmp.Diff([]string{"b", "d", "g", "lead"}, h.keys()); diff != "" {
		t.Errorf("committed keys (-want +got):\n%s", diff)
	}
}

// TestGroupAbandonedWaiter cancels the oldest call waiting for the next
// group: it returns at once, while the writer is still held, and its fn
// never runs; the lead passes to the next call, and the group commits the
// other members. A member whose context ends while
// its fn runs still commits, since its statements run under the group's
// context.
func TestGroupAbandonedWaiter(t *testing.T) {
	h := newGroupHarness(t, Options{})
	lead := h.hold(insert("lead"))
	// c waits at the head of the queue: the lead passes over it to b.
	cctx, cancelC := context.WithCancel(context.Background())
	defer cancelC()
	var ranC bool
	c := h.start(cctx, func(tx *wtx) ([]string, error) {
		ranC = true
		return insert("c")(tx)
	})
	b := h.start(context.Background(), insert("b"))
	dctx, cancelD := context.WithCancel(context.Background())
	defer cancelD()
	d := h.start(dctx, func(tx *wtx) ([]string, error) {
		cancelD()
		_, err := tx.ExecContext(dctx, `INSERT INTO scratch (k) VALUES ('d')`)
		return nil, err
	})
	cancelC()
	if err := result(t, c); !errors.Is(err, context.Canceled) {
		t.Errorf("the cancelled waiter: %v, want context.Canceled", err)
	}
	h.release()
	for name, done := range map[string]<-chan error{"lead": lead, "b": b, "d": d} {
		if err := result(t, done); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if ranC {
		t.Error("the cancelled waiter's fn ran")
	}
	if diff := cmp.Diff([]string{"b", "d", "lead"}, h.keys()); diff != "" {
		t.Errorf("committed keys (-want +got):\n%s", diff)
	}
}

// TestGroupCommitFailureReachesEveryMember makes COMMIT fail (a deferred
// foreign key a member broke): every member gets the error, nothing of the
// group is written or published, and the next write works.
func TestGroupCommitFailureReachesEveryMember(t *testing.T) {
	h := newGroupHarness(t, Options{})
	var mu sync.Mutex
	var published []string
	defer h.s.pub.Subscribe(func(id string) {
		mu.Lock()
		published = append(published, id)
		mu.Unlock()
	})()
	publishing := func(k string) func(*wtx) ([]string, error) {
		return func(tx *wtx) ([]string, error) {
			_, err := insert(k)(tx)
			return []string{k}, err
		}
	}
	lead := h.hold(insert("lead"))
	b := h.start(context.Background(), publishing("b"))
	orphan := h.start(context.Background(), func(tx *wtx) ([]string, error) {
		_, err := tx.ExecContext(context.Background(), `INSERT INTO child (parent) VALUES ('none')`)
		return nil, err
	})
	d := h.start(context.Background(), publishing("d"))
	h.release()
	if err := result(t, lead); err != nil {
		t.Fatalf("lead: %v", err)
	}
	for name, done := range map[string]<-chan error{"b": b, "orphan": orphan, "d": d} {
		if err := result(t, done); err == nil || !bytes.Contains([]byte(err.Error()), []byte("sqlite: commit")) {
			t.Errorf("%s: %v, want the commit's error", name, err)
		}
	}
	mu.Lock()
	if len(published) != 0 {
		t.Errorf("published %v from a group that did not commit", published)
	}
	mu.Unlock()
	if err := h.s.write(context.Background(), insert("after")); err != nil {
		t.Fatalf("a write after the failed commit: %v", err)
	}
	if diff := cmp.Diff([]string{"after", "lead"}, h.keys()); diff != "" {
		t.Errorf("committed keys (-want +got):\n%s", diff)
	}
}

// TestGroupBeginFailureReachesEveryMember holds the database's write lock
// from another connection, as another process would: BEGIN IMMEDIATE gives
// up after BusyTimeout, and every member of the waiting group gets
// task.ErrUnavailable without its fn running.
func TestGroupBeginFailureReachesEveryMember(t *testing.T) {
	h := newGroupHarness(t, Options{BusyTimeout: 50 * time.Millisecond})
	other, err := sql.Open("sqlite", "file:"+h.path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var ran []string
	noting := func(k string) func(*wtx) ([]string, error) {
		return func(tx *wtx) ([]string, error) {
			mu.Lock()
			ran = append(ran, k)
			mu.Unlock()
			return insert(k)(tx)
		}
	}
	dones := map[string]<-chan error{"lead": h.hold(noting("lead"))}
	for _, k := range []string{"b", "c", "d"} {
		dones[k] = h.start(context.Background(), noting(k))
	}
	h.release()
	for name, done := range dones {
		if err := result(t, done); !errors.Is(err, task.ErrUnavailable) {
			t.Errorf("%s: %v, want task.ErrUnavailable", name, err)
		}
	}
	if len(ran) != 0 {
		t.Errorf("fns ran without a transaction: %v", ran)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if err := h.s.write(context.Background(), insert("after")); err != nil {
		t.Fatalf("a write once the lock is free: %v", err)
	}
	if diff := cmp.Diff([]string{"after"}, h.keys()); diff != "" {
		t.Errorf("committed keys (-want +got):\n%s", diff)
	}
}

// TestGroupBatchWrites queues small writes and two batch writes behind a
// held writer: a group holds one batch write, which runs first, before
// the small writes that arrived before it, and the second batch write
// leads the next group. A failing first member is rolled back with the
// transaction, reaches its own caller only, and the members after it
// commit in a transaction of their own.
func TestGroupBatchWrites(t *testing.T) {
	h := newGroupHarness(t, Options{})
	if _, err := h.s.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []string
	noting := func(k string, fn func(*wtx) ([]string, error)) func(*wtx) ([]string, error) {
		return func(tx *wtx) ([]string, error) {
			mu.Lock()
			order = append(order, k)
			mu.Unlock()
			return fn(tx)
		}
	}
	startBatch := func(k string, fn func(*wtx) ([]string, error)) <-chan error {
		return h.startCall(func() error { return h.s.writeBatch(context.Background(), batchWriteRows+1, noting(k, fn)) })
	}
	errBoom := errors.New("boom")
	failing := func(tx *wtx) ([]string, error) {
		if _, err := insert("failed-batch")(tx); err != nil {
			return nil, err
		}
		return nil, errBoom
	}
	lead := h.hold(insert("lead"))
	dones := map[string]<-chan error{
		"a":  h.start(context.Background(), noting("a", insert("a"))),
		"B1": startBatch("B1", insert("B1")),
		"c":  h.start(context.Background(), noting("c", insert("c"))),
	}
	b2 := startBatch("B2", failing)
	dones["d"] = h.start(context.Background(), noting("d", insert("d")))
	h.release()
	if err := result(t, lead); err != nil {
		t.Fatalf("lead: %v", err)
	}
	for name, done := range dones {
		if err := result(t, done); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := result(t, b2); !errors.Is(err, errBoom) {
		t.Errorf("the failing batch write: %v, want its own error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"B1", "a", "c", "B2", "d"}, order); diff != "" {
		t.Errorf("the order the writes ran in (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"B1", "a", "c", "d", "lead"}, h.keys()); diff != "" {
		t.Errorf("committed keys (-want +got):\n%s", diff)
	}
	// The leader's, B1's group, d's after B2 failed.
	if got := walCommits(t, h.path); got != 3 {
		t.Errorf("the writes committed in %d transactions, want 3", got)
	}
}
