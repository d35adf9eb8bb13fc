package durable_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/postgres"
)

func openPostgres(t *testing.T) (*postgres.Store, string, string) {
	t.Helper()
	raw := pgtest.URL(t)
	schema := pgtest.Schema(t, raw, "twdurable_")
	st, err := postgres.Open(context.Background(), postgres.Options{URL: raw, Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, raw, schema
}

// TestPostgres runs the end-to-end path on PostgreSQL, then breaks the
// schema under the server: the failed Enqueue is -32603 with the
// SQLSTATE in the log.
func TestPostgres(t *testing.T) {
	st, raw, schema := openPostgres(t)
	var s durable.Set
	durable.Add(&s, sumTool())
	r := newRig(t, st, &s, &s)

	got := r.awaitEnd(t, r.create(t, "sum", map[string]any{"a": 20, "b": 22}))
	if res := decodeResult(t, got.Result); got.Status != mcp.TaskCompleted || string(res.StructuredContent) != `{"sum":42}` {
		t.Fatalf("status %s, result %s, error %v", got.Status, got.Result, got.Error)
	}

	ctx := context.Background()
	admin, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, `DROP TABLE `+pgx.Identifier{schema, "jobs"}.Sanitize()+` CASCADE`); err != nil {
		t.Fatal(err)
	}
	const canary = "canary-91ab"
	resp := r.call(t, "sum", map[string]any{"a": 1, "b": 2, "key": canary})
	checkInternalError(t, resp, r.logs.String(), canary, "42P01")
}
