package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
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

// migration is one embedded schema step.
type migration struct {
	version int
	name    string
	sql     string
}

// migrations returns the embedded migrations in version order. File names
// are NNN_name.sql, numbered 1, 2, 3, ... without gaps.
func migrations() ([]migration, error) {
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, e := range entries {
		num, name, ok := strings.Cut(strings.TrimSuffix(e.Name(), ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlite: bad migration file name %q", e.Name())
		}
		b, err := migrationFiles.ReadFile(path.Join("migrations", e.Name()))
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: name, sql: string(b)})
	}
	slices.SortFunc(ms, func(a, b migration) int { return a.version - b.version })
	for i, m := range ms {
		if m.version != i+1 {
			return nil, fmt.Errorf("sqlite: migrations are not numbered 1..n without gaps (at %d)", m.version)
		}
	}
	return ms, nil
}

// SchemaVersion is the schema version this code migrates to.
func SchemaVersion() int {
	ms, err := migrations()
	if err != nil {
		panic(err) // the embedded files are fixed at build time
	}
	return len(ms)
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
	ms, err := migrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		applied := false
		err := s.write(ctx, func(tx *wtx) ([]string, error) {
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
			if v >= m.version {
				return nil, nil
			}
			// Several statements: run unprepared.
			if _, err := tx.tx.ExecContext(ctx, m.sql); err != nil {
				return nil, fmt.Errorf("sqlite: migration %03d_%s: %w", m.version, m.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, s.now().UnixMilli()); err != nil {
				return nil, wrapErr("record migration", err)
			}
			applied = true
			return nil, nil
		})
		if err != nil {
			return err
		}
		if applied {
			s.log.Info("sqlite: applied migration", "version", m.version, "name", m.name, "path", s.opts.Path)
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
