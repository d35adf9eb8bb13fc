package server_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// ltSQLiteNode is one node over a SQLite file: the store is its task
// manager and its session store.
type ltSQLiteNode struct {
	st  *sqlite.Store
	srv *server.Server
	hs  *httptest.Server
}

func startSQLiteNode(t *testing.T, path string) *ltSQLiteNode {
	t.Helper()
	st, err := sqlite.Open(context.Background(), sqlite.Options{Path: path, EventPoll: -1, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "tasks", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	server.AddTaskTool[ltIn, ltOut](ep, &mcp.Tool{Name: "build"},
		func(ctx context.Context, _ *server.Request, in ltIn, cc *task.CreationContext) (task.Handle, error) {
			tk, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{IdempotencyKey: in.Key})
			if err != nil {
				return task.Handle{}, err
			}
			return task.Handle{ID: tk.ID()}, nil
		})
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep}, TaskManager: st, Admission: server.DevAdmission(),
		Sessions: &server.SessionOptions{Store: st.Sessions()},
	})
	if err != nil {
		t.Fatal(err)
	}
	n := &ltSQLiteNode{st: st, srv: srv, hs: httptest.NewServer(srv)}
	t.Cleanup(n.stop)
	return n
}

// stop closes the node; stopping twice is a no-op.
func (n *ltSQLiteNode) stop() {
	if n.hs == nil {
		return
	}
	n.hs.Close()
	n.srv.Close()
	n.st.Close()
	n.hs = nil
}

// TestLegacyTaskSurvivesRestartSQLite: a task created in a 2025-11-25
// session is read by tasks/get in the same session after the node
// restarts: the session and the task both live in the SQLite file.
func TestLegacyTaskSurvivesRestartSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "taskwire.db")
	first := startSQLiteNode(t, path)
	c := &legacyClient{t: t, url: first.hs.URL + "/mcp", auth: "Bearer alice"}
	c.mustInitialize(ltV11, ltTasksCaps)
	rep := c.request("tools/call", `{"name":"build","arguments":{"key":"k"},"task":{}}`)
	statusOK(t, rep)
	var created mcp.LegacyCreateTaskResult
	if err := json.Unmarshal(rep.final(t).Result, &created); err != nil || created.Task.TaskID == "" {
		t.Fatalf("tools/call = %s", rep.body)
	}
	before := c.request("tasks/get", `{"taskId":"`+created.Task.TaskID+`"}`)
	statusOK(t, before)
	first.stop()

	second := startSQLiteNode(t, path)
	c.url = second.hs.URL + "/mcp" // same session ID, new process state
	after := c.request("tasks/get", `{"taskId":"`+created.Task.TaskID+`"}`)
	statusOK(t, after)
	if string(after.final(t).Result) != string(before.final(t).Result) {
		t.Errorf("after the restart tasks/get = %s, before %s", after.final(t).Result, before.final(t).Result)
	}
	mustValidate(t, "GetTaskResult", after.final(t).Result)
	// Another identity still sees nothing, after the restart too.
	bob := &legacyClient{t: t, url: c.url, auth: "Bearer bob"}
	bob.mustInitialize(ltV11, ltTasksCaps)
	if m := bob.request("tasks/get", `{"taskId":"`+created.Task.TaskID+`"}`).final(t); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("bob's tasks/get = %+v", m)
	}
}
