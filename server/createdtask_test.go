package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// findCounter is a SQLite store that counts its FindTask calls.
type findCounter struct {
	*sqlite.Store
	finds atomic.Int32
}

func (f *findCounter) FindTask(ctx context.Context, rc task.RequestContext) (task.Task, bool, error) {
	f.finds.Add(1)
	return f.Store.FindTask(ctx, rc)
}

// TestCreatedTaskSparesReadBack: a handler that hands the server the
// snapshot Enqueue returned (Request.CreatedTask) gets its call answered
// without a FindTask; a bare handle, or a snapshot of another task than the
// handle names, is read back as before.
func TestCreatedTaskSparesReadBack(t *testing.T) {
	for _, tc := range []struct {
		name      string
		handle    func(rq *server.Request, created, other task.Task) task.Handle
		wantFinds int32
		wantOther bool // the call is answered with the other task
	}{
		{name: "snapshot", handle: func(rq *server.Request, created, _ task.Task) task.Handle { return rq.CreatedTask(created) }},
		{name: "bare handle", wantFinds: 1,
			handle: func(_ *server.Request, created, _ task.Task) task.Handle { return task.Handle{ID: created.ID()} }},
		{name: "snapshot of another task", wantFinds: 1, wantOther: true,
			handle: func(rq *server.Request, created, other task.Task) task.Handle {
				rq.CreatedTask(created)
				return task.Handle{ID: other.ID()}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := sqlite.Open(t.Context(), sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), EventPoll: -1,
				Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			fc := &findCounter{Store: st}
			var otherID string
			ep := taskEndpoint()
			server.AddTaskTool[taskBuildIn, taskBuildOut](ep, &mcp.Tool{Name: "build"},
				func(ctx context.Context, rq *server.Request, _ taskBuildIn, cc *task.CreationContext) (task.Handle, error) {
					created, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{})
					if err != nil {
						return task.Handle{}, err
					}
					other, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{})
					if err != nil {
						return task.Handle{}, err
					}
					otherID = other.ID()
					return tc.handle(rq, created, other), nil
				})
			srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: fc,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			defer hs.Close()

			req := taskCallReq("build", `{"n":1}`, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`, nil)
			req.URL.Scheme, req.URL.Host, req.RequestURI = "http", hs.Listener.Addr().String(), ""
			resp, err := hs.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			res, err := mcptest.ParseResponse(resp.StatusCode, resp.Header, b)
			if err != nil || res.Status != http.StatusOK {
				t.Fatalf("tools/call: %v, HTTP %d: %s", err, res.Status, b)
			}
			var got struct {
				ResultType string `json:"resultType"`
				TaskID     string `json:"taskId"`
				Status     string `json:"status"`
			}
			if err := res.DecodeResult(&got); err != nil {
				t.Fatalf("%v: %s", err, b)
			}
			if got.ResultType != "task" || got.Status != string(task.Working) || (got.TaskID == otherID) != tc.wantOther {
				t.Errorf("answer %+v (other task %v), want a working task, the other one: %v", got, got.TaskID == otherID, tc.wantOther)
			}
			if diff := cmp.Diff(tc.wantFinds, fc.finds.Load()); diff != "" {
				t.Errorf("FindTask calls (-want +got):\n%s", diff)
			}
		})
	}
}
