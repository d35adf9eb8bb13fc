package server_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// defaultsEndpoint is an endpoint with one task tool enqueuing in st,
// with the TaskProtocolVersions given (nil: left to the default).
func defaultsEndpoint(st *sqlite.Store, taskVersions []string) *server.Endpoint {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "tasks", Version: "1.0.0", TaskProtocolVersions: taskVersions})
	server.AddTaskTool[ltIn, ltOut](ep, &mcp.Tool{Name: "build"},
		func(ctx context.Context, _ *server.Request, in ltIn, cc *task.CreationContext) (task.Handle, error) {
			tk, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{IdempotencyKey: in.Key})
			if err != nil {
				return task.Handle{}, err
			}
			return task.Handle{ID: tk.ID()}, nil
		})
	return ep
}

func openDefaultsStore(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: path, EventPoll: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestSessionsDefaultToTheTaskManager: a server given a durable store as
// task manager and no session store keeps 2025-era sessions in that
// store, so that a session opened on one node answers on another node of
// the same store (here, a second server on the same file after the first
// has stopped).
func TestSessionsDefaultToTheTaskManager(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tasks.db")
	start := func(st *sqlite.Store) *httptest.Server {
		srv, err := server.New(server.Options{
			Endpoints: []*server.Endpoint{defaultsEndpoint(st, nil)}, TaskManager: st, Admission: server.DevAdmission(),
			Sessions: &server.SessionOptions{MaxPerPrincipal: 5}, // no Store
		})
		if err != nil {
			t.Fatal(err)
		}
		hs := httptest.NewServer(srv)
		t.Cleanup(func() { hs.Close(); srv.Close() })
		return hs
	}
	a := start(openDefaultsStore(t, path))
	c := &legacyClient{t: t, url: a.URL + "/mcp", auth: "Bearer alice"}
	c.mustInitialize(ltV11, ltTasksCaps)
	a.Close()

	b := start(openDefaultsStore(t, path))
	c.url = b.URL + "/mcp" // the same session ID, on another server
	if rep := c.request("tools/list", ""); rep.status != http.StatusOK || rep.final(t).Error != nil {
		t.Fatalf("tools/list in the session on the second server: HTTP %d, %s", rep.status, rep.body)
	}
}

// TestTaskProtocolVersionsDefault: an endpoint with a task tool and no
// TaskProtocolVersions, on a server with a task manager, serves Tasks
// for the latest revision; an empty list still serves them for none, and
// New says so.
func TestTaskProtocolVersionsDefault(t *testing.T) {
	st := openDefaultsStore(t, filepath.Join(t.TempDir(), "tasks.db"))
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{defaultsEndpoint(st, nil)}, TaskManager: st})
	if err != nil {
		t.Fatalf("New with the default TaskProtocolVersions: %v", err)
	}
	hs := httptest.NewServer(srv)
	defer func() { hs.Close(); srv.Close() }()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` +
		mcp.LatestProtocolVersion + `","io.modelcontextprotocol/clientCapabilities":{"extensions":{"` + mcp.ExtensionTasks +
		`":{}}}},"name":"build","arguments":{"key":"k"}}}`
	req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "build")
	req.Header.Set("Mcp-Protocol-Version", mcp.LatestProtocolVersion)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var sb strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		sb.Write(buf[:n])
		if err != nil {
			break
		}
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(sb.String(), `"taskId"`) {
		t.Errorf("tools/call with Tasks: HTTP %d %s, want a created task", resp.StatusCode, sb.String())
	}

	_, err = server.New(server.Options{Endpoints: []*server.Endpoint{defaultsEndpoint(st, []string{})}, TaskManager: st})
	if err == nil || !strings.Contains(err.Error(), "does not serve Tasks") {
		t.Errorf("New with TaskProtocolVersions []string{} = %v, want the error saying Tasks are not served", err)
	}
}
