package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// DoubleIn and DoubleOut are the "double" tool's arguments and result.
type DoubleIn struct {
	N int `json:"n"`
}

type DoubleOut struct {
	Double int `json:"double"`
}

// AddHandler registers a typed handler: the runtime decodes the task's
// arguments into DoubleIn and completes the task with DoubleOut as its
// structured content.
func ExampleAddHandler() {
	ctx := context.Background()
	st, rt := openRuntime(ctx) // worker.New(worker.Options{Store: st.Jobs(), ...})
	defer st.Close()
	err := worker.AddHandler(rt, "double", func(ctx context.Context, job *worker.Job, in DoubleIn) (DoubleOut, error) {
		return DoubleOut{Double: 2 * in.N}, nil
	})
	if err != nil {
		log.Fatal(err)
	}

	done := runOne(ctx, st, rt, "double", `{"n":21}`)
	fmt.Println(done.Status(), string(done.Result().StructuredContent))
	// Output: completed {"double":42}
}

// AddRawHandler registers a handler that reads the raw arguments and
// returns the whole tool result.
func ExampleRuntime_AddRawHandler() {
	ctx := context.Background()
	st, rt := openRuntime(ctx) // worker.New(worker.Options{Store: st.Jobs(), ...})
	defer st.Close()
	err := rt.AddRawHandler("echo", func(ctx context.Context, job *worker.Job) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(job.Arguments())}}}, nil
	})
	if err != nil {
		log.Fatal(err)
	}

	done := runOne(ctx, st, rt, "echo", `{"say":"hi"}`)
	fmt.Println(done.Status(), done.Result().Content[0].(*mcp.TextContent).Text)
	// Output: completed {"say":"hi"}
}

// openRuntime opens an in-memory SQLite store and a runtime on its jobs.
func openRuntime(ctx context.Context) (backend.Store, *worker.Runtime) {
	st, err := sqlite.Open(ctx, sqlite.Options{Path: sqlite.MemoryPath})
	if err != nil {
		log.Fatal(err)
	}
	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher()})
	if err != nil {
		log.Fatal(err)
	}
	return st, rt
}

// runOne enqueues one task of tool with args, as a server's task creation
// handler would, runs rt until the task is terminal, and returns it.
func runOne(ctx context.Context, st backend.Store, rt *worker.Runtime, tool, args string) task.Task {
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "ep",
		Operation: "tools/call", Tool: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		log.Fatal(err)
	}
	rc := task.RequestContext{Endpoint: "ep", Tenant: "t"}
	hints := make(chan struct{}, 1)
	defer st.EventPublisher().Subscribe(func(string) {
		select {
		case hints <- struct{}{}:
		default:
		}
	})()
	tk, err := st.Enqueue(ctx, &task.CreationContext{Request: rc, Origin: o}, backend.EnqueueOptions{})
	if err != nil {
		log.Fatal(err)
	}

	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- rt.Run(runCtx) }()
	defer func() { stop(); <-ran }()
	rc.TaskID = tk.ID()
	for {
		got, _, err := st.FindTask(ctx, rc)
		if err != nil {
			log.Fatal(err)
		}
		if got.Status().Terminal() {
			return got
		}
		<-hints
	}
}
