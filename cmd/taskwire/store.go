package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// defaultStore is the store used when neither --store nor TASKWIRE_STORE is
// set: a SQLite file in the working directory, so that a fresh clone keeps
// its tasks across restarts without any set-up.
const defaultStore = "sqlite:taskwire.db"

// storeEnv is the environment variable read when --store is not given.
const storeEnv = "TASKWIRE_STORE"

// Store backends a spec can name.
const (
	backendSQLite   = "sqlite"
	backendPostgres = "postgres"
)

// storeSpec is a parsed --store value.
type storeSpec struct {
	// Backend is backendSQLite or backendPostgres.
	Backend string
	// Path is the SQLite database file (or sqlite.MemoryPath).
	Path string
	// URL is the PostgreSQL connection URL, password included: never
	// print it; use String.
	URL string
	// Schema is the PostgreSQL schema of the store's tables. Empty:
	// postgres.DefaultSchema.
	Schema string
	// Timeout bounds every store call (the stores' Options.Timeout).
	// Zero: the stores' default.
	Timeout time.Duration
}

// withSchema sets the PostgreSQL schema named by --schema; an empty name
// keeps the default. SQLite has no schemas, so naming one is an error.
func (s *storeSpec) withSchema(name string) error {
	if name == "" {
		return nil
	}
	if s.Backend != backendPostgres {
		return errors.New("--schema applies to PostgreSQL stores only")
	}
	s.Schema = name
	return nil
}

// parseStoreSpec parses a --store value:
//
//	sqlite:PATH                  a SQLite file (sqlite:///abs/path also works)
//	PATH.db, .sqlite, .sqlite3   the same, without the prefix
//	postgres://… postgresql://…  a PostgreSQL connection URL
//
// Anything else is an error that says what is accepted, without echoing a
// password.
func parseStoreSpec(s string) (storeSpec, error) {
	s = strings.TrimSpace(s)
	lower := strings.ToLower(s)
	switch {
	case s == "":
		return storeSpec{}, errors.New("empty store: use sqlite:PATH or postgres://USER@HOST/DB")
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		if _, err := url.Parse(s); err != nil {
			return storeSpec{}, fmt.Errorf("store %s: not a valid URL", redactURL(s))
		}
		return storeSpec{Backend: backendPostgres, URL: s}, nil
	case strings.HasPrefix(lower, "sqlite:"):
		p := s[len("sqlite:"):]
		// sqlite://relative and sqlite:///absolute, as in many URL-style
		// database settings.
		p = strings.TrimPrefix(p, "//")
		if p == "" {
			return storeSpec{}, errors.New("store sqlite: needs a file, as in sqlite:taskwire.db")
		}
		return storeSpec{Backend: backendSQLite, Path: p}, nil
	case strings.Contains(s, "://"):
		return storeSpec{}, fmt.Errorf("store %s: unsupported scheme; use sqlite:PATH or postgres://USER@HOST/DB", redactURL(s))
	}
	switch strings.ToLower(filepath.Ext(s)) {
	case ".db", ".sqlite", ".sqlite3":
		return storeSpec{Backend: backendSQLite, Path: s}, nil
	}
	return storeSpec{}, fmt.Errorf("store %q: not recognised; use sqlite:PATH (or a path ending in .db) or postgres://USER@HOST/DB", s)
}

// String returns the spec for display: the PostgreSQL URL without its
// password.
func (s storeSpec) String() string {
	if s.Backend == backendPostgres {
		return redactURL(s.URL)
	}
	return "sqlite:" + s.Path
}

// defaultReportsDir is where reports.generate writes its files unless
// --reports-dir says otherwise: reports/ beside a SQLite file, or in the
// working directory.
func (s storeSpec) defaultReportsDir() string {
	if s.Backend == backendSQLite && s.Path != sqlite.MemoryPath {
		return filepath.Join(filepath.Dir(s.Path), "reports")
	}
	return "reports"
}

// redactURL returns a connection URL fit for printing: the password of the
// user information, and a password query parameter, replaced by "xxxxx". A
// value that does not parse is not printed at all.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		scheme, _, _ := strings.Cut(raw, "://")
		return scheme + "://(redacted)"
	}
	q := u.Query()
	for k := range q {
		if strings.EqualFold(k, "password") {
			q.Set(k, "xxxxx")
			u.RawQuery = q.Encode()
		}
	}
	return u.Redacted()
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

// durableStore is what the commands need of a store: the server's task
// manager, the worker runtime's store and enqueuer, migrations and Close.
// Both store/sqlite and store/postgres provide it.
type durableStore interface {
	task.Manager
	worker.Store
	worker.Enqueuer
	Migrate(ctx context.Context) error
	Close() error
}

var (
	_ durableStore = (*sqlite.Store)(nil)
	_ durableStore = (*postgres.Store)(nil)
)

// openStore opens the store a spec names. Unless noMigrate is set, pending
// schema migrations are applied; with noMigrate an outdated schema is an
// error that suggests `taskwire migrate`.
func openStore(ctx context.Context, spec storeSpec, noMigrate bool, logger *slog.Logger) (durableStore, error) {
	switch spec.Backend {
	case backendSQLite:
		s, err := sqlite.Open(ctx, sqlite.Options{Path: spec.Path, NoMigrate: noMigrate, Logger: logger, Timeout: spec.Timeout})
		if err != nil {
			return nil, openError(spec, err, sqlite.ErrSchemaOutdated, sqlite.ErrSchemaTooNew)
		}
		return s, nil
	case backendPostgres:
		s, err := postgres.Open(ctx, postgres.Options{URL: spec.URL, Schema: spec.Schema, NoMigrate: noMigrate, Logger: logger,
			Timeout: spec.Timeout})
		if err != nil {
			return nil, openError(spec, err, postgres.ErrSchemaOutdated, postgres.ErrSchemaTooNew)
		}
		return s, nil
	}
	return nil, fmt.Errorf("unknown store backend %q", spec.Backend)
}

// openError explains a failed Open, with advice for schema mismatches.
func openError(spec storeSpec, err, outdated, tooNew error) error {
	switch {
	case errors.Is(err, outdated):
		return fmt.Errorf("store %s: %w; run `taskwire migrate --store %s%s` first, or drop --no-migrate", spec, err, spec, schemaFlag(spec))
	case errors.Is(err, tooNew):
		return fmt.Errorf("store %s: %w; upgrade taskwire", spec, err)
	}
	return fmt.Errorf("store %s: %w", spec, err)
}

// schemaFlag is the --schema flag that names spec's schema, if any, for
// commands suggested to the user.
func schemaFlag(spec storeSpec) string {
	if spec.Schema == "" {
		return ""
	}
	return " --schema " + spec.Schema
}

// schemaVersion is the schema version the code migrates the spec's backend
// to.
func schemaVersion(s storeSpec) int {
	if s.Backend == backendPostgres {
		return postgres.SchemaVersion()
	}
	return sqlite.SchemaVersion()
}
