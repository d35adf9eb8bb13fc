package main

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/faultnet"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
)

// testSchema returns a fresh schema name, dropped when the test ends.
func testSchema(t *testing.T, pgURL string) string { return pgtest.Schema(t, pgURL, "twcmd_") }

// proxiedPostgres returns a store spec whose connections pass through a
// loopback proxy the test can freeze or drop.
func proxiedPostgres(t *testing.T) (storeSpec, *faultnet.Proxy) {
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
	return storeSpec{Spec: store.Spec{Kind: store.Postgres, URL: u.String()}, Schema: testSchema(t, raw)}, p
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
// fails cleanly (-32603, or 503 when the queue is full) within the store
// timeout instead of waiting for the request deadline, inline tools keep
// answering 200 over HTTP all along, and everything works again once the
// network heals.
func TestFrozenDatabase(t *testing.T) {
	spec, proxy := proxiedPostgres(t)
	spec.Timeout = 500 * time.Millisecond
	cfg := testConfig("", 0)
	cfg.Store = spec
	// The clients create tasks far faster than a caller may by default;
	// the cap on active tasks stays, so that its count, a store call, is
	// made with the database frozen too.
	cfg.TaskLimits = server.TaskLimits{CreateRate: server.NoLimit}
	n := start(t, cfg)
	cs := newClients(t, n.URL())
	c := cs.client()
	held := createTask(t, c, toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0})

	proxy.Freeze()
	type answer struct {
		status int
		code   int64
		err    error
	}
	const clients = 300 // more than 32 handlers and a queue of 128
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
				if i%10 == 0 {
					r, err = c.GetTask(t.Context(), held)
				} else {
					r, err = c.CallTool(t.Context(), toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0})
				}
				a := answer{status: statusOf(r), err: err}
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
	for a, k := range got {
		ok := a.err == nil && a.code == mcp.CodeInternalError && (a.status == http.StatusOK || a.status == http.StatusServiceUnavailable)
		if !ok {
			t.Errorf("%d task operations answered HTTP %d, code %d, error %v; want -32603 with 200 or 503", k, a.status, a.code, a.err)
		}
	}
	t.Logf("task operations with the database frozen: %v", got)

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
