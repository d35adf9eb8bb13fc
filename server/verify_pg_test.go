package server_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/task"
)

// testPostgres returns the URL of the tests' PostgreSQL and an admin
// connection to it, closed when the test ends; see pgtest.URL for when the
// test is skipped.
func testPostgres(t *testing.T) (string, *pgx.Conn) {
	t.Helper()
	raw := pgtest.URL(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	admin, err := pgx.Connect(ctx, raw)
	if err != nil {
		t.Fatalf("admin connection: %v", err)
	}
	t.Cleanup(func() { admin.Close(context.Background()) })
	return raw, admin
}

// TestVerifyRetriesTransientErrors terminates the store's database
// sessions (pg_terminate_backend) right after each Enqueue commits, so that
// the verification of the handle meets a dead connection: it retries, and
// the client gets the task it created rather than -32603.
func TestVerifyRetriesTransientErrors(t *testing.T) {
	raw, admin := testPostgres(t)
	name := pgtest.Schema(t, raw, "twverify_") // schema and application_name
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("application_name", name)
	u.RawQuery = q.Encode()
	st, err := postgres.Open(t.Context(), postgres.Options{URL: u.String(), Schema: name,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	ep := taskEndpoint()
	server.AddTaskTool[taskBuildIn, taskBuildOut](ep, &mcp.Tool{Name: "build"},
		func(ctx context.Context, _ *server.Request, _ taskBuildIn, cc *task.CreationContext) (task.Handle, error) {
			tk, err := st.Enqueue(ctx, cc, backend.EnqueueOptions{})
			if err != nil {
				return task.Handle{}, err
			}
			var n int
			if err := admin.QueryRow(ctx, `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 5000))
				FROM pg_stat_activity WHERE application_name = $1`, name).Scan(&n); err != nil || n == 0 {
				t.Errorf("terminating the store's sessions: %d, %v", n, err)
			}
			return task.Handle{ID: tk.ID()}, nil
		})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: st})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()

	post := func(req *http.Request) (int, []byte) {
		t.Helper()
		req.URL, _ = url.Parse(hs.URL + "/mcp")
		req.RequestURI, req.Host = "", ""
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	for i := range 5 {
		status, body := post(taskCallReq("build", `{"n":1}`, taskCaps, nil))
		var got struct {
			Result *mcp.CreateTaskResult `json:"result"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &got) != nil || got.Result == nil || got.Result.TaskID == "" {
			t.Fatalf("creation %d: HTTP %d %s", i, status, strings.TrimSpace(string(body)))
		}
		status, body = post(taskReq("tasks/get", got.Result.TaskID, taskCaps, "", nil))
		if status != http.StatusOK || !strings.Contains(string(body), `"result"`) {
			t.Errorf("creation %d: tasks/get of the reported task: HTTP %d %s", i, status, body)
		}
	}
}
