package postgres

import (
	"context"
	"errors"
	"fmt"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5/pgxpool"

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
	schema := newSchema(t)
	pool, err := pgxpool.New(ctx, storeURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	old := &Store{opts: Options{Schema: schema}, pool: &boundedPool{Pool: pool, timeout: DefaultTimeout}, q: newQueries(schema), log: quiet}
	if err := old.migrate(ctx, 4); err != nil {
		t.Fatal(err)
	}
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
	// pg_index of this schema's tasks table only: pg_indexes would render
	// the definition of every index in the database, and fail when another
	// test drops its schema meanwhile ("could not open relation").
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_index i
		JOIN pg_class t ON t.oid = i.indrelid JOIN pg_namespace n ON n.oid = t.relnamespace
		WHERE n.nspname = $1 AND t.relname = 'tasks'
		AND pg_get_indexdef(i.indexrelid) LIKE '%(endpoint, tenant, created_at, id)%'`, schema).Scan(&indexes); err != nil || indexes != 1 {
		t.Errorf("listing indexes after the upgrade: %d, %v; want the one built beforehand", indexes, err)
	}
	other := openStore(t, newSchema(t), nil)
	if _, err := other.ListTasks(context.Background(), task.ListQuery{Request: caller, Cursor: first.NextCursor, Limit: 2}); !errors.Is(err, task.ErrBadCursor) {
		t.Errorf("another schema's store took the cursor: %v", err)
	}
}
