package sqlite_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/sqlite"
)

// TestFilesPrivate checks that the database file and the WAL and
// shared-memory files SQLite creates beside it are readable by their owner
// only, where the usual umask (022) would leave them readable by all.
func TestFilesPrivate(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no Unix permissions")
	}
	// The usual umask, whatever the test process was started with: under
	// 077 every file would be private without the store's doing.
	setUmask(t, 0o022)
	path := filepath.Join(t.TempDir(), "tasks.db")
	s := open(t, sqlite.Options{Path: path})
	if _, err := s.Enqueue(context.Background(), creation(t), backend.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s: mode %v, want -rw-------", filepath.Base(p), perm)
		}
	}
}
