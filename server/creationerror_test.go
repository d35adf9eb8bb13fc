package server_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

// lockedLog is a log sink safe for the server's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// creationStore is a real durable store, broken before the call.
type creationStore struct {
	enqueuer backend.Enqueuer
	manager  task.Manager
	// logWants are substrings the server's log line must carry.
	logWants []string
}

// TestCreationStoreFailureNeverLeaks checks the error rule with real store
// failures inside a creation handler that returns Enqueue's error as it
// is: the client receives exactly the fixed -32603 "Internal error"; the
// log carries the cause (the driver's text, PostgreSQL's SQLSTATE), and
// never the arguments. A *server.ToolError, by contrast, reaches the model
// as an isError result.
func TestCreationStoreFailureNeverLeaks(t *testing.T) {
	const secretArg = "acct-secret-7731"
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	stores := map[string]func(t *testing.T) creationStore{
		"postgres dropped table": func(t *testing.T) creationStore {
			raw, admin := testPostgres(t)
			schema := pgtest.Schema(t, raw, "twcreate_")
			st, err := postgres.Open(t.Context(), postgres.Options{URL: raw, Schema: schema, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			if _, err := admin.Exec(t.Context(), `DROP TABLE `+schema+`.jobs`); err != nil {
				t.Fatal(err)
			}
			return creationStore{st, st, []string{"relation", "jobs", "does not exist", "SQLSTATE 42P01"}}
		},
		"sqlite dropped table": func(t *testing.T) creationStore {
			path := filepath.Join(t.TempDir(), "t.db")
			st, err := sqlite.Open(context.Background(), sqlite.Options{Path: path, EventPoll: -1, Logger: quiet})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec(`DROP TABLE jobs`); err != nil {
				t.Fatal(err)
			}
			return creationStore{st, st, []string{"sqlite", "no such table: jobs"}}
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			cs := open(t)
			ep := taskEndpoint()
			server.AddTaskTool[taskBuildIn, taskBuildOut](ep, &mcp.Tool{Name: "build"},
				func(ctx context.Context, _ *server.Request, in taskBuildIn, cc *task.CreationContext) (task.Handle, error) {
					if in.N < 0 {
						return task.Handle{}, server.NewToolError(errors.New("n must not be negative"))
					}
					tk, err := cs.enqueuer.Enqueue(ctx, cc, backend.EnqueueOptions{})
					if err != nil {
						return task.Handle{}, fmt.Errorf("enqueue for %s: %w", in.B, err)
					}
					return task.Handle{ID: tk.ID()}, nil
				})
			var logs lockedLog
			srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: cs.manager,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			post := func(req *http.Request) string {
				t.Helper()
				req.URL, _ = url.Parse(hs.URL + "/mcp")
				req.RequestURI, req.Host = "", ""
				resp, err := hs.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				body, _ := io.ReadAll(resp.Body)
				if resp.StatusCode != http.StatusOK {
					t.Errorf("HTTP %d", resp.StatusCode)
				}
				return strings.TrimSpace(string(body))
			}

			body := post(taskCallReq("build", `{"n":1,"b":"`+secretArg+`"}`, taskCaps, nil))
			if diff := cmp.Diff(taskInternal, body); diff != "" {
				t.Errorf("client body (-want +got):\n%s", diff)
			}
			out := logs.String()
			if !strings.Contains(out, `msg="task creation failed"`) || !strings.Contains(out, "tool=build") {
				t.Errorf("creation failure not logged:\n%s", out)
			}
			for _, w := range append(cs.logWants, "enqueue for <argument>") {
				if !strings.Contains(out, w) {
					t.Errorf("log lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, secretArg) || strings.Contains(out, "error of type") {
				t.Errorf("log carries an argument or only a Go type:\n%s", out)
			}

			body = post(taskCallReq("build", `{"n":-1}`, taskCaps, nil))
			if !strings.Contains(body, `"isError":true`) || !strings.Contains(body, "n must not be negative") {
				t.Errorf("tool error: %s", body)
			}
		})
	}
}
