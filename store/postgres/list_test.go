package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/task"
)

// TestListUpgradeAndNodes upgrades a version 4 schema holding tasks, on
// which an operator built tasks_list concurrently beforehand: the
// migration keeps that index, the old tasks are listed, and a cursor one
// node issued continues on another node (they share the schema's key) but
// not on a store of another schema.
func TestListUpgradeAndNodes(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	old, pool := storeAtVersion(t, 4)
	schema := old.opts.Schema
	var want []string // newest first
	cc := creation(t, "acme", "echo", `{}`)
	for i := range 5 {
		id := fmt.Sprintf("v4-task-%d", i)
		if _, err := pool.Exec(ctx, `INSERT INTO `+old.q.ident+`.tasks (id, endpoint, tenant, principal, kind, status,
				origin, created_at, updated_at, ttl_ms, poll_interval_ms)
			VALUES ($1, $2, 'acme', 'p', 'echo', 'working', $3, date_trunc('milliseconds', now()) - $4 * interval '1 second',
				now(), 0, 1000)`, id, cc.Request.Endpoint, cc.Origin.Persisted(), i); err != nil {
			t.Fatalf("version 4 insert: %v", err)
		}
		want = append(want, id)
	}
	if _, err := pool.Exec(ctx, `CREATE INDEX CONCURRENTLY tasks_list ON `+old.q.ident+`.tasks (endpoint, tenant, created_at, id)`); err != nil {
		t.Fatal(err)
	}
	a := openStore(t, schema, nil)
	b := openStore(t, schema, nil)
	caller := rc("", "acme")
	first, err := a.ListTasks(ctx, task.ListQuery{Request: caller, Limit: 2})
	if err != nil || first.NextCursor == "" {
		t.Fatalf("first page: %v, cursor %q", err, first.NextCursor)
	}
	got := []string{first.Tasks[0].ID(), first.Tasks[1].ID()}
	for cursor := first.NextCursor; cursor != ""; {
		page, err := b.ListTasks(ctx, task.ListQuery{Request: caller, Cursor: cursor, Limit: 2})
		if err != nil {
			t.Fatalf("next page on the other node: %v", err)
		}
		for _, tk := range page.Tasks {
			got = append(got, tk.ID())
		}
		cursor = page.NextCursor
	}
	if diff := gocmp.Diff(want, got); diff != "" {
		t.Errorf("listing across nodes (-want +got):\n%s", diff)
	}
	var indexes int
	// Only this schema's relations may reach pg_get_indexdef: it opens the
	// index it is given, and fails ("could not open relation with OID")
	// when another test drops its schema meanwhile. Filtering by table name
	// and schema name in one query is not enough, as the planner may call
	// it on every table named tasks before it joins pg_namespace. So the
	// table is resolved to its OID first, its indexes are chosen by that
	// OID and by the schema's namespace OID, and the CTE is materialized so
	// that the definition is rendered for those rows only.
	if err := pool.QueryRow(ctx, `WITH mine AS MATERIALIZED (
			SELECT i.indexrelid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE i.indrelid = to_regclass($1) AND c.relnamespace = to_regnamespace($2))
		SELECT count(*) FROM mine WHERE pg_get_indexdef(indexrelid) LIKE '%(endpoint, tenant, created_at, id)%'`,
		pgx.Identifier{schema, "tasks"}.Sanitize(), pgx.Identifier{schema}.Sanitize()).Scan(&indexes); err != nil || indexes != 1 {
		t.Errorf("listing indexes after the upgrade: %d, %v; want the one built beforehand", indexes, err)
	}
	other := openStore(t, newSchema(t), nil)
	if _, err := other.ListTasks(context.Background(), task.ListQuery{Request: caller, Cursor: first.NextCursor, Limit: 2}); !errors.Is(err, task.ErrBadCursor) {
		t.Errorf("another schema's store took the cursor: %v", err)
	}
}
