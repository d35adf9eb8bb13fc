package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"github.com/jackc/pgx/v5/pgxpool"
	"io"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// The tests run against a real server: TASKWIRE_TEST_POSTGRES_URL, default
// postgres://postgres@127.0.0.1:5432/test. Each test works in a schema of
// its own, dropped when it ends. Without a reachable server the tests are
// skipped, except under CI=true, where that is a failure.

const defaultTestURL = "postgres://postgres@127.0.0.1:5432/test"

func testURL() string {
	if u := os.Getenv("TASKWIRE_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return defaultTestURL
}

// storeURL is the URL of the stores under test: testURL with asynchronous
// commit, which changes nothing the tests observe (commits are visible at
// once either way; only a server crash could lose them) and saves a WAL
// flush per write.
func storeURL() string {
	u := testURL()
	if strings.Contains(u, "synchronous_commit") {
		return u
	}
	if strings.Contains(u, "?") {
		return u + "&synchronous_commit=off"
	}
	return u + "?synchronous_commit=off"
}

var (
	reachOnce sync.Once
	reachErr  error
)

// requireDB skips the test, or fails it under CI=true, when the server is
// unreachable.
func requireDB(t testing.TB) {
	t.Helper()
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, testURL())
		if err == nil {
			err = conn.Ping(ctx)
			conn.Close(ctx)
		}
		reachErr = err
	})
	if reachErr == nil {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("PostgreSQL at %s (TASKWIRE_TEST_POSTGRES_URL) is required under CI=true: %v", redacted(testURL()), reachErr)
	}
	t.Skipf("PostgreSQL at %s unreachable (set TASKWIRE_TEST_POSTGRES_URL): %v", redacted(testURL()), reachErr)
}

// redacted returns a connection URL without its password.
func redacted(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	return p.Redacted()
}

// newSchema returns the name of a fresh schema that is dropped, with
// everything in it, when the test ends. The schema itself is created by
// the first Open.
func newSchema(t testing.TB) string {
	t.Helper()
	requireDB(t)
	schema := randomSchema()
	t.Cleanup(func() { dropSchemas(t, schema) })
	return schema
}

func randomSchema() string {
	var b [6]byte
	rand.Read(b[:])
	return "twtest_" + hex.EncodeToString(b[:])
}

// dropSchemas drops schemas with everything in them.
func dropSchemas(t testing.TB, schemas ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, testURL())
	if err != nil {
		t.Errorf("drop schemas %v: %v", schemas, err)
		return
	}
	defer conn.Close(ctx)
	for _, schema := range schemas {
		if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	}
}

// schemaPool hands the subtests of one test schemas of their own, and
// recycles them: when a subtest ends (after its store closed) its schema is
// emptied and handed to a later subtest, which saves creating and
// migrating one per subtest. Every schema is dropped when the test ends.
type schemaPool struct {
	mu    sync.Mutex
	all   []string
	free  []string
	admin *pgx.Conn
}

func newSchemaPool(t *testing.T) *schemaPool {
	requireDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, testURL())
	if err != nil {
		t.Fatal(err)
	}
	p := &schemaPool{admin: admin}
	t.Cleanup(func() {
		admin.Close(context.Background())
		dropSchemas(t, p.all...)
	})
	return p
}

// get returns a schema for st: empty, or not yet created.
func (p *schemaPool) get(st *testing.T) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var schema string
	if n := len(p.free); n > 0 {
		schema, p.free = p.free[n-1], p.free[:n-1]
	} else {
		schema = randomSchema()
		p.all = append(p.all, schema)
	}
	st.Cleanup(func() { p.put(schema) }) // runs after the store's Close
	return schema
}

func (p *schemaPool) put(schema string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ident := pgx.Identifier{schema}.Sanitize()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Jobs go with their tasks. A failure leaves the schema out of the
	// pool; it is dropped with the others.
	if _, err := p.admin.Exec(ctx, "DELETE FROM "+ident+".tasks; DELETE FROM "+ident+".outbox; DELETE FROM "+ident+".sessions"); err == nil {
		p.free = append(p.free, schema)
	}
}

// quiet is a logger for stores under test.
var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// openStore opens a store on schema, closed when the test ends.
func openStore(t testing.TB, schema string, now func() time.Time) *Store {
	t.Helper()
	return openWithHooks(t, Options{Schema: schema, Now: now}, testHooks{})
}

// openWithHooks opens a store with the test URL and a small pool, closed
// when the test ends.
func openWithHooks(t testing.TB, opts Options, hooks testHooks) *Store {
	t.Helper()
	opts.URL = storeURL()
	if opts.MaxConns == 0 {
		opts.MaxConns = 4
	}
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := open(ctx, opts, hooks)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock {
	return &clock{t: time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)}
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// creation returns a creation context for tool with the given raw
// arguments, bound to endpoint "main", tenant and principal "alice".
func creation(t testing.TB, tenant, tool, args string) *task.CreationContext {
	t.Helper()
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call", Tool: tool,
		Arguments:  json.RawMessage(args),
		InputKinds: []string{task.InputElicitationForm, task.InputRoots},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &task.CreationContext{
		Request: task.RequestContext{Endpoint: "main", Tenant: tenant, Principal: "alice", ProtocolVersion: "2026-07-28"},
		Origin:  o,
	}
}

// rc is the request context that may see a task created by creation.
func rc(id, tenant string) task.RequestContext {
	return task.RequestContext{TaskID: id, Endpoint: "main", Tenant: tenant, Principal: "alice"}
}

func formRequest(msg string) *mcp.InputRequest {
	return mcp.NewElicitFormRequest(msg, json.RawMessage(`{"type":"object"}`))
}

// waitFor returns the first value on ch, failing the test after 10 s.
func waitFor[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out after 10 s waiting for %s", what)
		panic("unreachable")
	}
}

// subscribe collects the hints of p for the task with the given ID (all
// tasks when id is empty) on a buffered channel.
func subscribe(t testing.TB, p task.EventPublisher, id string) <-chan string {
	ch := make(chan string, 1024)
	unsub := p.Subscribe(func(got string) {
		if id == "" || got == id {
			select {
			case ch <- got:
			default:
			}
		}
	})
	t.Cleanup(unsub)
	return ch
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// storeAtVersion returns a bare Store (no listener, no publisher) over a
// fresh schema migrated to version, as a node of that version left it,
// and its pool, closed when the test ends. Open would migrate to the
// current version.
func storeAtVersion(t *testing.T, version int) (*Store, *pgxpool.Pool) {
	t.Helper()
	ctx := ctxT(t)
	schema := newSchema(t)
	pool, err := pgxpool.New(ctx, storeURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	s := &Store{opts: Options{Schema: schema}, pool: &boundedPool{Pool: pool, timeout: DefaultTimeout}, q: newQueries(schema), log: quiet}
	if err := s.migrate(ctx, version); err != nil {
		t.Fatal(err)
	}
	return s, pool
}
