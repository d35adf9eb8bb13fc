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

// TestOutboxIDsKeepGrowing: the outbox has no AUTOINCREMENT (migration
// 011), so PruneOutbox keeps its newest row and IDs never go back; and
// when a process of an older version empties it, so that IDs start again,
// the other Stores' pollers read on from the start.
func TestOutboxIDsKeepGrowing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.db")
	a := open(t, sqlite.Options{Path: path, EventPoll: 5 * time.Millisecond})
	b := open(t, sqlite.Options{Path: path, EventPoll: 5 * time.Millisecond})
	ctx := context.Background()
	lastID := func() int64 {
		t.Helper()
		var id int64
		if err := a.DebugQueryRow(`SELECT coalesce(max(id), 0) FROM outbox`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	for range 3 {
		if _, err := b.Enqueue(ctx, creation(t), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := lastID()
	p := a.Jobs().(backend.Pruner)
	if n, err := p.PruneOutbox(ctx, time.Now().Add(time.Hour), 100); err != nil || n != 2 {
		t.Fatalf("PruneOutbox = %d, %v; want 2, the newest row kept", n, err)
	}
	if _, err := b.Enqueue(ctx, creation(t), backend.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := lastID(); got != before+1 {
		t.Fatalf("next outbox ID %d, want %d", got, before+1)
	}

	// As an older process's PruneOutbox may: every row goes.
	if _, err := a.DebugExec(`DELETE FROM outbox`); err != nil {
		t.Fatal(err)
	}
	heard := make(chan string, 16)
	defer a.EventPublisher().Subscribe(func(id string) { heard <- id })()
	tk, err := b.Enqueue(ctx, creation(t), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lastID(); got != 1 {
		t.Fatalf("outbox ID after the older process emptied it: %d, want 1", got)
	}
	select {
	case id := <-heard:
		if id != tk.ID() {
			t.Fatalf("A heard %q, want %q", id, tk.ID())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("A heard nothing once the outbox IDs started again")
	}
}
