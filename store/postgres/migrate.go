package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/taskwire/taskwire/store/internal/migrations"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Schema errors of Open and Migrate.
var (
	// ErrSchemaTooNew: the schema was migrated by a newer version of the
	// code, whose tables this code does not know.
	ErrSchemaTooNew = errors.New("postgres: database schema is newer than this code supports")
	// ErrSchemaOutdated: the schema needs migrations and
	// Options.NoMigrate was set.
	ErrSchemaOutdated = errors.New("postgres: database schema is older than this code and NoMigrate is set")
)

// loadMigrations returns the embedded migrations in version order.
func loadMigrations() ([]migrations.Migration, error) {
	ms, err := migrations.Load(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return ms, nil
}

// SchemaVersion is the schema version this code migrates to.
func SchemaVersion() int {
	return migrations.MustCount(migrationFiles, "migrations")
}

// schema names the store's schema in version errors.
func (s *Store) schema() migrations.Schema {
	return migrations.Schema{Name: fmt.Sprintf("schema %q", s.opts.Schema), TooNew: ErrSchemaTooNew,
		Outdated: ErrSchemaOutdated}
}

// checkSchema migrates the schema, or only checks its version when
// NoMigrate is set.
func (s *Store) checkSchema(ctx context.Context) error {
	if !s.opts.NoMigrate {
		return s.Migrate(ctx)
	}
	v, err := s.version(ctx, s.pool)
	if err != nil {
		return err
	}
	return s.schema().Check(v, SchemaVersion())
}

type queryRower interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// version returns the schema's version, 0 when it has no schema_version
// table (or does not exist).
func (s *Store) version(ctx context.Context, q queryRower) (int, error) {
	var v int
	err := q.QueryRow(ctx, `SELECT CASE WHEN to_regclass($1) IS NULL THEN 0 ELSE -1 END`,
		s.q.ident+".schema_version").Scan(&v)
	if err != nil || v == 0 {
		return 0, wrapErr("schema version", err)
	}
	err = q.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM `+s.q.ident+`.schema_version`).Scan(&v)
	return v, wrapErr("schema version", err)
}

// Migrate creates the schema when missing and applies the embedded
// migrations it lacks, in one transaction together with their
// schema_version rows. A transaction-scoped advisory lock on the schema's
// name serializes concurrent migrations, so nodes starting at once migrate
// once. It is idempotent, and fails with ErrSchemaTooNew when the schema is
// newer than the code.
func (s *Store) Migrate(ctx context.Context) error {
	return s.migrate(ctx, SchemaVersion())
}

// migrate is Migrate up to the given version.
func (s *Store) migrate(ctx context.Context, target int) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	// Migrations may take long on large tables: no per-call deadline, but
	// MigrateTimeout for the whole (0: none).
	if d := s.opts.MigrateTimeout; d > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	var applied []migrations.Migration
	err = migrations.Run(ctx, migrationDB{s}, ms, migrations.Plan{Schema: s.schema(), Target: target,
		Applied: func(m migrations.Migration) { applied = append(applied, m) }})
	if err != nil {
		if d := s.opts.MigrateTimeout; d > 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("postgres: migration of schema %q did not finish within %v (MigrateTimeout): %w", s.opts.Schema, d, err)
		}
		return err
	}
	for _, m := range applied {
		s.log.Info("postgres: applied migration", "version", m.Version, "name", m.Name, "schema", s.opts.Schema)
	}
	return nil
}

// migrationDB is the PostgreSQL dialect of the migration runner: one
// transaction, bounded by MigrateTimeout as its statement_timeout, holding
// a transaction-scoped advisory lock on the schema's name.
type migrationDB struct{ s *Store }

// InTx implements migrations.DB.
func (d migrationDB) InTx(ctx context.Context, fn func(migrations.Tx) error) error {
	s := d.s
	return pgx.BeginFunc(ctx, s.pool.Pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL statement_timeout = `+strconv.FormatInt(s.opts.MigrateTimeout.Milliseconds(), 10)); err != nil {
			return wrapErr("migration", err)
		}
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('taskwire migrate ' || $1, 0))`,
			s.opts.Schema); err != nil {
			return wrapErr("migration lock", err)
		}
		return fn(migrationTx{s, tx})
	})
}

// migrationTx is the migration transaction.
type migrationTx struct {
	s  *Store
	tx pgx.Tx
}

// Prepare implements migrations.Tx: it creates the schema and its
// schema_version table when missing.
func (t migrationTx) Prepare(ctx context.Context) error {
	s, tx := t.s, t.tx
	var exists bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`,
		s.opts.Schema).Scan(&exists); err != nil {
		return wrapErr("look up schema", err)
	}
	if !exists {
		if _, err := tx.Exec(ctx, `CREATE SCHEMA `+s.q.ident); err != nil {
			return wrapErr("create schema", err)
		}
	}
	_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+s.q.ident+`.schema_version (
		version    INTEGER     PRIMARY KEY,
		name       TEXT        NOT NULL,
		applied_at TIMESTAMPTZ NOT NULL
	)`)
	return wrapErr("create schema_version", err)
}

// Version implements migrations.Tx.
func (t migrationTx) Version(ctx context.Context) (int, error) { return t.s.version(ctx, t.tx) }

// Apply implements migrations.Tx.
func (t migrationTx) Apply(ctx context.Context, m migrations.Migration) error {
	s := t.s
	if _, err := t.tx.Exec(ctx, s.q.expand(m.SQL)); err != nil {
		return fmt.Errorf("postgres: migration %03d_%s: %w", m.Version, m.Name, err)
	}
	_, err := t.tx.Exec(ctx, `INSERT INTO `+s.q.ident+`.schema_version (version, name, applied_at)
		VALUES ($1, $2, `+nowExpr(3)+`)`, m.Version, m.Name, s.now())
	return wrapErr("record migration", err)
}
