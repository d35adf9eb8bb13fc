package durable_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/worker"
)

// TestRunTimeout: a tool's RunTimeout ends each run's context with a cause
// naming it, and the run's error fails the task by the tool's MaxAttempts.
func TestRunTimeout(t *testing.T) {
	var s durable.Set
	causes := make(chan error, 1)
	durable.Add(&s, durable.Tool[sumIn, sumOut]{
		Tool: &mcp.Tool{Name: "slow"},
		Run: func(ctx context.Context, job *worker.Job, in sumIn) (sumOut, error) {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return sumOut{}, ctx.Err()
		},
		TaskOptions: durable.TaskOptions{RunTimeout: 50 * time.Millisecond, MaxAttempts: 1},
	})
	r := newRig(t, openSQLite(t), &s, &s)
	got := r.awaitEnd(t, r.create(t, "slow", map[string]any{"a": 1, "b": 2}))
	if got.Status != mcp.TaskFailed || got.Error == nil || got.Error.Message != "The task failed after repeated attempts." {
		t.Fatalf("status %s, error %v", got.Status, got.Error)
	}
	if c := <-causes; !errors.Is(c, worker.ErrRunTimeout) || c.Error() != "worker: run timeout of 50ms passed" {
		t.Errorf("cause %v", c)
	}
}
