package node

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
)

// StoreSpec names a durable store for a node to open: a parsed store spec
// (store.ParseSpec: sqlite:PATH, PATH.db, a postgres:// URL or memory:)
// with the options that go with it.
type StoreSpec struct {
	// Spec is the parsed spec.
	store.Spec
	// Schema is the PostgreSQL schema of the store's tables. Empty:
	// postgres.DefaultSchema.
	Schema string
	// Timeout bounds every store call (store.Options.Timeout). Zero: the
	// store's default.
	Timeout time.Duration
	// ConnectTimeout bounds connecting to PostgreSQL. Zero: the store's
	// default.
	ConnectTimeout time.Duration
}

// ParseStoreSpec parses a store spec as store.ParseSpec does, with the
// default options.
func ParseStoreSpec(spec string) (StoreSpec, error) {
	s, err := store.ParseSpec(spec)
	if err != nil {
		return StoreSpec{}, err
	}
	return StoreSpec{Spec: s}, nil
}

// describe names the resolved store for the start-up lines: file, or
// host, port, database and schema; never a password.
func (s StoreSpec) describe() string { return s.Describe(s.Schema) }

// openStore opens and checks the store a spec names (store.OpenSpec).
// Unless noMigrate is set, pending schema migrations are applied; with
// noMigrate an outdated schema is an error that suggests `taskwire
// migrate`. Its errors name the resolved store.
func openStore(ctx context.Context, spec StoreSpec, noMigrate bool, logger *slog.Logger) (backend.Store, error) {
	return store.OpenSpec(ctx, spec.Spec, store.Options{Schema: spec.Schema, Timeout: spec.Timeout,
		ConnectTimeout: spec.ConnectTimeout, NoMigrate: noMigrate, Logger: logger})
}

// Migrate opens the store spec names, applies its pending schema
// migrations and closes it, for a node that only migrates (a fleet's
// deploy step). It returns the schema version the store is now at (0 for
// memory:, which has no schema). ctx bounds the whole; errors name the
// resolved store, never a password.
func Migrate(ctx context.Context, spec StoreSpec, logger *slog.Logger) (version int, err error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	// Open applies the pending migrations; Migrate again is a no-op that
	// makes the intent explicit.
	st, err := openStore(ctx, spec, false, logger)
	if err != nil {
		return 0, err
	}
	err = st.Migrate(ctx)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, fmt.Errorf("store %s: %w", spec, err)
	}
	return schemaVersion(spec), nil
}

// schemaVersion is the schema version the code migrates the spec's backend
// to; 0 for the in-memory store, which has no schema.
func schemaVersion(s StoreSpec) int {
	switch s.Kind {
	case store.Postgres:
		return postgres.SchemaVersion()
	case store.Memory:
		return 0
	}
	return sqlite.SchemaVersion()
}
