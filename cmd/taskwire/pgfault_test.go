package main

import (
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/faultnet"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
)

// bothStores returns, by name, a fresh store spec of each kind for a
// test: an SQLite file in its temporary directory, or a PostgreSQL schema
// dropped when it ends.
func bothStores() map[string]func(t *testing.T) node.StoreSpec {
	return map[string]func(t *testing.T) node.StoreSpec{
		"sqlite": func(t *testing.T) node.StoreSpec {
			return node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: filepath.Join(t.TempDir(), "tasks.db")}}
		},
		"postgres": func(t *testing.T) node.StoreSpec {
			raw := pgtest.URL(t)
			return node.StoreSpec{Spec: store.Spec{Kind: store.Postgres, URL: raw}, Schema: testSchema(t, raw)}
		},
	}
}

// testSchema returns a fresh schema name, dropped when the test ends.
func testSchema(t *testing.T, pgURL string) string { return pgtest.Schema(t, pgURL, "twcmd_") }

// proxiedPostgres returns a store spec whose connections pass through a
// loopback proxy the test can freeze or drop.
func proxiedPostgres(t *testing.T) (node.StoreSpec, *faultnet.Proxy) {
	t.Helper()
	raw := pgtest.URL(t)
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultnet.Listen(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	u.Host = p.Addr()
	return node.StoreSpec{Spec: store.Spec{Kind: store.Postgres, URL: u.String()}, Schema: testSchema(t, raw)}, p
}

// clients makes mcptest clients for a node's URL that share one HTTP
// connection pool, one per goroutine (a client is not safe for concurrent
// use).
type clients struct {
	base, path string
	hc         *http.Client
}

func newClients(t *testing.T, nodeURL string) *clients {
	base, path, _ := strings.Cut(strings.TrimPrefix(nodeURL, "http://"), "/")
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	t.Cleanup(tr.CloseIdleConnections)
	return &clients{base: "http://" + base, path: "/" + path, hc: &http.Client{Transport: tr, Timeout: waitFor}}
}

func (cs *clients) client() *mcptest.Client {
	c := mcptest.NewClient(mcptest.Remote(cs.base, cs.hc), cs.path)
	c.DeclareTasks()
	return c
}

// TestFrozenDatabase freezes the network between a serve node and its
// PostgreSQL (connections stay open, bytes stop) while clients keep more
// task operations coming than the handler pool and its queue hold: each
// tasks/get, of either protocol era, is shed with HTTP 503, Retry-After
// and -32603 (the store's deadline passed, it waited --store-timeout for a
// slot, or the queue was full) instead of waiting for the request
// deadline; a creation is too, or answers 200 -32603 when its handler's
// write timed out (the outcome is unknown then). Inline tools keep
// answering 200 over HTTP all along, and everything works again once the
// network heals.
func TestFrozenDatabase(t *testing.T) {
	spec, proxy := proxiedPostgres(t)
	spec.Timeout = 500 * time.Millisecond
	cfg := testConfig("", 0)
	cfg.StoreSpec = spec
	// The clients create tasks far faster than a caller may by default;
	// the cap on active tasks stays, so that its count, a store call, is
	// made with the database frozen too.
	cfg.TaskLimits = server.TaskLimits{CreateRate: server.NoLimit}
	n := start(t, cfg)
	cs := newClients(t, n.URL())
	c := cs.client()
	held := createTask(t, c, toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0})
	sid := initializeWith(t, n.URL(), `{"tasks":{}}`)

	proxy.Freeze()
	type answer struct {
		create     bool
		status     int
		retryAfter string
		code       int64
		err        error
	}
	var slowest atomic.Int64 // nanoseconds
	const clients = 300      // more than 32 handlers and a queue of 128
	var (
		mu      sync.Mutex
		got     = map[answer]int{}
		busy    = make(chan struct{})
		sawBusy sync.Once
		stop    = make(chan struct{})
		wg      sync.WaitGroup
	)
	for i := range clients {
		wg.Go(func() {
			c := cs.client()
			for {
				var r *mcptest.Response
				var err error
				began := time.Now()
				switch {
				case i%10 == 0:
					r, err = c.GetTask(t.Context(), held)
				case i%10 == 1:
					r, err = legacyGetTask(cs.hc, n.URL(), sid, held)
				default:
					r, err = c.CallTool(t.Context(), toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0})
				}
				if d := int64(time.Since(began)); d > slowest.Load() {
					slowest.Store(d) // racy maximum; a log figure only
				}
				a := answer{create: i%10 > 1, status: statusOf(r), err: err}
				if r != nil {
					a.retryAfter = r.Header.Get("Retry-After")
				}
				if e := errOf(r); e != nil {
					a.code = e.Code
				}
				mu.Lock()
				got[a]++
				mu.Unlock()
				if a.status == http.StatusServiceUnavailable {
					sawBusy.Do(func() { close(busy) })
				}
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
			}
		})
	}
	select {
	case <-busy: // the task operations fill their queue
	case <-time.After(waitFor):
		t.Error("no task operation was refused for a full queue")
	}
	// Inline tools answer while the task operations fail.
	for i := range 20 {
		r, err := c.CallTool(t.Context(), "text.stats", map[string]any{"text": "one two"})
		if err != nil || r.Status != http.StatusOK || r.Error != nil {
			t.Errorf("inline call %d with the database frozen: %v, HTTP %d, %v", i, err, statusOf(r), errOf(r))
			break
		}
	}
	close(stop)
	wg.Wait()
	// A new 2025-era session needs the store too.
	if r, err := legacyInitialize(cs.hc, n.URL()); err != nil || statusOf(r) != http.StatusServiceUnavailable ||
		r.Header.Get("Retry-After") != "1" || errOf(r) == nil || errOf(r).Code != mcp.CodeInternalError {
		t.Errorf("initialize with the database frozen: %v, HTTP %d, %v; want 503, Retry-After 1, -32603", err, statusOf(r), errOf(r))
	}
	for a, k := range got {
		shed := a.status == http.StatusServiceUnavailable && a.retryAfter == "1"
		unknown := a.create && a.status == http.StatusOK && a.retryAfter == ""
		if a.err != nil || a.code != mcp.CodeInternalError || !shed && !unknown {
			t.Errorf("%d task operations (creations: %v) answered HTTP %d, Retry-After %q, code %d, error %v; want 503, Retry-After 1, -32603",
				k, a.create, a.status, a.retryAfter, a.code, a.err)
		}
	}
	t.Logf("task operations with the database frozen: %v; slowest answer %v (store timeout %v)",
		got, time.Duration(slowest.Load()), spec.Timeout)

	proxy.Unfreeze()
	deadline := time.Now().Add(waitFor)
	for {
		r, err := c.CallTool(t.Context(), toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0})
		if err == nil && r.Status == http.StatusOK && r.Error == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task creation after the network healed: %v, HTTP %d, %v", err, statusOf(r), errOf(r))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if g := getTask(t, c, held); g.TaskID != held {
		t.Errorf("tasks/get after the network healed: %+v", g)
	}
}

// initializeWith opens a 2025-11-25 session with the given client
// capabilities.
func initializeWith(t *testing.T, url, caps string) string {
	t.Helper()
	resp, body := legacyPost(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":`+
		caps+`,"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d, session %q: %s", resp.StatusCode, sid, body)
	}
	if resp, body := legacyPost(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d: %s", resp.StatusCode, body)
	}
	return sid
}

// legacyGetTask sends a 2025-11-25 tasks/get for id in session sid. It
// may run on any goroutine.
func legacyGetTask(hc *http.Client, url, sid, id string) (*mcptest.Response, error) {
	return legacyDo(hc, url, sid, `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"`+id+`"}}`)
}

// legacyInitialize sends a 2025-11-25 initialize and returns its answer.
func legacyInitialize(hc *http.Client, url string) (*mcptest.Response, error) {
	return legacyDo(hc, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
}

// legacyDo posts one 2025-11-25 message and parses the answer.
func legacyDo(hc *http.Client, url, sid, body string) (*mcptest.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	return mcptest.ParseResponse(resp.StatusCode, resp.Header, b)
}

func statusOf(r *mcptest.Response) int {
	if r == nil {
		return 0
	}
	return r.Status
}

func errOf(r *mcptest.Response) *mcp.Error {
	if r == nil {
		return nil
	}
	return r.Error
}
