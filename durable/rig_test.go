package durable_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/worker"
)

// waitFor bounds every wait of these tests.
const waitFor = 30 * time.Second

// store is what the rig needs of a durable store.
type store = backend.Store

// rig is a real deployment of one Set: a store, a server on loopback HTTP
// with the set served on /mcp, and a worker runtime running the set.
type rig struct {
	st     store
	srv    *server.Server
	url    string          // the server's base URL
	client *mcptest.Client // declares the Tasks extension
	logs   *logBuffer
	events chan struct{} // a hint per task change
}

// stores are the durable stores of the tests that run on each.
var stores = []struct {
	name string
	open func(t *testing.T) store
}{
	{"sqlite", func(t *testing.T) store { return openSQLite(t) }},
	{"postgres", func(t *testing.T) store { st, _, _ := openPostgres(t); return st }},
}

// openSQLite opens a fresh SQLite store in a temporary directory.
func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{
		Path: filepath.Join(t.TempDir(), "tasks.db"), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newRig serves the set serve from st and, when work is not nil, runs the
// handlers of the set work on a worker runtime over st.
func newRig(t *testing.T, st store, serve, work *durable.Set) *rig {
	t.Helper()
	return newRigEnqueuer(t, st, st, serve, work)
}

// newRigEnqueuer is newRig with the tools of serve enqueuing in enq
// instead of st.
func newRigEnqueuer(t *testing.T, st store, enq backend.Enqueuer, serve, work *durable.Set) *rig {
	t.Helper()
	r := &rig{st: st, logs: &logBuffer{}, events: make(chan struct{}, 1)}
	logger := slog.New(slog.NewTextHandler(r.logs, nil))
	unsubscribe := st.EventPublisher().Subscribe(func(string) {
		select {
		case r.events <- struct{}{}:
		default:
		}
	})
	t.Cleanup(unsubscribe)

	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "main", Version: "1.0.0", TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	if err := serve.Serve(ep, enq); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep}, Admission: server.DevAdmission(), TaskManager: st, Logger: logger,
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		srv.Close()
		hs.Close()
	})
	r.srv, r.url = srv, hs.URL
	r.client = r.modernClient(t)
	r.client.DeclareTasks()

	if work != nil {
		rt, err := worker.New(worker.Options{
			Store: st.Jobs(), Events: st.EventPublisher(), Concurrency: 2, Lease: 5 * time.Second,
			ShutdownGrace: time.Second, Logger: logger,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := work.Work(rt); err != nil {
			t.Fatalf("Work: %v", err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- rt.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	return r
}

// modernClient returns a 2026-07-28 client of the rig's server that
// declares no capabilities.
func (r *rig) modernClient(t *testing.T) *mcptest.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return mcptest.NewClient(mcptest.Remote(r.url, &http.Client{Transport: tr, Timeout: waitFor}), "/mcp")
}

// call sends tools/call and returns the response.
func (r *rig) call(t *testing.T, tool string, args any) *mcptest.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	resp, err := r.client.CallTool(ctx, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// create calls tool and returns the ID of the task it created.
func (r *rig) create(t *testing.T, tool string, args any) string {
	t.Helper()
	resp := r.call(t, tool, args)
	h, err := resp.TaskHandle()
	if err != nil {
		t.Fatalf("tools/call %s: %v (body %s)", tool, err, resp.Body)
	}
	return h.TaskID
}

// awaitEnd waits, on the store's change hints, until the task is no
// longer working or waiting for input, and returns its tasks/get result.
func (r *rig) awaitEnd(t *testing.T, id string) *mcp.GetTaskResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	for {
		resp, err := r.client.GetTask(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := resp.Task()
		if err != nil {
			t.Fatalf("tasks/get: %v (body %s)", err, resp.Body)
		}
		if got.Status.Terminal() {
			return got
		}
		select {
		case <-r.events:
		case <-ctx.Done():
			t.Fatalf("task still working after %v", waitFor)
		}
	}
}

// logBuffer collects a logger's output.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// callRaw sends tools/call with args, a JSON object, in the request body
// exactly as given: the client's other calls re-encode their arguments.
func (r *rig) callRaw(t *testing.T, tool, args string) *mcptest.Response {
	t.Helper()
	meta, err := json.Marshal(map[string]any{
		mcp.MetaProtocolVersion:    mcp.LatestProtocolVersion,
		mcp.MetaClientCapabilities: r.client.Capabilities,
		mcp.MetaClientInfo:         mcp.Implementation{Name: "raw", Version: "1.0.0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	name, _ := json.Marshal(tool)
	body := `{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": ` + string(name) +
		`, "arguments": ` + args + `, "_meta": ` + string(meta) + `}}`
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "http://localhost"+r.client.Path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LatestProtocolVersion)
	req.Header.Set("Mcp-Method", mcp.MethodToolsCall)
	req.Header.Set("Mcp-Name", tool)
	resp, err := r.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}
