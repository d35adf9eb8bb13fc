package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/sessiontest"
	"github.com/taskwire/taskwire/store/internal/sessiondata"
)

// TestSessionsConcurrentLimit: goroutines on three nodes (Stores on one
// schema, each with its own pool) create sessions for the same owners at
// once; each owner ends with exactly the limit live, whatever the
// interleaving, and the refused creates store nothing.
func TestSessionsConcurrentLimit(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	var nodes []*Sessions
	for range 3 {
		nodes = append(nodes, openWithHooks(t, Options{Schema: schema, MaxConns: 8}, testHooks{}).Sessions().(*Sessions))
	}
	const limit, perOwner = 4, 48
	owners := []string{"alice", "bob", "carol"}
	var wg sync.WaitGroup
	created := map[string]*atomic.Int32{}
	for _, o := range owners {
		created[o] = new(atomic.Int32)
	}
	errs := make(chan error, perOwner*len(owners))
	start := make(chan struct{})
	for i := range perOwner * len(owners) {
		owner := owners[i%len(owners)]
		wg.Go(func() {
			<-start
			err := nodes[i%len(nodes)].Create(context.Background(), sessiontest.Record(fmt.Sprint("s", i), owner), session.Limits{PerOwner: limit}, sessiontest.Base)
			switch {
			case err == nil:
				created[owner].Add(1)
			case !errors.Is(err, session.ErrLimit):
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Create: %v", err)
	}
	for _, o := range owners {
		var stored int
		if err := nodes[0].s.pool.QueryRow(ctxT(t), `SELECT count(*) FROM `+nodes[0].s.q.ident+`.sessions WHERE principal = $1`,
			o).Scan(&stored); err != nil {
			t.Fatal(err)
		}
		if got := created[o].Load(); got != limit || stored != limit {
			t.Errorf("%s: %d creates succeeded and %d rows stored, want exactly %d", o, got, stored, limit)
		}
	}
}

// TestSessionsAcrossNodes: a session created on one node is read, byte for
// byte, on another and after a restart; a deletion on one is seen by all.
func TestSessionsAcrossNodes(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openWithHooks(t, Options{Schema: schema}, testHooks{})
	b := openWithHooks(t, Options{Schema: schema}, testHooks{})
	ctx := ctxT(t)
	want := sessiontest.Record("s1", "alice")
	if err := a.Sessions().Create(ctx, want, session.Limits{PerOwner: 10}, sessiontest.Base); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := b.Sessions().SetLogLevel(ctx, want.Key, "notice", sessiontest.Base); err != nil {
		t.Fatalf("SetLogLevel on the other node: %v", err)
	}
	want.LogLevel = "notice"
	a.Close()
	c := openWithHooks(t, Options{Schema: schema}, testHooks{})
	got, err := c.Sessions().Load(ctx, want.Key, sessiontest.Base.Add(time.Minute))
	if err != nil {
		t.Fatalf("Load after restart: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load after restart (-want +got):\n%s", diff)
	}
	if err := b.Sessions().Delete(ctx, want.Key, sessiontest.Base); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := c.Sessions().Load(ctx, want.Key, sessiontest.Base); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Load after Delete on another node: %v, want ErrNotFound", err)
	}
}

// TestSessionsSweepAndBadInput: Sweep is bounded and takes only ended
// sessions; a Delete of an ended session removes it and answers
// ErrNotFound; malformed keys and unstorable records change nothing.
func TestSessionsSweepAndBadInput(t *testing.T) {
	t.Parallel()
	s := openWithHooks(t, Options{Schema: newSchema(t)}, testHooks{})
	ss := s.Sessions()
	ctx := ctxT(t)
	for i := range 30 {
		r := sessiontest.Record(fmt.Sprint("old", i), "alice")
		r.IdleTimeout = time.Duration(1+i) * time.Second
		if err := ss.Create(ctx, r, session.Limits{}, sessiontest.Base); err != nil {
			t.Fatal(err)
		}
	}
	now := sessiontest.Base.Add(10 * time.Second)
	for _, tc := range []struct{ limit, want int }{{0, 0}, {-1, 0}, {4, 4}, {1 << 30, 6}, {100, 0}} {
		if n, err := ss.Sweep(ctx, now, tc.limit); err != nil || n != tc.want {
			t.Errorf("Sweep(limit %d) = %d, %v; want %d", tc.limit, n, err, tc.want)
		}
	}
	ended := sessiontest.Key("old20")
	if err := ss.Delete(ctx, ended, sessiontest.Base.Add(time.Hour)); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Delete of an ended session: %v, want ErrNotFound", err)
	}
	count := func() int {
		var n int
		if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.q.ident+`.sessions`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 19 {
		t.Errorf("%d sessions stored, want 19", n)
	}
	for _, key := range []string{"", strings.ToUpper(sessiontest.Key("old25")), "' OR true --", strings.Repeat("a", 1<<20)} {
		if _, err := ss.Load(ctx, key, sessiontest.Base); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Load(malformed key): %v", err)
		}
		if err := ss.Delete(ctx, key, sessiontest.Base); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Delete(malformed key): %v", err)
		}
	}
	bad := sessiontest.Record("bad", "a\x00b")
	if err := ss.Create(ctx, bad, session.Limits{}, sessiontest.Base); !errors.Is(err, sessiondata.ErrInvalid) {
		t.Errorf("Create with a NUL in the principal: %v, want ErrInvalid", err)
	}
	if err := ss.SetLogLevel(ctx, sessiontest.Key("old25"), "\xff", sessiontest.Base); !errors.Is(err, sessiondata.ErrInvalid) {
		t.Errorf("SetLogLevel(invalid UTF-8): %v", err)
	}
	if n := count(); n != 19 {
		t.Errorf("%d sessions stored after bad input, want 19", n)
	}
}

// TestIndexesServeTheQueries: with sequential scans priced out (the tables
// are tiny), the per-owner count, the sweep and the task listing each read
// their index, and the listing needs no sort.
func TestIndexesServeTheQueries(t *testing.T) {
	t.Parallel()
	s := openWithHooks(t, Options{Schema: newSchema(t)}, testHooks{})
	ctx := ctxT(t)
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SET enable_seqscan = off`); err != nil {
		t.Fatal(err)
	}
	defer conn.Exec(context.Background(), `RESET enable_seqscan`)
	for _, tc := range []struct {
		name, query, want string
		args              []any
	}{
		{"owner count", s.q.createSession, "sessions_owner",
			[]any{sessiontest.Key("x"), "e", "t", "p", "v", nil, nil, "", 0, 0, 1, 1, 1, 0, 5}},
		{"sweep", s.q.sweepSessions, "sessions_ends", []any{0, 5}},
		{"list", s.q.listTasks, "Index Scan Backward using tasks_list", []any{nil, "e", "t", listStart, "", 5}},
	} {
		rows, err := conn.Query(ctx, "EXPLAIN "+tc.query, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		joined := strings.Join(plan, "\n")
		if !strings.Contains(joined, tc.want) || strings.Contains(joined, "Sort") {
			t.Errorf("%s: plan\n%s\nwant %q and no sort", tc.name, joined, tc.want)
		}
	}
}

// TestSessionSuite runs the shared session.Store suite, each case on a
// schema of its own.
func TestSessionSuite(t *testing.T) {
	t.Parallel()
	schemas := newSchemaPool(t)
	sessiontest.Run(t, func(t *testing.T) session.Store {
		return openStore(t, schemas.get(t), nil).Sessions()
	})
}
