package sqlite_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/taskwire/taskwire/admin"
	"github.com/taskwire/taskwire/store/sqlite"
)

// TestReady checks Ready on a store that can serve and on each way it
// cannot, with the reason /readyz would show.
func TestReady(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name   string
		breakS func(t *testing.T, s *sqlite.Store)
		reason string // "": ready
	}{
		{"ready", func(*testing.T, *sqlite.Store) {}, ""},
		{"schema outdated", func(t *testing.T, s *sqlite.Store) {
			debugExec(t, s, `DELETE FROM schema_version WHERE version = (SELECT max(version) FROM schema_version)`)
		}, "schema outdated"},
		{"schema too new", func(t *testing.T, s *sqlite.Store) {
			debugExec(t, s, `INSERT INTO schema_version (version, name, applied_at) SELECT max(version) + 1, 'future', 0 FROM schema_version`)
		}, "schema too new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db")})
			tt.breakS(t, s)
			err := s.Ready(ctx)
			switch {
			case tt.reason == "" && err != nil:
				t.Fatalf("Ready: %v", err)
			case tt.reason != "" && err == nil:
				t.Fatalf("Ready succeeded; want %q", tt.reason)
			case tt.reason != "" && admin.Reason(err) != tt.reason:
				t.Errorf("reason %q (error %v), want %q", admin.Reason(err), err, tt.reason)
			}
		})
	}
}

// TestReadyReadOnlyFile checks that a store whose file cannot be written
// (opened without migrating, as a process restarted on a file made
// read-only would be) is not ready.
func TestReadyReadOnlyFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "tasks.db")
	open(t, sqlite.Options{Path: path}).Close()
	makeReadOnly(t, path)
	s, err := sqlite.Open(ctx, sqlite.Options{Path: path, NoMigrate: true, Logger: quiet})
	if err != nil {
		t.Skipf("a read-only file does not open without migrating here: %v", err)
	}
	defer s.Close()
	err = s.Ready(ctx)
	if err == nil {
		t.Fatal("Ready succeeded on a read-only file")
	}
	if got, want := admin.Reason(err), "store read-only or unwritable"; got != want {
		t.Errorf("reason %q (error %v), want %q", got, err, want)
	}
}

func debugExec(t *testing.T, s *sqlite.Store, query string) {
	t.Helper()
	var n int
	if err := s.DebugQueryRow(query + ` RETURNING 1`).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// makeReadOnly makes path unwritable for this process until t ends: by
// permissions for an ordinary user, by the immutable attribute for root.
func makeReadOnly(t *testing.T, path string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if err := os.Chmod(path, 0o400); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(path, 0o600) })
		return
	}
	if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
		t.Skipf("running as root and chattr +i is unavailable: %v %s", err, out)
	}
	t.Cleanup(func() { exec.Command("chattr", "-i", path).Run() })
}
