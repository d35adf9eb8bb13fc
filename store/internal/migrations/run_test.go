package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	_ "modernc.org/sqlite"
)

// sqliteDB is a minimal dialect over a real SQLite file: one transaction
// per InTx, the version table in the same database.
type sqliteDB struct{ db *sql.DB }

func (d sqliteDB) InTx(ctx context.Context, fn func(Tx) error) error {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := fn(sqliteTx{tx}); err != nil {
		tx.Rollback()
		return err
	}
	return tx.Commit()
}

type sqliteTx struct{ tx *sql.Tx }

func (t sqliteTx) Prepare(ctx context.Context) error {
	_, err := t.tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT)`)
	return err
}

func (t sqliteTx) Version(ctx context.Context) (int, error) {
	var v int
	err := t.tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_version`).Scan(&v)
	return v, err
}

func (t sqliteTx) Apply(ctx context.Context, m Migration) error {
	if _, err := t.tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %d: %w", m.Version, err)
	}
	_, err := t.tx.ExecContext(ctx, `INSERT INTO schema_version VALUES (?, ?)`, m.Version, m.Name)
	return err
}

var (
	errTooNew   = errors.New("too new")
	errOutdated = errors.New("outdated")
	testSchema  = Schema{Name: "database", TooNew: errTooNew, Outdated: errOutdated}
)

func openDB(t *testing.T) sqliteDB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return sqliteDB{db}
}

// state returns the recorded versions and the tables a..d that exist.
func state(t *testing.T, d sqliteDB) (versions []int, tables []string) {
	t.Helper()
	rows, err := d.db.Query(`SELECT version FROM schema_version ORDER BY version`)
	if err == nil {
		for rows.Next() {
			var v int
			rows.Scan(&v)
			versions = append(versions, v)
		}
		rows.Close()
	}
	rows, err = d.db.Query(`SELECT name FROM sqlite_schema WHERE type = 'table' AND name IN ('a', 'b', 'c', 'd') ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		rows.Scan(&n)
		tables = append(tables, n)
	}
	return versions, tables
}

var three = []Migration{
	{1, "a", `CREATE TABLE a (x INTEGER)`},
	{2, "b", `CREATE TABLE b (x INTEGER); CREATE TABLE c (x INTEGER)`},
	{3, "d", `CREATE TABLE d (x INTEGER)`},
}

func TestRun(t *testing.T) {
	ctx := context.Background()
	broken := append(three[:2:2], Migration{3, "broken", `CREATE TABLE d (x INTEGER); CREATE TABLE a (x INTEGER)`})
	for _, tc := range []struct {
		name         string
		ms           []Migration
		plans        []Plan
		wantErr      bool
		wantApplied  []int
		wantVersions []int
		wantTables   []string
	}{
		{name: "all in one", ms: three, plans: []Plan{{}},
			wantApplied: []int{1, 2, 3}, wantVersions: []int{1, 2, 3}, wantTables: []string{"a", "b", "c", "d"}},
		{name: "each", ms: three, plans: []Plan{{Each: true}},
			wantApplied: []int{1, 2, 3}, wantVersions: []int{1, 2, 3}, wantTables: []string{"a", "b", "c", "d"}},
		{name: "idempotent", ms: three, plans: []Plan{{}, {}, {Each: true}},
			wantApplied: []int{1, 2, 3}, wantVersions: []int{1, 2, 3}, wantTables: []string{"a", "b", "c", "d"}},
		{name: "to a target, then on", ms: three, plans: []Plan{{Target: 1}, {Target: 1}, {}},
			wantApplied: []int{1, 2, 3}, wantVersions: []int{1, 2, 3}, wantTables: []string{"a", "b", "c", "d"}},
		{name: "a target below the version applies nothing", ms: three, plans: []Plan{{}, {Target: 1}},
			wantApplied: []int{1, 2, 3}, wantVersions: []int{1, 2, 3}, wantTables: []string{"a", "b", "c", "d"}},
		{name: "a failure in one transaction leaves nothing", ms: broken, plans: []Plan{{}}, wantErr: true},
		{name: "a failure keeps the committed steps", ms: broken, plans: []Plan{{Each: true}}, wantErr: true,
			wantApplied: []int{1, 2}, wantVersions: []int{1, 2}, wantTables: []string{"a", "b", "c"}},
		{name: "target out of range", ms: three, plans: []Plan{{Target: 4}}, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := openDB(t)
			var applied []int
			var err error
			for _, p := range tc.plans {
				p.Schema = testSchema
				p.Applied = func(m Migration) { applied = append(applied, m.Version) }
				if err = Run(ctx, d, tc.ms, p); err != nil {
					break
				}
			}
			if (err != nil) != tc.wantErr {
				t.Fatalf("Run: %v, want error %v", err, tc.wantErr)
			}
			versions, tables := state(t, d)
			if diff := cmp.Diff(tc.wantApplied, applied); diff != "" {
				t.Errorf("applied (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantVersions, versions); diff != "" {
				t.Errorf("versions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantTables, tables); diff != "" {
				t.Errorf("tables (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunTooNew(t *testing.T) {
	ctx := context.Background()
	d := openDB(t)
	if err := Run(ctx, d, three, Plan{Schema: testSchema}); err != nil {
		t.Fatal(err)
	}
	for _, each := range []bool{false, true} {
		called := false
		err := Run(ctx, d, three[:2], Plan{Schema: testSchema, Each: each, Applied: func(Migration) { called = true }})
		if !errors.Is(err, errTooNew) || called {
			t.Errorf("each %v: a newer database: %v, applied %v; want %v and nothing applied", each, err, called, errTooNew)
		}
		if want := "too new: database is at version 3, code at version 2"; err == nil || err.Error() != want {
			t.Errorf("each %v: error %q, want %q", each, err, want)
		}
	}
	if err := Run(ctx, d, three, Plan{}); err == nil {
		t.Error("Run without Schema.TooNew succeeded")
	}
}

func TestSchemaCheck(t *testing.T) {
	for _, tc := range []struct {
		v, known int
		want     error
	}{
		{3, 3, nil},
		{4, 3, errTooNew},
		{2, 3, errOutdated},
		{0, 3, errOutdated},
	} {
		err := testSchema.Check(tc.v, tc.known)
		if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("Check(%d, %d) = %v, want %v", tc.v, tc.known, err, tc.want)
		}
	}
}
