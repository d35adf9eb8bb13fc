// Package sessiontest is the behavioural suite every session.Store must
// pass. A backend's test calls Run with a function that returns a new,
// empty store for each subtest.
package sessiontest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/session"
)

// Run runs the suite. newStore must return an empty store that no other
// subtest uses; it may register cleanups on t.
func Run(t *testing.T, newStore func(t *testing.T) session.Store) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, newStore(t))
		})
	}
}

// Base is the fixed time the suite's records are created at, with
// millisecond precision, the precision stores must keep. A backend's own
// tests can use it with Record.
var Base = time.Date(2026, 3, 4, 5, 6, 7, 8_000_000, time.UTC)

// base is Base, for brevity inside the suite.
var base = Base

// Key returns the key of a made-up session ID: the digest a server would
// compute.
func Key(id string) string {
	d := sha256.Sum256([]byte(id))
	return hex.EncodeToString(d[:])
}

// Record returns a live 2025-11-25 record of the made-up session ID id for
// principal p (endpoint "mcp", tenant "t1"), created and last used at
// Base, expiring a day later, idle timeout 30 minutes: the record the suite
// writes, for a backend's own tests.
func Record(id, p string) session.Record {
	return session.Record{
		Key: Key(id), Endpoint: "mcp", Tenant: "t1", Principal: p,
		ProtocolVersion:    "2025-11-25",
		ClientCapabilities: []byte(`{"elicitation":{}}`),
		ClientInfo:         []byte(`{"name":"c","version":"1"}`),
		CreatedAt:          base, LastUsedAt: base,
		ExpiresAt: base.Add(24 * time.Hour), IdleTimeout: 30 * time.Minute,
	}
}

type testCase struct {
	name string
	run  func(t *testing.T, s session.Store)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustCreate(t *testing.T, s session.Store, r session.Record, max int, now time.Time) {
	t.Helper()
	if err := s.Create(ctx(t), r, session.Limits{PerOwner: max}, now); err != nil {
		t.Fatalf("Create: %v", err)
	}
}

func wantNotFound(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, session.ErrNotFound) {
		t.Errorf("%s: err = %v, want session.ErrNotFound", what, err)
	}
}

// normalize makes records comparable across backends: times in UTC at
// millisecond precision, empty JSON as nil.
func normalize(r session.Record) session.Record {
	for _, p := range []*time.Time{&r.CreatedAt, &r.LastUsedAt, &r.ExpiresAt} {
		*p = p.UTC().Truncate(time.Millisecond)
	}
	if len(r.ClientCapabilities) == 0 {
		r.ClientCapabilities = nil
	}
	if len(r.ClientInfo) == 0 {
		r.ClientInfo = nil
	}
	return r
}

func load(t *testing.T, s session.Store, key string, now time.Time) (session.Record, error) {
	t.Helper()
	r, err := s.Load(ctx(t), key, now)
	return normalize(r), err
}

var cases = []testCase{
	{"RoundTrip", func(t *testing.T, s session.Store) {
		want := Record("a", "alice")
		mustCreate(t, s, want, 0, base)
		got, err := load(t, s, want.Key, base.Add(time.Second))
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		if diff := cmp.Diff(normalize(want), got); diff != "" {
			t.Errorf("Load (-want +got):\n%s", diff)
		}
	}},
	{"UnknownKey", func(t *testing.T, s session.Store) {
		mustCreate(t, s, Record("a", "alice"), 0, base)
		_, err := s.Load(ctx(t), Key("b"), base)
		wantNotFound(t, "Load", err)
		wantNotFound(t, "Touch", s.Touch(ctx(t), Key("b"), base))
		wantNotFound(t, "SetLogLevel", s.SetLogLevel(ctx(t), Key("b"), "debug", base))
		wantNotFound(t, "Delete", s.Delete(ctx(t), Key("b"), base))
	}},
	{"DuplicateKey", func(t *testing.T, s session.Store) {
		mustCreate(t, s, Record("a", "alice"), 0, base)
		if err := s.Create(ctx(t), Record("a", "bob"), session.Limits{PerOwner: 0}, base); err == nil {
			t.Fatal("second Create with the same key succeeded")
		}
		got, err := load(t, s, Key("a"), base)
		if err != nil || got.Principal != "alice" {
			t.Errorf("after duplicate Create: principal %q, err %v; want alice", got.Principal, err)
		}
	}},
	{"Delete", func(t *testing.T, s session.Store) {
		mustCreate(t, s, Record("a", "alice"), 0, base)
		if err := s.Delete(ctx(t), Key("a"), base); err != nil {
			t.Fatalf("Delete: %v", err)
		}
		_, err := s.Load(ctx(t), Key("a"), base)
		wantNotFound(t, "Load after Delete", err)
		wantNotFound(t, "second Delete", s.Delete(ctx(t), Key("a"), base))
		wantNotFound(t, "Touch after Delete", s.Touch(ctx(t), Key("a"), base))
	}},
	{"AbsoluteExpiry", func(t *testing.T, s session.Store) {
		r := Record("a", "alice")
		r.IdleTimeout = 48 * time.Hour
		mustCreate(t, s, r, 0, base)
		if _, err := load(t, s, r.Key, r.ExpiresAt.Add(-time.Millisecond)); err != nil {
			t.Fatalf("Load just before ExpiresAt: %v", err)
		}
		_, err := s.Load(ctx(t), r.Key, r.ExpiresAt)
		wantNotFound(t, "Load at ExpiresAt", err)
		wantNotFound(t, "Touch at ExpiresAt", s.Touch(ctx(t), r.Key, r.ExpiresAt))
		wantNotFound(t, "Delete at ExpiresAt", s.Delete(ctx(t), r.Key, r.ExpiresAt))
	}},
	{"IdleExpiryAndTouch", func(t *testing.T, s session.Store) {
		r := Record("a", "alice")
		mustCreate(t, s, r, 0, base)
		later := base.Add(r.IdleTimeout - time.Minute)
		if err := s.Touch(ctx(t), r.Key, later); err != nil {
			t.Fatalf("Touch: %v", err)
		}
		// Without the touch the session would have idled out here.
		got, err := load(t, s, r.Key, base.Add(r.IdleTimeout+time.Minute))
		if err != nil {
			t.Fatalf("Load after Touch: %v", err)
		}
		if !got.LastUsedAt.Equal(later) {
			t.Errorf("LastUsedAt = %v, want %v", got.LastUsedAt, later)
		}
		_, err = s.Load(ctx(t), r.Key, later.Add(r.IdleTimeout))
		wantNotFound(t, "Load one idle timeout after the touch", err)
	}},
	{"SetLogLevel", func(t *testing.T, s session.Store) {
		r := Record("a", "alice")
		mustCreate(t, s, r, 0, base)
		if err := s.SetLogLevel(ctx(t), r.Key, "warning", base); err != nil {
			t.Fatalf("SetLogLevel: %v", err)
		}
		got, err := load(t, s, r.Key, base)
		if err != nil || got.LogLevel != "warning" {
			t.Errorf("LogLevel = %q, err %v; want warning", got.LogLevel, err)
		}
	}},
	{"PerOwnerLimit", func(t *testing.T, s session.Store) {
		for i := range 3 {
			mustCreate(t, s, Record(fmt.Sprint("a", i), "alice"), 3, base)
		}
		if err := s.Create(ctx(t), Record("a3", "alice"), session.Limits{PerOwner: 3}, base); !errors.Is(err, session.ErrLimit) {
			t.Fatalf("fourth Create: err = %v, want ErrLimit", err)
		}
		_, err := s.Load(ctx(t), Key("a3"), base)
		wantNotFound(t, "Load of the refused session", err)
		// Other owners are not affected: another principal, tenant or endpoint.
		mustCreate(t, s, Record("b0", "bob"), 3, base)
		other := Record("c0", "alice")
		other.Tenant = "t2"
		mustCreate(t, s, other, 3, base)
		other = Record("d0", "alice")
		other.Endpoint = "admin"
		mustCreate(t, s, other, 3, base)
		// A deleted session frees its place; so does an expired one.
		if err := s.Delete(ctx(t), Key("a0"), base); err != nil {
			t.Fatal(err)
		}
		mustCreate(t, s, Record("a4", "alice"), 3, base)
		short := Record("a5", "alice")
		if err := s.Create(ctx(t), short, session.Limits{PerOwner: 3}, base); !errors.Is(err, session.ErrLimit) {
			t.Fatalf("Create at the limit again: err = %v, want ErrLimit", err)
		}
		after := base.Add(31 * time.Minute) // every alice session has idled out
		mustCreate(t, s, Record("a6", "alice"), 3, after)
	}},
	{"TotalLimit", func(t *testing.T, s session.Store) {
		total := session.Limits{Total: 3}
		short := Record("a0", "alice")
		short.ExpiresAt = base.Add(time.Minute)
		if err := s.Create(ctx(t), short, total, base); err != nil {
			t.Fatal(err)
		}
		for i, p := range []string{"bob", "carol"} {
			if err := s.Create(ctx(t), Record(fmt.Sprint("b", i), p), total, base); err != nil {
				t.Fatal(err)
			}
		}
		// Every owner counts, whatever its own limit.
		if err := s.Create(ctx(t), Record("d0", "dave"), session.Limits{PerOwner: 5, Total: 3}, base); !errors.Is(err, session.ErrFull) {
			t.Fatalf("Create beyond Total: err = %v, want ErrFull", err)
		}
		_, err := s.Load(ctx(t), Key("d0"), base)
		wantNotFound(t, "Load of the refused session", err)
		// The owner's limit is checked too, and reported as such.
		if err := s.Create(ctx(t), Record("b2", "bob"), session.Limits{PerOwner: 1, Total: 10}, base); !errors.Is(err, session.ErrLimit) {
			t.Fatalf("Create at the owner's limit: err = %v, want ErrLimit", err)
		}
		// A deleted session frees its place; so does an expired one.
		if err := s.Delete(ctx(t), Key("b0"), base); err != nil {
			t.Fatal(err)
		}
		if err := s.Create(ctx(t), Record("d1", "dave"), total, base); err != nil {
			t.Fatalf("Create after a Delete: %v", err)
		}
		later := base.Add(2 * time.Minute) // a0 has expired, unswept
		if err := s.Create(ctx(t), Record("d2", "dave"), total, later); err != nil {
			t.Fatalf("Create after an expiry: %v", err)
		}
		if err := s.Create(ctx(t), Record("d3", "dave"), total, later); !errors.Is(err, session.ErrFull) {
			t.Fatalf("Create at Total again: err = %v, want ErrFull", err)
		}
	}},
	{"ConcurrentCreateAtTotal", func(t *testing.T, s session.Store) {
		const total, tries = 5, 40
		var ok atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, tries)
		for i := range tries {
			wg.Go(func() {
				// Every create is another owner: only Total holds them back.
				err := s.Create(ctx(t), Record(fmt.Sprint("c", i), fmt.Sprint("p", i)), session.Limits{PerOwner: 2, Total: total}, base)
				switch {
				case err == nil:
					ok.Add(1)
				case !errors.Is(err, session.ErrFull):
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("Create: %v", err)
		}
		if got := ok.Load(); got != total {
			t.Errorf("%d concurrent creates succeeded, want exactly %d", got, total)
		}
	}},
	{"ConcurrentCreateAtLimit", func(t *testing.T, s session.Store) {
		const limit, tries = 5, 40
		var ok atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, tries)
		for i := range tries {
			wg.Go(func() {
				err := s.Create(ctx(t), Record(fmt.Sprint("c", i), "carol"), session.Limits{PerOwner: limit}, base)
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
			t.Errorf("%d concurrent creates succeeded, want exactly %d", got, limit)
		}
	}},
	{"Sweep", func(t *testing.T, s session.Store) {
		for i := range 5 {
			r := Record(fmt.Sprint("old", i), "alice")
			r.ExpiresAt = base.Add(time.Minute)
			mustCreate(t, s, r, 0, base)
		}
		mustCreate(t, s, Record("new", "alice"), 0, base)
		now := base.Add(2 * time.Minute)
		n, err := s.Sweep(ctx(t), now, 3)
		if err != nil || n != 3 {
			t.Fatalf("first Sweep = %d, %v; want 3 (the limit)", n, err)
		}
		n, err = s.Sweep(ctx(t), now, 100)
		if err != nil || n != 2 {
			t.Fatalf("second Sweep = %d, %v; want the 2 left", n, err)
		}
		if _, err := s.Load(ctx(t), Key("new"), now); err != nil {
			t.Errorf("the live session was swept: %v", err)
		}
	}},
	{"CanceledContext", func(t *testing.T, s session.Store) {
		c, cancel := context.WithCancel(context.Background())
		cancel()
		if err := s.Create(c, Record("a", "alice"), session.Limits{PerOwner: 0}, base); err == nil {
			t.Error("Create with a canceled context succeeded")
		}
		if _, err := s.Load(c, Key("a"), base); err == nil {
			t.Error("Load with a canceled context succeeded")
		}
	}},
}
