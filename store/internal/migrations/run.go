package migrations

import (
	"context"
	"errors"
	"fmt"
)

// DB is a database as the migration runner sees it: what a store's
// dialect provides.
type DB interface {
	// InTx runs fn in one transaction that holds the store's migration
	// lock, so that runners of several processes apply each migration
	// once: the transaction commits when fn returns nil and rolls back
	// otherwise.
	InTx(ctx context.Context, fn func(Tx) error) error
}

// Tx is one migration transaction.
type Tx interface {
	// Prepare creates the version table, and what holds it, when missing.
	Prepare(ctx context.Context) error
	// Version returns the highest version recorded, 0 when none is.
	Version(ctx context.Context) (int, error)
	// Apply runs m.SQL and records m's version row; its error names m.
	Apply(ctx context.Context, m Migration) error
}

// Schema names a store's schema and its errors, for the version checks.
type Schema struct {
	// Name says what holds the schema, in errors: "database",
	// `schema "taskwire"`.
	Name string
	// TooNew is wrapped by the error of a schema newer than the code.
	TooNew error
	// Outdated is wrapped by Check's error of a schema older than the
	// code.
	Outdated error
}

// Check compares the version v of a schema that must not be migrated with
// the code's, known: nil when they are equal, else an error wrapping
// s.TooNew or s.Outdated that gives both versions.
func (s Schema) Check(v, known int) error {
	switch {
	case v > known:
		return s.mismatch(s.TooNew, v, known)
	case v < known:
		return s.mismatch(s.Outdated, v, known)
	}
	return nil
}

func (s Schema) mismatch(kind error, v, known int) error {
	return fmt.Errorf("%w: %s is at version %d, code at version %d", kind, s.Name, v, known)
}

// Plan says how Run applies migrations.
type Plan struct {
	// Schema gives the error of a schema newer than the code.
	Schema Schema
	// Target is the version to migrate to: 0 means the last migration.
	Target int
	// Each applies every migration in a transaction of its own, so that a
	// long migration holds the lock for itself only (SQLite, whose one
	// writer it blocks). Otherwise one transaction applies them all, and a
	// failure leaves the schema as it was (PostgreSQL, whose DDL is
	// transactional).
	Each bool
	// Applied, when set, is called with each migration applied, after
	// the commit of its transaction.
	Applied func(Migration)
}

// Run brings db to p.Target by applying the migrations of ms (in version
// order, as Load returns them) that its version table lacks, and records
// each. It is idempotent, and safe to run from several processes at once
// as far as db's lock makes it. It fails, applying nothing, when db is at a
// version newer than ms knows (wrapping p.Schema.TooNew); after the failure
// of a migration, those committed before stay.
func Run(ctx context.Context, db DB, ms []Migration, p Plan) error {
	target := p.Target
	if target == 0 {
		target = len(ms)
	}
	if target < 0 || target > len(ms) {
		return fmt.Errorf("migrations: target %d is not a version of 0..%d", target, len(ms))
	}
	if p.Schema.TooNew == nil {
		return errors.New("migrations: Plan.Schema.TooNew is required")
	}
	for {
		var applied []Migration
		err := db.InTx(ctx, func(tx Tx) error {
			applied = nil
			if err := tx.Prepare(ctx); err != nil {
				return err
			}
			v, err := tx.Version(ctx)
			if err != nil {
				return err
			}
			if v > len(ms) {
				return p.Schema.mismatch(p.Schema.TooNew, v, len(ms))
			}
			pending := ms[min(v, target):target]
			if p.Each && len(pending) > 1 {
				pending = pending[:1]
			}
			for _, m := range pending {
				if err := tx.Apply(ctx, m); err != nil {
					return err
				}
				applied = append(applied, m)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if p.Applied != nil {
			for _, m := range applied {
				p.Applied(m)
			}
		}
		if !p.Each || len(applied) == 0 {
			return nil
		}
	}
}
