package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/worker"
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
	done := make(chan error, 1)
	go func() {
		_, err := s.Enqueue(context.Background(), creation(t), worker.EnqueueOptions{})
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
	if _, err := s.Enqueue(context.Background(), creation(t), worker.EnqueueOptions{}); err != nil {
		t.Fatalf("Enqueue after the writer is free: %v", err)
	}
}

// TestTimeoutValidated checks Options.Timeout's range.
func TestTimeoutValidated(t *testing.T) {
	_, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "x.db"), Timeout: -time.Second})
	if err == nil {
		t.Error("Open accepted a negative Timeout")
	}
}
