package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// TestTimeoutBoundsWriterWait holds the one writer connection, as a
// stalled write does: a call that needs it fails after Options.Timeout,
// even when the caller's context has no deadline, and succeeds once the
// writer is free again.
func TestTimeoutBoundsWriterWait(t *testing.T) {
	s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Timeout: 200 * time.Millisecond})
	release, err := s.HoldWriter()
	if err != nil {
		t.Fatal(err)
	}
	cc := creation(t) // not in the goroutine: it may stop the test
	done := make(chan error, 1)
	go func() {
		_, err := s.Enqueue(context.Background(), cc, backend.EnqueueOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Enqueue with the writer held: %v, want a deadline error", err)
		}
	case <-time.After(20 * time.Second):
		release()
		<-done
		t.Fatal("Enqueue still waiting for the writer after 20 s")
	}
	release()
	if _, err := s.Enqueue(context.Background(), creation(t), backend.EnqueueOptions{}); err != nil {
		t.Fatalf("Enqueue after the writer is free: %v", err)
	}
}

// TestTimeoutBoundsReads takes every connection of the read pool and
// checks that each read of the store fails with a deadline error instead of
// waiting for a connection, and works again once the pool is free.
func TestTimeoutBoundsReads(t *testing.T) {
	s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Timeout: 200 * time.Millisecond, ReadConns: 2})
	reads := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"Gauges", func(ctx context.Context) error { _, err := s.Gauges(ctx); return err }},
		{"CountActive", func(ctx context.Context) error {
			_, err := s.CountActive(ctx, task.Owner{Tenant: "acme", Principal: "alice"}, 10)
			return err
		}},
	}
	release, err := s.HoldReaders()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reads {
		done := make(chan error, 1)
		go func() { done <- r.fn(context.Background()) }()
		select {
		case err := <-done:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("%s with the read pool held: %v, want a deadline error", r.name, err)
			}
		case <-time.After(20 * time.Second):
			release()
			<-done
			t.Fatalf("%s still waiting for a read connection after 20 s", r.name)
		}
	}
	release()
	for _, r := range reads {
		if err := r.fn(context.Background()); err != nil {
			t.Errorf("%s after the pool is free: %v", r.name, err)
		}
	}
}

// TestTimeoutValidated checks Options.Timeout's range.
func TestTimeoutValidated(t *testing.T) {
	_, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "x.db"), Timeout: -time.Second})
	if err == nil {
		t.Error("Open accepted a negative Timeout")
	}
}

// TestLockHeldElsewhereIsUnavailable holds the database's write lock from
// another connection, as another process would: a write that gives up
// waiting for it after BusyTimeout fails with task.ErrUnavailable (the
// server's 503 with Retry-After), and succeeds once the lock is free.
func TestLockHeldElsewhereIsUnavailable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	s := open(t, sqlite.Options{Path: path, Timeout: time.Minute, BusyTimeout: 100 * time.Millisecond})
	other, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Enqueue(context.Background(), creation(t), backend.EnqueueOptions{})
	if !errors.Is(err, task.ErrUnavailable) {
		t.Errorf("Enqueue with the write lock held elsewhere: %v, want task.ErrUnavailable", err)
	}
	if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	if _, err := s.Enqueue(context.Background(), creation(t), backend.EnqueueOptions{}); err != nil {
		t.Errorf("Enqueue after the lock is free: %v", err)
	}
}
