package storetest

import (
	"slices"
	"testing"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// testCompleteBatch: a backend that batches completions applies each item's
// fence on its own, commits the valid ones, reports the lost ones, and
// publishes only what changed.
func testCompleteBatch(t *testing.T, open opener) {
	b, c := open(t)
	bc, ok := b.Jobs().(backend.BatchCompleter)
	if !ok {
		t.Skip("backend does not implement backend.BatchCompleter")
	}
	var ids []string
	for range 3 {
		ids = append(ids, enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 5}).ID())
	}
	jobs := map[string]backend.JobRow{}
	claimAll := func() {
		for _, j := range claim(t, b, c, 3) {
			jobs[j.TaskID] = j
		}
	}
	claimAll()
	if len(jobs) != 3 {
		t.Fatalf("claimed %d jobs, want 3", len(jobs))
	}
	// The third lease goes stale: it expires and the job is reclaimed.
	stale := jobs[ids[2]].Lease
	c.Advance(lease)
	if n, err := b.Jobs().RescueExpired(bg, rescueParams(c, 10)); err != nil || n != 3 {
		t.Fatalf("RescueExpired = %d, %v; want 3", n, err)
	}
	claimAll() // reclaims all three; the third is then completed through its old lease
	var published []string
	unsubscribe := b.EventPublisher().Subscribe(func(id string) { published = append(published, id) })
	defer unsubscribe()

	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "batched"}}}
	lost, err := bc.CompleteBatch(bg, []backend.Completion{
		{Lease: jobs[ids[0]].Lease, Result: res, Message: "one"},
		{Lease: jobs[ids[1]].Lease, Result: res, Message: "two"},
		{Lease: stale, Result: res, Message: "stale"},
	})
	if err != nil {
		t.Fatalf("CompleteBatch: %v", err)
	}
	if len(lost) != 3 || lost[0] || lost[1] || !lost[2] {
		t.Fatalf("lost = %v, want [false false true]", lost)
	}
	for i, id := range ids[:2] {
		got := mustFind(t, b, id)
		if got.Status() != task.Completed || got.Result() == nil || got.StatusMessage() != []string{"one", "two"}[i] {
			t.Fatalf("task %d after CompleteBatch: %v message %q", i, got, got.StatusMessage())
		}
	}
	if got := mustFind(t, b, ids[2]); got.Status() != task.Working {
		t.Fatalf("the stale item changed its task: %v", got)
	}
	for _, id := range published {
		if id == ids[2] {
			t.Fatalf("a hint was published for the stale item")
		}
	}
	if len(published) < 2 {
		t.Fatalf("published %d hints, want one per completed task", len(published))
	}
	// Completed items are terminal: a second batch loses them all.
	lost, err = bc.CompleteBatch(bg, []backend.Completion{{Lease: jobs[ids[0]].Lease, Result: res}})
	if err != nil || !lost[0] {
		t.Fatalf("second CompleteBatch = %v, %v; want lost", lost, err)
	}
}

// testCompleteBatchOneJobTwice: a batch that holds a job's old lease and its
// current lease, the current one twice, completes the job once, through the
// first item that names its current lease, and reports every other item
// lost, as the same completions made one by one would.
func testCompleteBatchOneJobTwice(t *testing.T, open opener) {
	b, c := open(t)
	bc, ok := b.Jobs().(backend.BatchCompleter)
	if !ok {
		t.Skip("backend does not implement backend.BatchCompleter")
	}
	tk := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 5})
	stale := claimOne(t, b, c, tk.ID()).Lease
	c.Advance(lease)
	if n, err := b.Jobs().RescueExpired(bg, rescueParams(c, 10)); err != nil || n != 1 {
		t.Fatalf("RescueExpired = %d, %v; want 1", n, err)
	}
	current := claimOne(t, b, c, tk.ID()).Lease
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "batched"}}}
	lost, err := bc.CompleteBatch(bg, []backend.Completion{
		{Lease: stale, Result: res, Message: "stale"},
		{Lease: current, Result: res, Message: "current"},
		{Lease: current, Result: res, Message: "again"},
	})
	if err != nil {
		t.Fatalf("CompleteBatch: %v", err)
	}
	if want := []bool{true, false, true}; !slices.Equal(lost, want) {
		t.Errorf("lost = %v, want %v", lost, want)
	}
	if got := mustFind(t, b, tk.ID()); got.Status() != task.Completed || got.StatusMessage() != "current" {
		t.Errorf("after CompleteBatch: %v message %q, want completed through the first current item", got.Status(),
			got.StatusMessage())
	}
}
