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
	switch known := SchemaVersion(); {
	case v > known:
		return fmt.Errorf("%w: database version %d, code version %d", ErrSchemaTooNew, v, known)
	case v < known:
		return fmt.Errorf("%w: database version %d, code version %d", ErrSchemaOutdated, v, known)
	}
	return nil
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
	for _, m := range ms {
		applied := false
		err := s.writeUnbounded(ctx, func(tx *wtx) ([]string, error) {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
				version    INTEGER PRIMARY KEY,
				name       TEXT    NOT NULL,
				applied_at INTEGER NOT NULL
			) STRICT`); err != nil {
				return nil, wrapErr("create schema_version", err)
			}
			v, err := s.version(ctx, tx)
			if err != nil {
				return nil, err
			}
			if v > len(ms) {
				return nil, fmt.Errorf("%w: database version %d, code version %d", ErrSchemaTooNew, v, len(ms))
			}
			if v >= m.Version {
				return nil, nil
			}
			// Several statements: run unprepared.
			if _, err := tx.tx.ExecContext(ctx, m.SQL); err != nil {
				return nil, fmt.Errorf("sqlite: migration %03d_%s: %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, s.now().UnixMilli()); err != nil {
				return nil, wrapErr("record migration", err)
			}
			applied = true
			return nil, nil
		})
		if err != nil {
			return err
		}
		if applied {
			s.log.Info("sqlite: applied migration", "version", m.Version, "name", m.Name, "path", s.opts.Path)
		}
	}
	return nil
}

// wrapErr prefixes a storage error with what the store was doing; nil stays
// nil.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("sqlite: %s: %w", what, err)
}
