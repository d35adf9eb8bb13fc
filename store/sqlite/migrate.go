package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"github.com/taskwire/taskwire/store/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Schema errors of Open.
var (
	// ErrSchemaTooNew: the database was migrated by a newer version of
	// the code, whose schema this code does not know.
	ErrSchemaTooNew = errors.New("sqlite: database schema is newer than this code supports")
	// ErrSchemaOutdated: the database needs migrations and
	// Options.NoMigrate was set.
	ErrSchemaOutdated = errors.New("sqlite: database schema is older than this code and NoMigrate is set")
)

// loadMigrations returns the embedded migrations in version order.
func loadMigrations() ([]migrations.Migration, error) {
	ms, err := migrations.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	return ms, nil
}

// SchemaVersion is the schema version this code migrates to.
func SchemaVersion() int {
	return migrations.MustCount(migrationFiles, "migrations")
}

// schema names the database in version errors.
var schema = migrations.Schema{Name: "database", TooNew: ErrSchemaTooNew, Outdated: ErrSchemaOutdated}

// checkSchema migrates the database, or only checks its version when
// NoMigrate is set.
func (s *Store) checkSchema(ctx context.Context) error {
	if !s.opts.NoMigrate {
		return s.Migrate(ctx)
	}
	v, err := s.version(ctx, s.w)
	if err != nil {
		return err
	}
	return schema.Check(v, SchemaVersion())
}

type queryer interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// version returns the database's schema version, 0 when it has none.
func (s *Store) version(ctx context.Context, q queryer) (int, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'schema_version'`).Scan(&n)
	if err != nil || n == 0 {
		return 0, wrapErr("schema version", err)
	}
	var v sql.NullInt64
	if err := q.QueryRowContext(ctx, `SELECT max(version) FROM schema_version`).Scan(&v); err != nil {
		return 0, wrapErr("schema version", err)
	}
	return int(v.Int64), nil
}

// Migrate applies the embedded migrations the database lacks, each in its
// own BEGIN IMMEDIATE transaction together with its schema_version row. It
// is idempotent and safe to run from several processes at once. It fails
// with ErrSchemaTooNew when the database is newer than the code.
func (s *Store) Migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	return migrations.Run(ctx, migrationDB{s}, ms, migrations.Plan{Schema: schema, Each: true,
		Applied: func(m migrations.Migration) {
			s.log.Info("sqlite: applied migration", "version", m.Version, "name", m.Name, "path", s.opts.Path)
		}})
}

// migrationDB is the SQLite dialect of the migration runner: the one
// writer's BEGIN IMMEDIATE is the lock, without the per-call deadline
// (migrations may take long).
type migrationDB struct{ s *Store }

// InTx implements migrations.DB.
func (d migrationDB) InTx(ctx context.Context, fn func(migrations.Tx) error) error {
	return d.s.writeUnbounded(ctx, func(tx *wtx) ([]string, error) {
		return nil, fn(migrationTx{d.s, tx})
	})
}

// migrationTx is one migration transaction on the writer.
type migrationTx struct {
	s  *Store
	tx *wtx
}

// Prepare implements migrations.Tx.
func (t migrationTx) Prepare(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
		version    INTEGER PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at INTEGER NOT NULL
	) STRICT`)
	return wrapErr("create schema_version", err)
}

// Version implements migrations.Tx.
func (t migrationTx) Version(ctx context.Context) (int, error) { return t.s.version(ctx, t.tx) }

// Apply implements migrations.Tx.
func (t migrationTx) Apply(ctx context.Context, m migrations.Migration) error {
	// Several statements: run unprepared.
	if _, err := t.tx.tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("sqlite: migration %03d_%s: %w", m.Version, m.Name, err)
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, t.s.now().UnixMilli())
	return wrapErr("record migration", err)
}

// wrapErr prefixes a storage error with what the store was doing; nil stays
// nil. A lock held elsewhere is marked as markLocked marks it.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return markLocked(fmt.Errorf("sqlite: %s: %w", what, err))
}
