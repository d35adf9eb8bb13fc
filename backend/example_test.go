package backend_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// A Store is what an application holds: it enqueues tasks (from a task
// creation handler) and serves them to the server as a task.Manager, and
// its Jobs, which only the worker runtime drives, carry the optional
// extensions the runtime uses when present.
func ExampleStore() {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlite.Options{Path: sqlite.MemoryPath})
	if err != nil {
		log.Fatal(err)
	}
	var st backend.Store = s // or store.Open(ctx, spec, store.Options{})
	defer st.Close()

	// What a task creation handler does.
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "ep",
		Operation: "tools/call", Tool: "double", Arguments: json.RawMessage(`{"n":21}`)})
	if err != nil {
		log.Fatal(err)
	}
	rc := task.RequestContext{Endpoint: "ep", Tenant: "t"}
	tk, err := st.Enqueue(ctx, &task.CreationContext{Request: rc, Origin: o}, backend.EnqueueOptions{})
	if err != nil {
		log.Fatal(err)
	}

	// What the server does for tasks/get, as the task's owner.
	rc.TaskID = tk.ID()
	got, found, err := st.FindTask(ctx, rc)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(found, got.Status())

	// The worker runtime takes the job side.
	jobs := st.Jobs()
	if _, err := worker.New(worker.Options{Store: jobs, Events: st.EventPublisher()}); err != nil {
		log.Fatal(err)
	}
	_, batches := jobs.(backend.BatchCompleter)
	_, progress := jobs.(backend.ProgressReporter)
	_, prunes := jobs.(backend.Pruner)
	fmt.Println(batches, progress, prunes)
	// Output:
	// true working
	// true true true
}
