package memory_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/memory"
	"github.com/taskwire/taskwire/session/sessiontest"
)

func TestSuite(t *testing.T) {
	sessiontest.Run(t, func(t *testing.T) session.Store {
		s, err := memory.New(memory.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}

// TestFull: at MaxSessions, Create makes room by dropping expired records
// and otherwise fails with ErrFull.
func TestFull(t *testing.T) {
	s, err := memory.New(memory.Options{MaxSessions: 2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Unix(1000, 0)
	rec := func(id string, ttl time.Duration) session.Record {
		return session.Record{Key: sessiontest.Key(id), CreatedAt: now, LastUsedAt: now, ExpiresAt: now.Add(ttl), IdleTimeout: time.Hour}
	}
	for i := range 2 {
		if err := s.Create(ctx, rec(fmt.Sprint(i), time.Minute), session.Limits{}, now); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Create(ctx, rec("x", time.Hour), session.Limits{}, now); !errors.Is(err, session.ErrFull) {
		t.Fatalf("Create beyond MaxSessions: err = %v, want ErrFull", err)
	}
	later := now.Add(2 * time.Minute)
	if err := s.Create(ctx, rec("x", time.Hour), session.Limits{}, later); err != nil {
		t.Fatalf("Create once the others expired: %v", err)
	}
	if n := s.Len(); n != 1 {
		t.Errorf("Len = %d, want 1 (expired records dropped)", n)
	}
}

func TestNegativeMax(t *testing.T) {
	if _, err := memory.New(memory.Options{MaxSessions: -1}); err == nil {
		t.Error("New accepted a negative MaxSessions")
	}
}

// TestCountLive: expired and idle records count as gone before any sweep
// removes them.
func TestCountLive(t *testing.T) {
	s, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Unix(1000, 0)
	for i, r := range []struct{ ttl, idle time.Duration }{
		{time.Hour, time.Hour}, {time.Minute, time.Hour}, {time.Hour, time.Minute},
	} {
		rec := session.Record{Key: sessiontest.Key(fmt.Sprint(i)), CreatedAt: now, LastUsedAt: now,
			ExpiresAt: now.Add(r.ttl), IdleTimeout: r.idle}
		if err := s.Create(ctx, rec, session.Limits{}, now); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		at   time.Duration
		want int
	}{{0, 3}, {time.Minute, 1}, {time.Hour, 0}} {
		if got := s.CountLive(now.Add(tc.at)); got != tc.want {
			t.Errorf("CountLive after %v = %d, want %d", tc.at, got, tc.want)
		}
	}
	if s.Len() != 3 {
		t.Errorf("CountLive removed records: %d held, want 3", s.Len())
	}
}
