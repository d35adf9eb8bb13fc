// Package store opens a durable task store from a one-line spec, checks that
// it is usable, and returns it as a backend.Store: the one value an
// application hands to the server (task manager, session store), to its
// task creation handlers (enqueuer) and, through Jobs, to the worker
// runtime.
//
// The durable stores are store/sqlite (one file, one host) and
// store/postgres (a fleet of nodes sharing one schema); store/memory is a
// bounded in-process one for development and tests (spec memory:).
// Applications that need a store's own options open it with that package
// directly; *sqlite.Store, *postgres.Store and *memory.Manager all
// implement backend.Store. Every backend of the module lives under store/,
// with what they share in store/internal and the suite they all pass in
// store/storetest.
package store

import (
	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
)

var (
	_ backend.Store = (*sqlite.Store)(nil)
	_ backend.Store = (*postgres.Store)(nil)
	_ backend.Store = (*memory.Manager)(nil)
)
