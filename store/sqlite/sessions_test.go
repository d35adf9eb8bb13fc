package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/sessiontest"
	"github.com/taskwire/taskwire/store/internal/sessiondata"
	"github.com/taskwire/taskwire/store/sqlite"
)

// TestSessionsSurviveRestart: a session written by one Store is read,
// byte for byte, by another Store on the same file and after a restart.
func TestSessionsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	ctx := context.Background()
	a, err := sqlite.Open(ctx, sqlite.Options{Path: path, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	b := open(t, sqlite.Options{Path: path})
	want := sessiontest.Record("s1", "alice")
	if err := a.Sessions().Create(ctx, want, session.Limits{PerOwner: 10}, sessiontest.Base); err != nil {
		t.Fatalf("Create: %v", err)
	}
	if err := a.Sessions().SetLogLevel(ctx, want.Key, "debug", sessiontest.Base); err != nil {
		t.Fatalf("SetLogLevel: %v", err)
	}
	want.LogLevel = "debug"
	got, err := b.Sessions().Load(ctx, want.Key, sessiontest.Base.Add(time.Minute))
	if err != nil {
		t.Fatalf("Load through another Store: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load through another Store (-want +got):\n%s", diff)
	}
	a.Close()
	c := open(t, sqlite.Options{Path: path})
	if got, err = c.Sessions().Load(ctx, want.Key, sessiontest.Base.Add(time.Minute)); err != nil {
		t.Fatalf("Load after restart: %v", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Load after restart (-want +got):\n%s", diff)
	}
	// Only the digest is stored.
	var n int
	if err := c.DebugQueryRow(`SELECT count(*) FROM sessions WHERE key = ?`, want.Key).Scan(&n); err != nil || n != 1 {
		t.Fatalf("sessions rows with the key: %d, %v", n, err)
	}
}

// TestSessionsLimitAcrossStores: creates through two Stores on one file (as
// two processes would) never exceed the per-owner limit.
func TestSessionsLimitAcrossStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	stores := []*sqlite.Store{open(t, sqlite.Options{Path: path}), open(t, sqlite.Options{Path: path})}
	const limit, tries = 5, 40
	var ok atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, tries)
	for i := range tries {
		wg.Go(func() {
			err := stores[i%2].Sessions().Create(context.Background(), sessiontest.Record(fmt.Sprint("c", i), "carol"), session.Limits{PerOwner: limit}, sessiontest.Base)
			switch {
			case err == nil:
				ok.Add(1)
			case !errors.Is(err, session.ErrLimit):
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("Create: %v", err)
	}
	if got := ok.Load(); got != limit {
		t.Errorf("%d creates succeeded, want exactly %d", got, limit)
	}
}

// TestSessionsRefuseBadInput: malformed keys are unknown without an error,
// unstorable records are refused and store nothing.
func TestSessionsRefuseBadInput(t *testing.T) {
	s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db")})
	ss := s.Sessions()
	ctx := context.Background()
	for name, key := range map[string]string{
		"empty": "", "upper case": strings.ToUpper(sessiontest.Key("x")), "short": sessiontest.Key("x")[1:],
		"SQL": "' OR 1=1 --", "huge": strings.Repeat("a", 1<<20),
	} {
		if _, err := ss.Load(ctx, key, sessiontest.Base); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Load(%s key): %v, want ErrNotFound", name, err)
		}
		if err := ss.Touch(ctx, key, sessiontest.Base); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Touch(%s key): %v, want ErrNotFound", name, err)
		}
		if err := ss.Delete(ctx, key, sessiontest.Base); !errors.Is(err, session.ErrNotFound) {
			t.Errorf("Delete(%s key): %v, want ErrNotFound", name, err)
		}
	}
	for name, mutate := range map[string]func(r *session.Record){
		"NUL principal": func(r *session.Record) { r.Principal = "a\x00" },
		"huge info":     func(r *session.Record) { r.ClientInfo = make([]byte, sessiondata.MaxJSON+1) },
		"bad key":       func(r *session.Record) { r.Key = "k" },
	} {
		r := sessiontest.Record("bad", "alice")
		mutate(&r)
		if err := ss.Create(ctx, r, session.Limits{}, sessiontest.Base); !errors.Is(err, sessiondata.ErrInvalid) {
			t.Errorf("Create(%s): %v, want ErrInvalid", name, err)
		}
	}
	if err := ss.SetLogLevel(ctx, sessiontest.Key("bad"), "\xff", sessiontest.Base); !errors.Is(err, sessiondata.ErrInvalid) {
		t.Errorf("SetLogLevel(invalid UTF-8): %v", err)
	}
	var n int
	if err := s.DebugQueryRow(`SELECT count(*) FROM sessions`).Scan(&n); err != nil || n != 0 {
		t.Errorf("sessions stored after refused creates: %d, %v", n, err)
	}
}

// TestSessionsSweepAndDelete: Sweep is bounded and removes only ended
// sessions; Delete removes an ended row too, answering ErrNotFound.
func TestSessionsSweepAndDelete(t *testing.T) {
	s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db")})
	ss := s.Sessions()
	ctx := context.Background()
	for i := range 30 {
		r := sessiontest.Record(fmt.Sprint("old", i), "alice")
		r.IdleTimeout = time.Duration(1+i) * time.Second // ends one by one
		if err := ss.Create(ctx, r, session.Limits{}, sessiontest.Base); err != nil {
			t.Fatal(err)
		}
	}
	live := sessiontest.Record("live", "alice")
	if err := ss.Create(ctx, live, session.Limits{}, sessiontest.Base); err != nil {
		t.Fatal(err)
	}
	now := sessiontest.Base.Add(10 * time.Second) // ten ended
	for _, tc := range []struct{ limit, want int }{{0, 0}, {-3, 0}, {4, 4}, {1 << 30, 6}, {100, 0}} {
		if n, err := ss.Sweep(ctx, now, tc.limit); err != nil || n != tc.want {
			t.Errorf("Sweep(limit %d) = %d, %v; want %d", tc.limit, n, err, tc.want)
		}
	}
	// An ended but unswept session: Delete says not found, and removes it.
	ended := sessiontest.Key("old20")
	if err := ss.Delete(ctx, ended, sessiontest.Base.Add(time.Hour)); !errors.Is(err, session.ErrNotFound) {
		t.Errorf("Delete of an ended session: %v, want ErrNotFound", err)
	}
	var n int
	if err := s.DebugQueryRow(`SELECT count(*) FROM sessions WHERE key = ?`, ended).Scan(&n); err != nil || n != 0 {
		t.Errorf("ended session still stored after Delete: %d, %v", n, err)
	}
	if _, err := ss.Load(ctx, live.Key, now); err != nil {
		t.Errorf("live session after the sweeps: %v", err)
	}
}

// TestSessionsTouchNeverShortens: a Touch with an earlier time (a node
// whose clock lags) leaves LastUsedAt where it was.
func TestSessionsTouchNeverShortens(t *testing.T) {
	ss := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db")}).Sessions()
	ctx := context.Background()
	r := sessiontest.Record("s", "alice")
	if err := ss.Create(ctx, r, session.Limits{}, sessiontest.Base); err != nil {
		t.Fatal(err)
	}
	later := sessiontest.Base.Add(10 * time.Minute)
	for _, at := range []time.Time{later, sessiontest.Base.Add(time.Minute)} {
		if err := ss.Touch(ctx, r.Key, at); err != nil {
			t.Fatalf("Touch: %v", err)
		}
	}
	got, err := ss.Load(ctx, r.Key, later)
	if err != nil || !got.LastUsedAt.Equal(later) {
		t.Fatalf("LastUsedAt = %v, %v; want %v", got.LastUsedAt, err, later)
	}
}

// TestSessionsTimeout: with the writer held, every session write fails
// after Options.Timeout instead of waiting.
func TestSessionsTimeout(t *testing.T) {
	s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Timeout: 200 * time.Millisecond})
	ss := s.Sessions()
	r := sessiontest.Record("s", "alice")
	if err := ss.Create(context.Background(), r, session.Limits{}, sessiontest.Base); err != nil {
		t.Fatal(err)
	}
	release, err := s.HoldWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	writes := map[string]func(context.Context) error{
		"Create": func(ctx context.Context) error {
			return ss.Create(ctx, sessiontest.Record("t", "alice"), session.Limits{PerOwner: 5}, sessiontest.Base)
		},
		"Touch":       func(ctx context.Context) error { return ss.Touch(ctx, r.Key, sessiontest.Base) },
		"SetLogLevel": func(ctx context.Context) error { return ss.SetLogLevel(ctx, r.Key, "info", sessiontest.Base) },
		"Delete":      func(ctx context.Context) error { return ss.Delete(ctx, r.Key, sessiontest.Base) },
		"Sweep":       func(ctx context.Context) error { _, err := ss.Sweep(ctx, sessiontest.Base, 10); return err },
	}
	for name, fn := range writes {
		done := make(chan error, 1)
		go func() { done <- fn(context.Background()) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s with the writer held: %v, want a deadline error", name, err)
			}
		case <-time.After(20 * time.Second):
			release()
			<-done
			t.Fatalf("%s still waiting for the writer after 20 s", name)
		}
	}
}

// TestIndexesServeTheQueries: the per-owner count, the sweep and the task
// listing read their indexes, so none scans other owners' or tenants' rows.
func TestIndexesServeTheQueries(t *testing.T) {
	s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db")})
	for _, tc := range []struct {
		name, query, want string
		args              []any
	}{
		{"owner count", sqlite.SQLCountOwnerSessions, "USING COVERING INDEX sessions_owner (endpoint=? AND tenant=? AND principal=? AND ends_at>?)",
			[]any{"e", "t", "p", 0, 5}},
		{"sweep", sqlite.SQLSweepSessions, "USING COVERING INDEX sessions_ends (ends_at<?)", []any{0, 5}},
		{"list", sqlite.SQLListTasks, "USING INDEX tasks_list (endpoint=? AND tenant=?", []any{"e", "t", 0, 0, "", 5}},
	} {
		plan, err := s.DebugQueryPlan(tc.query, tc.args...)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		joined := strings.Join(plan, "\n")
		t.Logf("%s: %s", tc.name, joined)
		if !strings.Contains(joined, tc.want) || strings.Contains(joined, "TEMP B-TREE") {
			t.Errorf("%s: plan\n%s\nwant a step with %q and no sort", tc.name, joined, tc.want)
		}
	}
}

// TestSessionSuite runs the shared session.Store suite on real files.
func TestSessionSuite(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		return open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db")}).Sessions()
	})
}
