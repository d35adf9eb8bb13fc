package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
)

// Defaults of Options.
const (
	// DefaultConnectTimeout bounds connecting to PostgreSQL.
	DefaultConnectTimeout = 10 * time.Second
	// DefaultTimeout bounds every store call (both backends' default).
	DefaultTimeout = 5 * time.Second
	// DefaultMigrateTimeout bounds the migrations Open and Migrate apply
	// to PostgreSQL.
	DefaultMigrateTimeout = 5 * time.Minute
)

// Options configure Open. Zero values mean the defaults. The in-memory
// store (memory:) uses none of them: it has store/memory's default bounds
// (memory.DefaultCapacity tasks and so on); open it with memory.New for
// others.
type Options struct {
	// Schema is the PostgreSQL schema of the store's tables. Default
	// postgres.DefaultSchema. SQLite has no schemas: setting it for a
	// SQLite spec is an error.
	Schema string
	// MaxConns bounds the connection pool: PostgreSQL's (the LISTEN
	// session comes on top), or SQLite's read pool (writes use one
	// connection). Default: the backend's.
	MaxConns int
	// ConnectTimeout bounds connecting to PostgreSQL, each connection
	// attempt and Open's first round trip. Default DefaultConnectTimeout.
	// Unused by SQLite.
	ConnectTimeout time.Duration
	// Timeout bounds every store call, and on PostgreSQL each statement
	// on the server (statement_timeout). Default DefaultTimeout; whole
	// milliseconds.
	Timeout time.Duration
	// MigrateTimeout bounds PostgreSQL migrations (client deadline and
	// statement_timeout). Default DefaultMigrateTimeout.
	MigrateTimeout time.Duration
	// NoMigrate refuses a schema older than the code instead of migrating
	// it: Open fails with an error matching postgres.ErrSchemaOutdated or
	// sqlite.ErrSchemaOutdated.
	NoMigrate bool
	// Logger receives migration and background messages. Default
	// slog.Default().
	Logger *slog.Logger
}

// validate checks o against spec and fills in the defaults.
func (o *Options) validate(spec Spec) error {
	if o.Schema != "" && spec.Kind != Postgres {
		return errors.New("store: a schema applies to PostgreSQL stores only")
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MigrateTimeout == 0 {
		o.MigrateTimeout = DefaultMigrateTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	switch {
	case o.MaxConns < 0:
		return errors.New("store: MaxConns must not be negative")
	case o.ConnectTimeout < time.Millisecond || o.Timeout < time.Millisecond || o.MigrateTimeout < time.Millisecond:
		return errors.New("store: ConnectTimeout, Timeout and MigrateTimeout must be at least 1ms")
	case o.ConnectTimeout%time.Millisecond != 0 || o.Timeout%time.Millisecond != 0 || o.MigrateTimeout%time.Millisecond != 0:
		return errors.New("store: ConnectTimeout, Timeout and MigrateTimeout must be whole milliseconds")
	}
	return nil
}

// Open parses spec (see ParseSpec), opens the store it names and checks
// that it is usable before returning it: a SQLite file is opened for
// writing and one write transaction committed; a PostgreSQL server must
// answer within ConnectTimeout. Unless opts.NoMigrate, pending migrations
// are applied (on PostgreSQL within MigrateTimeout). A memory: spec
// returns a new *memory.Manager with its default bounds, which cannot
// fail to be usable.
//
// Errors are meant for an operator: they name the file, or the host,
// database and schema (never a password), say what is wrong and, where
// there is one, what to do: a PostgreSQL server that refuses the
// connection because the database or the role does not exist, or the
// password is wrong, gets that reason once (a *pgconn.PgError, for
// errors.As) with its remedy; a server that does not answer gets a
// question about reaching it. The schema errors still match the backend's
// ErrSchemaOutdated and ErrSchemaTooNew. ctx bounds Open only.
func Open(ctx context.Context, spec string, opts Options) (backend.Store, error) {
	sp, err := ParseSpec(spec)
	if err != nil {
		return nil, err
	}
	return OpenSpec(ctx, sp, opts)
}

// OpenSpec is Open for a parsed spec.
func OpenSpec(ctx context.Context, spec Spec, opts Options) (backend.Store, error) {
	if err := opts.validate(spec); err != nil {
		return nil, err
	}
	switch spec.Kind {
	case SQLite:
		return openSQLite(ctx, spec, opts)
	case Postgres:
		return openPostgres(ctx, spec, opts)
	case Memory:
		m, err := memory.New(memory.Options{})
		if err != nil {
			return nil, fmt.Errorf("store %s: %w", spec, err)
		}
		return m, nil
	}
	return nil, fmt.Errorf("store: unknown backend %q", spec.Kind)
}

// openSQLite opens a SQLite store and proves it writable.
func openSQLite(ctx context.Context, spec Spec, opts Options) (backend.Store, error) {
	if spec.Path != sqlite.MemoryPath {
		if err := checkDir(spec.Path); err != nil {
			return nil, err
		}
	}
	s, err := sqlite.Open(ctx, sqlite.Options{Path: spec.Path, NoMigrate: opts.NoMigrate, Logger: opts.Logger,
		Timeout: opts.Timeout, ReadConns: opts.MaxConns})
	if err != nil {
		return nil, sqliteError(spec, err)
	}
	if err := s.CheckWrite(ctx); err != nil {
		s.Close()
		return nil, sqliteError(spec, err)
	}
	return s, nil
}

// checkDir checks that the directory of a SQLite file exists, so that the
// driver's "unable to open database file" is not the only message.
func checkDir(path string) error {
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("store sqlite:%s: directory %s does not exist; create it (mkdir -p %s) or choose another file",
			path, dir, dir)
	case err != nil:
		return fmt.Errorf("store sqlite:%s: directory %s: %w", path, dir, err)
	case !fi.IsDir():
		return fmt.Errorf("store sqlite:%s: %s is not a directory", path, dir)
	}
	return nil
}

// sqliteError explains a SQLite failure at start-up.
func sqliteError(spec Spec, err error) error {
	switch {
	case errors.Is(err, sqlite.ErrSchemaOutdated):
		return fmt.Errorf("store %s: %w; run `taskwire migrate --store %s` first, or open it without NoMigrate", spec, err, spec)
	case errors.Is(err, sqlite.ErrSchemaTooNew):
		return fmt.Errorf("store %s: %w; upgrade taskwire", spec, err)
	case spec.Path != sqlite.MemoryPath && !writable(spec.Path):
		return fmt.Errorf("store %s: cannot write to %s or to its directory %s (the store needs both, for its "+
			"journal files); give this user write permission or choose another file: %w",
			spec, spec.Path, filepath.Dir(spec.Path), err)
	}
	return fmt.Errorf("store %s: %w", spec, err)
}

// writable reports whether the file (when it exists) and its directory can
// be opened for writing by this process.
func writable(path string) bool {
	if f, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
		f.Close()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".taskwire-check-*")
	if err != nil {
		return false
	}
	name := f.Name()
	f.Close()
	os.Remove(name)
	return true
}

// openPostgres connects to PostgreSQL within ConnectTimeout and migrates
// within MigrateTimeout.
func openPostgres(ctx context.Context, spec Spec, opts Options) (backend.Store, error) {
	where := spec.Describe(opts.Schema)
	s, err := postgres.Open(ctx, postgres.Options{URL: spec.URL, Schema: opts.Schema, NoMigrate: opts.NoMigrate,
		Logger: opts.Logger, Timeout: opts.Timeout, ConnectTimeout: opts.ConnectTimeout,
		MigrateTimeout: opts.MigrateTimeout, MaxConns: int32(min(opts.MaxConns, 1<<30))})
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, postgres.ErrSchemaOutdated):
		return nil, fmt.Errorf("store %s: %w; run `taskwire migrate` on this store first, or open it without NoMigrate", where, err)
	case errors.Is(err, postgres.ErrSchemaTooNew):
		return nil, fmt.Errorf("store %s: %w; upgrade taskwire", where, err)
	}
	if pe := serverRefusal(err); pe != nil {
		// The server answered: the hint about reaching it would mislead,
		// and the connect error repeats the refusal once per attempt.
		return nil, fmt.Errorf("store %s: %w%s", where, pe, refusalHint(pe, spec.URL))
	}
	return nil, fmt.Errorf("store %s: %w (is the server up, reachable from here, and answering within %v?)",
		where, err, opts.ConnectTimeout)
}

// SQLSTATE codes of the refusals a PostgreSQL server gives a connection.
const (
	sqlstateNoDatabase    = "3D000" // invalid_catalog_name: the database does not exist
	sqlstateAuthorization = "28000" // invalid_authorization_specification: no such role, or pg_hba.conf
	sqlstateBadPassword   = "28P01" // invalid_password
)

// serverRefusal returns the server's error when err says the server
// refused the connection for a reason a start-up hint can name, else nil.
func serverRefusal(err error) *pgconn.PgError {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return nil
	}
	switch pe.Code {
	case sqlstateNoDatabase, sqlstateAuthorization, sqlstateBadPassword:
		return pe
	}
	return nil
}

// refusalHint is the advice for a refusal of serverRefusal; rawURL names
// the database and user (never printed whole: it may hold a password).
func refusalHint(pe *pgconn.PgError, rawURL string) string {
	var database, user string
	if cfg, err := pgconn.ParseConfig(rawURL); err == nil {
		database, user = cfg.Database, cfg.User
	}
	switch {
	case pe.Code == sqlstateNoDatabase:
		return fmt.Sprintf("; create it (createdb %s) or name an existing database in the URL", database)
	case pe.Code == sqlstateAuthorization && strings.Contains(pe.Message, "does not exist"):
		return fmt.Sprintf("; create the role (createuser %s, or CREATE ROLE \"%s\" LOGIN) or give an existing user in the URL", user, user)
	case pe.Code == sqlstateAuthorization:
		return "; the server's pg_hba.conf does not let this user connect to this database from here"
	}
	return "; check the user and password in the URL"
}
