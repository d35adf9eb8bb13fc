package worker_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// TestSQLiteEndToEnd drives the runtime against the real SQLite store on the
// real clock: a typed success, an input round trip answered through
// tasks/update, and a cancellation of a running handler.
func TestSQLiteEndToEnd(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	rt, err := worker.New(worker.Options{
		Store: st.Jobs(), Events: st.EventPublisher(), Concurrency: 4,
		Lease: 3 * time.Second, PollInterval: 50 * time.Millisecond, ShutdownGrace: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	type in struct {
		A int `json:"a"`
	}
	type out struct {
		Sum int `json:"sum"`
	}
	must(t, worker.AddHandler(rt, "double", func(ctx context.Context, job *worker.Job, in in) (out, error) {
		return out{Sum: 2 * in.A}, nil
	}))
	must(t, worker.AddHandler(rt, "greet", func(ctx context.Context, job *worker.Job, _ struct{}) (map[string]string, error) {
		raw, err := job.Ask(ctx, "name", mcp.NewElicitFormRequest("Name?", json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}}}`)))
		if err != nil {
			return nil, err
		}
		var r mcp.ElicitResult
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, worker.Permanent(err)
		}
		name, _ := r.Content["name"].(string)
		return map[string]string{"greeting": "Hello, " + name}, nil
	}))
	must(t, worker.AddHandler(rt, "wait", func(ctx context.Context, job *worker.Job, _ struct{}) (out, error) {
		<-ctx.Done()
		return out{}, context.Cause(ctx)
	}))

	rc := task.RequestContext{Endpoint: "main", Tenant: "t1", Principal: "p1", ProtocolVersion: "2026-07-28"}
	enqueue := func(tool, args, schema string, kinds ...string) string {
		t.Helper()
		p := task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "main", Operation: "tools/call",
			Tool: tool, Arguments: json.RawMessage(args), InputKinds: kinds}
		if schema != "" {
			p.OutputSchema = json.RawMessage(schema)
		}
		o, err := task.NewOrigin(p)
		must(t, err)
		tk, err := st.Enqueue(ctx, &task.CreationContext{Request: rc, Origin: o}, backend.EnqueueOptions{})
		must(t, err)
		return tk.ID()
	}
	find := func(id string) task.Task {
		t.Helper()
		r := rc
		r.TaskID = id
		tk, ok, err := st.FindTask(ctx, r)
		if err != nil || !ok {
			t.Fatalf("FindTask: %v %t", err, ok)
		}
		return tk
	}
	waitStatus := func(id string, s task.Status) task.Task {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
			if tk := find(id); tk.Status() == s {
				return tk
			} else if time.Now().After(deadline) {
				t.Fatalf("status %s, want %s", tk.Status(), s)
			}
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rt.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	sum := enqueue("double", `{"a":21}`, `{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`)
	greet := enqueue("greet", `{}`, "", task.InputElicitationForm)
	wait := enqueue("wait", `{}`, "")

	if got := string(waitStatus(sum, task.Completed).Result().StructuredContent); got != `{"sum":42}` {
		t.Errorf("double: %s", got)
	}

	tk := waitStatus(greet, task.InputRequired)
	if _, ok := tk.InputRequests()["name"]; !ok {
		t.Fatalf("input requests = %v", tk.InputRequests())
	}
	r := rc
	r.TaskID = greet
	must(t, st.UpdateTask(ctx, task.UpdateContext{RequestContext: r,
		Responses: mcp.InputResponses{"name": json.RawMessage(`{"action":"accept","content":{"name":"Ada"}}`)}}))
	if got := string(waitStatus(greet, task.Completed).Result().StructuredContent); got != `{"greeting":"Hello, Ada"}` {
		t.Errorf("greet: %s", got)
	}

	r.TaskID = wait
	time.Sleep(100 * time.Millisecond) // let the handler start, most likely
	must(t, st.RequestCancel(ctx, r))
	waitStatus(wait, task.Cancelled)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
