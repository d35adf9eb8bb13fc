package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/sqlite"
)

// TestEventsAcrossStores opens two Stores on one file, as two processes
// would, and checks that each one's subscribers hear of the other's
// changes through the outbox, and of their own store's changes exactly once.
func TestEventsAcrossStores(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := open(t, sqlite.Options{Path: path, EventPoll: 5 * time.Millisecond})
	b := open(t, sqlite.Options{Path: path, EventPoll: 5 * time.Millisecond})
	heard := make(chan string, 16)
	unsubscribe := a.EventPublisher().Subscribe(func(id string) { heard <- id })
	defer unsubscribe()
	next := func() string {
		t.Helper()
		select {
		case id := <-heard:
			return id
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10 s")
			return ""
		}
	}
	ctx := context.Background()

	own, err := a.Enqueue(ctx, creation(t), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := next(); got != own.ID() {
		t.Fatalf("A heard %q first, want its own task %q", got, own.ID())
	}
	other, err := b.Enqueue(ctx, creation(t), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The poll that brings B's row reads the range that holds A's own row
	// too: had A published its own row again, it would come first.
	if got := next(); got != other.ID() {
		t.Fatalf("A heard %q, want B's task %q", got, other.ID())
	}
	if err := b.RequestCancel(ctx, reqCtx(own.ID())); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != own.ID() {
		t.Fatalf("A heard %q, want B's change to %q", got, own.ID())
	}
}
