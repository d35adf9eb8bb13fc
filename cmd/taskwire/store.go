package main

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
)

// defaultStore is the store used when neither --store nor TASKWIRE_STORE is
// set: a SQLite file in the working directory, so that a fresh clone keeps
// its tasks across restarts without any set-up.
const defaultStore = "sqlite:taskwire.db"

// storeEnv is the environment variable read when --store is not given.
const storeEnv = "TASKWIRE_STORE"

// storeSpec is a resolved --store value with the store flags that go with
// it.
type storeSpec struct {
	// Spec is the parsed --store value (store.ParseSpec).
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

// withSchema sets the PostgreSQL schema named by --schema; an empty name
// keeps the default. SQLite has no schemas, so naming one is an error.
func (s *storeSpec) withSchema(name string) error {
	if name == "" {
		return nil
	}
	if s.Kind != store.Postgres {
		return errors.New("--schema applies to PostgreSQL stores only")
	}
	s.Schema = name
	return nil
}

// describe names the resolved store for the start-up lines: file, or
// host, port, database and schema; never a password.
func (s storeSpec) describe() string { return s.Describe(s.Schema) }

// defaultReportsDir is where reports.generate writes its files unless
// --reports-dir says otherwise: reports/ beside a SQLite file, or in the
// working directory.
func (s storeSpec) defaultReportsDir() string {
	if s.Kind == store.SQLite && s.Path != sqlite.MemoryPath {
		return filepath.Join(filepath.Dir(s.Path), "reports")
	}
	return "reports"
}

// resolveStore returns the store spec to use: the --store flag when set,
// otherwise TASKWIRE_STORE, otherwise defaultStore.
func resolveStore(flagValue string, getenv func(string) string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := getenv(storeEnv); v != "" {
		return v
	}
	return defaultStore
}

// openStore opens and checks the store a spec names (store.OpenSpec).
// Unless noMigrate is set, pending schema migrations are applied; with
// noMigrate an outdated schema is an error that suggests `taskwire
// migrate`.
func openStore(ctx context.Context, spec storeSpec, noMigrate bool, logger *slog.Logger) (backend.Store, error) {
	return store.OpenSpec(ctx, spec.Spec, store.Options{Schema: spec.Schema, Timeout: spec.Timeout,
		ConnectTimeout: spec.ConnectTimeout, NoMigrate: noMigrate, Logger: logger})
}

// schemaVersion is the schema version the code migrates the spec's backend
// to.
func schemaVersion(s storeSpec) int {
	if s.Kind == store.Postgres {
		return postgres.SchemaVersion()
	}
	return sqlite.SchemaVersion()
}
