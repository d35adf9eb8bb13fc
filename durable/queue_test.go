package durable_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/worker"
)

// TestQueueAndPriority: a tool's Queue and Priority go with each job it
// creates: only a claim of that queue takes it, by priority; and Work
// registers the handler on the tool's queue, so that a runtime with the
// default options serves it.
func TestQueueAndPriority(t *testing.T) {
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			st := sc.open(t)
			var s durable.Set
			for _, tool := range []struct {
				name, queue string
				priority    int
			}{{"send.later", "mail", backend.LowestPriority}, {"send.now", "mail", 0}, {"plain", "", 0}} {
				durable.Add(&s, durable.Tool[sumIn, sumOut]{Tool: &mcp.Tool{Name: tool.name}, Run: add,
					TaskOptions: durable.TaskOptions{Queue: tool.queue, Priority: tool.priority}})
			}
			r := newRig(t, st, &s, nil)
			later := r.create(t, "send.later", map[string]any{"a": 1, "b": 2})
			now := r.create(t, "send.now", map[string]any{"a": 1, "b": 2})
			plain := r.create(t, "plain", map[string]any{"a": 1, "b": 2})
			claimed := map[string][]string{}
			for _, q := range []string{"reports", "mail", "default"} {
				jobs, err := st.Jobs().Claim(context.Background(), backend.ClaimParams{Worker: "w", Queue: q, Limit: 10, Lease: time.Minute})
				if err != nil {
					t.Fatal(err)
				}
				for _, j := range jobs {
					claimed[q] = append(claimed[q], j.TaskID)
					if err := st.Jobs().Release(context.Background(), j.Lease); err != nil {
						t.Fatal(err)
					}
				}
			}
			if d := cmp.Diff(map[string][]string{"mail": {now, later}, "default": {plain}}, claimed); d != "" {
				t.Errorf("jobs claimed by queue (-want +got):\n%s", d)
			}

			rt, err := worker.New(worker.Options{Store: st.Jobs(), Events: st.EventPublisher(), ShutdownGrace: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Work(rt); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- rt.Run(ctx) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("Run: %v", err)
				}
			}()
			for _, id := range []string{later, now, plain} {
				if got := r.awaitEnd(t, id); got.Status != mcp.TaskCompleted {
					t.Errorf("task %s ended %s", id, got.Status)
				}
			}
		})
	}
}
