package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// testOperatorHistoryPruned: for a backend.Pruner, a task's history reads
// the same, times included, once PruneJobs has deleted its job row: a
// completed task with a retried run, and a failed one.
func testOperatorHistoryPruned(t *testing.T, b OperatorBackend, c *Clock) {
	p, ok := b.Jobs().(backend.Pruner)
	if !ok {
		t.Skip("the backend is not a backend.Pruner")
	}
	bg := context.Background()
	jobs := b.Jobs()
	ids := opFixture(t, b, c, 1)
	j := claimOne(t, b, c, ids[0])
	if err := jobs.Retry(bg, j.Lease, c.Now(), "", ""); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second)
	finishOne(t, b, c, ids[0], func(l backend.Lease) error { return jobs.Complete(bg, l, textResult, "all done") })
	ids = append(ids, opFixture(t, b, c, 1)...)
	c.Advance(time.Second)
	finishOne(t, b, c, ids[1], func(l backend.Lease) error { return jobs.Fail(bg, l, toolError, "no", "") })
	before := map[string][]backend.TaskEvent{}
	for _, id := range ids {
		before[id] = operatorTask(t, b, id).Events
	}
	c.Advance(time.Second)
	if n, err := p.PruneJobs(bg, c.Now(), 10); err != nil || n != 2 {
		t.Fatalf("PruneJobs = %d, %v; want 2", n, err)
	}
	want := []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "w"},
		{Kind: backend.EventRetry, Attempt: 1, Worker: "w", Message: "failure 1 of 10"},
		{Kind: backend.EventClaimed, Attempt: 2, Worker: "w"},
		{Kind: backend.EventCompleted, Attempt: 2, Message: "all done"},
	}
	for _, id := range ids {
		ot := operatorTask(t, b, id)
		if ot.Job != nil {
			t.Errorf("job of %s after PruneJobs: %+v", id, ot.Job)
		}
		if d := cmp.Diff(before[id], ot.Events); d != "" {
			t.Errorf("history after PruneJobs (-before +after):\n%s", d)
		}
		if id == ids[0] {
			if d := cmp.Diff(want, shapes(ot.Events)); d != "" {
				t.Errorf("history of the completed task (-want +got):\n%s", d)
			}
		}
	}
}

// testOperatorActivityBatch: a CompleteBatch counts, in the activity
// chart, the tasks it completed and not the items whose lease was lost.
func testOperatorActivityBatch(t *testing.T, b OperatorBackend, c *Clock) {
	bc, ok := b.Jobs().(backend.BatchCompleter)
	if !ok {
		t.Skip("the backend is not a backend.BatchCompleter")
	}
	bg := context.Background()
	c.Advance(2 * time.Hour) // start on a whole minute
	start := c.Now()
	opFixture(t, b, c, 3)
	claimed := claim(t, b, c, 3)
	if len(claimed) != 3 {
		t.Fatalf("claimed %d jobs, want 3", len(claimed))
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "batched"}}}
	stale := claimed[2].Lease
	stale.Attempt++ // a claim that is not the job's
	lost, err := bc.CompleteBatch(bg, []backend.Completion{
		{Lease: claimed[0].Lease, Result: res}, {Lease: claimed[1].Lease, Result: res, Progress: &task.Progress{Current: 1}},
		{Lease: stale, Result: res},
	})
	if err != nil || !cmp.Equal(lost, []bool{false, false, true}) {
		t.Fatalf("CompleteBatch = %v, %v", lost, err)
	}
	got, err := b.Operator().Activity(bg, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]backend.ActivityBucket{{Start: start, Completed: 2}}, got); d != "" {
		t.Errorf("activity (-want +got):\n%s", d)
	}
	counts, err := b.Operator().Counts(bg)
	if err != nil {
		t.Fatal(err)
	}
	want := []backend.TaskCount{
		{Tool: toolA, Status: task.Completed, N: 1},
		{Tool: toolA, Status: task.Working, N: 1},
		{Tool: toolB, Status: task.Completed, N: 1},
	}
	if d := cmp.Diff(want, counts); d != "" {
		t.Errorf("counts (-want +got):\n%s", d)
	}
}
