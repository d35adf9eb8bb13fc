package postgres

import (
	"context"
	"errors"
	"sync"
	"testing"
)

func TestMigrateIdempotent(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	s := openStore(t, schema, nil)
	ctx := ctxT(t)
	for range 2 {
		if err := s.Migrate(ctx); err != nil {
			t.Fatal(err)
		}
	}
	openStore(t, schema, nil) // a second node on the migrated schema
	var rows int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM `+s.q.ident+`.schema_version`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if v, err := s.version(ctx, s.pool); v != SchemaVersion() || rows != SchemaVersion() || err != nil {
		t.Fatalf("version %d with %d rows (%v), want %d", v, rows, err, SchemaVersion())
	}
}

func TestMigrateConcurrent(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	const nodes = 4
	stores := make([]*Store, nodes)
	errs := make([]error, nodes)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			stores[i], errs[i] = Open(context.Background(), Options{URL: testURL(), Schema: schema, MaxConns: 2, Logger: quiet})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Open %d: %v", i, err)
		} else {
			defer stores[i].Close()
		}
	}
	if t.Failed() {
		return
	}
	if v, err := stores[0].version(ctxT(t), stores[0].pool); v != SchemaVersion() || err != nil {
		t.Fatalf("version = %d, %v", v, err)
	}
}

func TestSchemaVersionChecks(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)

	// A fresh schema with NoMigrate is outdated, and Open creates nothing.
	fresh := newSchema(t)
	_, err := Open(ctx, Options{URL: testURL(), Schema: fresh, NoMigrate: true, Logger: quiet})
	if !errors.Is(err, ErrSchemaOutdated) {
		t.Fatalf("NoMigrate on an empty schema = %v, want ErrSchemaOutdated", err)
	}

	// A schema migrated by newer code is refused, migrating or not.
	schema := newSchema(t)
	s := openStore(t, schema, nil)
	if _, err := s.pool.Exec(ctx, `INSERT INTO `+s.q.ident+`.schema_version (version, name, applied_at)
		VALUES ($1, 'from_the_future', now())`, SchemaVersion()+1); err != nil {
		t.Fatal(err)
	}
	for _, noMigrate := range []bool{false, true} {
		_, err := Open(ctx, Options{URL: testURL(), Schema: schema, NoMigrate: noMigrate, Logger: quiet})
		if !errors.Is(err, ErrSchemaTooNew) {
			t.Errorf("NoMigrate %v on a newer schema = %v, want ErrSchemaTooNew", noMigrate, err)
		}
	}
	if err := s.Migrate(ctx); !errors.Is(err, ErrSchemaTooNew) {
		t.Errorf("Migrate on a newer schema = %v", err)
	}
}

func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	for name, opts := range map[string]Options{
		"no URL":           {},
		"bad schema":       {URL: testURL(), Schema: `a"; DROP TABLE x; --`},
		"long schema":      {URL: testURL(), Schema: "s0123456789012345678901234567890123456789012345678901"},
		"fractional TTL":   {URL: testURL(), DefaultTTL: 1500 * 1000},
		"negative retries": {URL: testURL(), DefaultMaxAttempts: -1},
	} {
		if _, err := Open(context.Background(), opts); err == nil {
			t.Errorf("%s: Open succeeded", name)
		}
	}
}
