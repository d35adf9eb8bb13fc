package main

import (
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartupChecks checks that serve, worker and migrate refuse an
// unusable store before they print that they run, with a message naming
// the file or host and what to do.
func TestStartupChecks(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "tasks.db")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"serve, missing directory", []string{"serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + missing},
			[]string{"serve: store sqlite:" + missing, "does not exist", "mkdir -p"}},
		{"worker, missing directory", []string{"worker", "--store", missing},
			[]string{"worker: store sqlite:" + missing, "does not exist"}},
		{"migrate, missing directory", []string{"migrate", "--store", missing},
			[]string{"migrate: store sqlite:" + missing, "does not exist"}},
		{"postgres without a database", []string{"migrate", "--store", "postgres://app:hunter2@db.internal:5432"},
			[]string{"names no database", "postgres://USER@HOST/DB"}},
		{"non-positive connect timeout", []string{"migrate", "--store", "x.db", "--connect-timeout", "0"},
			[]string{"--connect-timeout must be positive"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			err := run(t.Context(), tt.args, &out, io.Discard, noEnv)
			if err == nil {
				t.Fatalf("%v succeeded:\n%s", tt.args, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the password: %v", err)
			}
			if out.Len() != 0 {
				t.Errorf("printed before the check failed:\n%s", out.String())
			}
		})
	}
}

// TestMigrateFrozenServer checks that migrate against a PostgreSQL that
// accepts connections but never answers fails within --connect-timeout,
// naming host, port and database, where it used to hang.
func TestMigrateFrozenServer(t *testing.T) {
	spec, proxy := proxiedPostgres(t)
	proxy.Freeze()
	start := time.Now()
	err := run(t.Context(), []string{"migrate", "--store", spec.URL, "--schema", spec.Schema,
		"--connect-timeout", "300ms", "--log-level", "error"}, io.Discard, io.Discard, noEnv)
	if err == nil {
		t.Fatal("migrate against a frozen server succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("migrate took %v", d)
	}
	for _, w := range []string{"host 127.0.0.1", "port ", "database ", "answering within 300ms"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}
