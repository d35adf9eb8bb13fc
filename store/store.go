// Package store opens a durable task store from a one-line spec, checks that
// it is usable, and returns it as a Backend: the one value an application
// hands to the server (task manager, session store), to its task creation
// handlers (enqueuer) and to the worker runtime (store).
//
// The backends are store/sqlite (one file, one host) and store/postgres (a
// fleet of nodes sharing one schema). Applications that need a backend's
// own options open it with that package directly; both of its Store types
// satisfy Backend.
package store

import (
	"context"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// Backend is the contract of a durable store: the server-facing task
// manager and lister, the worker-facing store and enqueuer, the 2025-era
// session store, all over the same database, plus migrations and Close.
// *sqlite.Store and *postgres.Store implement it.
//
// Every method is bounded by the store's per-call timeout (Options.Timeout)
// and fails with a wrapped error, never a panic, when the database does not
// answer. Close releases the connections; the Backend must not be used
// afterwards.
type Backend interface {
	task.Manager
	task.Lister
	backend.JobStore
	backend.Enqueuer
	// ReportProgress records a running job's progress report.
	backend.ProgressReporter
	// Sessions returns the store's session.Store, over the same database.
	Sessions() session.Store
	// Migrate applies the pending schema migrations; it is idempotent.
	Migrate(ctx context.Context) error
	// Close releases the store's connections and background goroutines.
	Close() error
}

var (
	_ Backend = (*sqlite.Store)(nil)
	_ Backend = (*postgres.Store)(nil)
)
