package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// The manager is a whole backend.Store: a task enqueued on it, as a task
// creation handler would, is run by the worker runtime on its Jobs, and
// read back as the server would for tasks/get.
func Example() {
	ctx := context.Background()
	mem, err := memory.New(memory.Options{}) // tests and development only: nothing survives the process
	if err != nil {
		log.Fatal(err)
	}
	var st backend.Store = mem

	rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher()})
	if err != nil {
		log.Fatal(err)
	}
	type in struct {
		N int `json:"n"`
	}
	type out struct {
		Double int `json:"double"`
	}
	err = worker.AddHandler(rt, "double", func(ctx context.Context, job *worker.Job, in in) (out, error) {
		return out{Double: 2 * in.N}, nil
	})
	if err != nil {
		log.Fatal(err)
	}

	// What a task creation handler does.
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "ep",
		Operation: "tools/call", Tool: "double", Arguments: json.RawMessage(`{"n":21}`)})
	if err != nil {
		log.Fatal(err)
	}
	rc := task.RequestContext{Endpoint: "ep", Tenant: "t", Principal: "alice"}
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

	// The runtime runs until the task is terminal, which a hint tells.
	runCtx, stop := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- rt.Run(runCtx) }()
	rc.TaskID = tk.ID()
	var done task.Task
	for done.IsZero() {
		<-hints
		got, _, err := st.FindTask(ctx, rc)
		if err != nil {
			log.Fatal(err)
		}
		if got.Status().Terminal() {
			done = got
		}
	}
	stop()
	if err := <-ran; err != nil {
		log.Fatal(err)
	}
	fmt.Println(done.Status(), string(done.Result().StructuredContent))
	// Output: completed {"double":42}
}
