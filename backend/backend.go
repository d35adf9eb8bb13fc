// Package backend is the contract between taskwire's runtime (the server
// and the worker runtime) and a durable store. A store package
// (store/sqlite, store/postgres) implements it; the runtime packages drive
// it; an application only passes the store along, once to a node
// (node.Config.Store), which hands it everywhere, or by hand:
//
//	st, err := store.Open(ctx, "sqlite:tasks.db", store.Options{}) // a backend.Store
//	srv, err := server.New(server.Options{
//		TaskManager: st, // and, by default, the session store
//		...
//	})
//	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher()})
//
// [Store] is what an opener returns: the server-facing task manager and
// lister, the enqueuer that task creation handlers call, the session
// store, migrations and Close. [Store.Jobs] returns the [JobStore] the worker
// runtime claims jobs from; its fenced writes (Claim, Heartbeat, Complete,
// ...) are the runtime's, not the application's, which is why they are
// kept off Store. [BatchCompleter], [ProgressReporter] and [Pruner] are optional
// extensions of a JobStore that the runtime uses when they are present.
//
// Package backend imports no store and no runtime package: stores and the
// runtime both import it.
package backend

import (
	"context"

	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/task"
)

// Store is a durable store as a whole: the task manager and lister the
// server serves tasks/* from, the enqueuer task creation handlers use, the
// 2025-era session store, and the JobStore of the worker runtime, all over
// the same database, plus migrations and Close. *sqlite.Store and
// *postgres.Store implement it; store.Open returns one.
//
// Every method is bounded by the store's per-call timeout and fails with a
// wrapped error, never a panic, when the database does not answer. Store
// is safe for concurrent use. Close releases the connections; neither the
// Store nor the values Sessions and Jobs returned may be used afterwards.
type Store interface {
	task.Manager
	task.Lister
	Enqueuer
	BatchEnqueuer
	// Sessions returns the store's session.Store, over the same database.
	Sessions() session.Store
	// Jobs returns the store's JobStore, for worker.Options.Store. It
	// implements BatchCompleter, ProgressReporter and Pruner too.
	Jobs() JobStore
	// Migrate applies the pending schema migrations; it is idempotent.
	Migrate(ctx context.Context) error
	// Close releases the store's connections and background goroutines.
	Close() error
}
