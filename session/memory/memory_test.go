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
