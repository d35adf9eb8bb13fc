package e2e

import (
	"path/filepath"
	"testing"
	"time"
)

// TestRecoveryAfterKill is TestCheckpointAfterKill with the worker
// runtime's default lease (30 s) and rescue settings: a worker SIGKILLed
// around page 10 of 20 leaves a job that runs again within seconds, found
// dead by its instance hold, on SQLite when a worker starts again on the
// same node, and on PostgreSQL by another worker already running. The job
// resumes from its checkpoint, its progress never decreases, and it
// completes within its own duration (20 pages of 150 ms) plus 5 s.
func TestRecoveryAfterKill(t *testing.T) {
	const within = crawlPages*150*time.Millisecond + 5*time.Second
	for _, tc := range []struct {
		backend string
		how     crawlKill
	}{
		{"sqlite", crawlKill{within: within}},
		{"postgres", crawlKill{secondFirst: true, within: within}},
	} {
		t.Run(tc.backend, func(t *testing.T) {
			spec := "sqlite:" + filepath.Join(t.TempDir(), "tasks.db")
			if tc.backend == "postgres" {
				url := sharedPostgres(t)
				spec = "postgres:" + newSchema(t, url) + ":" + url
			}
			t.Setenv(crawlDefaultsEnv, "1")
			checkpointAfterKill(t, spec, tc.how)
		})
	}
}
