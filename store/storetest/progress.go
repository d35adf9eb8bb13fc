package storetest

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// progressView is what a snapshot shows of a report.
type progressView struct {
	Status   task.Status
	Message  string
	Progress *task.Progress
	Updated  time.Time
}

func viewProgress(tk task.Task) progressView {
	return progressView{tk.Status(), tk.StatusMessage(), tk.Params().Progress, tk.LastUpdatedAt()}
}

// testProgress: ReportProgress under a live lease changes the message and
// the count (not the status), stamps lastUpdatedAt and publishes a hint;
// invalid reports change nothing; terminal writes keep the count, and a
// batched completion sets the count it carries.
func testProgress(t *testing.T, open opener) {
	b, c := open(t)
	var mu sync.Mutex
	var published []string
	unsubscribe := b.EventPublisher().Subscribe(func(id string) {
		mu.Lock()
		published = append(published, id)
		mu.Unlock()
	})
	defer unsubscribe()
	// Local hints are published before the write returns.
	wasPublished := func(id string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(published, id)
	}
	tk := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 5})
	j := claimOne(t, b, c, tk.ID())

	steps := []struct {
		message string
		p       *task.Progress
	}{
		{"row 400 of 1000", &task.Progress{Current: 400, Total: 1000}},
		{"row 401", &task.Progress{Current: 401}},
		{"almost done", nil},
	}
	for _, st := range steps {
		c.Advance(time.Millisecond)
		mu.Lock()
		published = published[:0]
		mu.Unlock()
		if err := reporter(b).ReportProgress(bg, j.Lease, st.message, st.p); err != nil {
			t.Fatalf("ReportProgress(%q): %v", st.message, err)
		}
		want := progressView{task.Working, st.message, st.p, c.Now()}
		if diff := cmp.Diff(want, viewProgress(mustFind(t, b, tk.ID()))); diff != "" {
			t.Errorf("after %q (-want +got):\n%s", st.message, diff)
		}
		if !wasPublished(tk.ID()) {
			t.Errorf("ReportProgress(%q) published no hint", st.message)
		}
	}

	before := mustFind(t, b, tk.ID())
	for name, bad := range map[string]func() error{
		"NUL":   func() error { return reporter(b).ReportProgress(bg, j.Lease, "a\x00b", nil) },
		"UTF-8": func() error { return reporter(b).ReportProgress(bg, j.Lease, "\xff", nil) },
		"too long": func() error {
			return reporter(b).ReportProgress(bg, j.Lease, strings.Repeat("x", backend.MaxProgressMessage+1), nil)
		},
		"NaN": func() error { return reporter(b).ReportProgress(bg, j.Lease, "m", &task.Progress{Current: math.NaN()}) },
		"negative": func() error {
			return reporter(b).ReportProgress(bg, j.Lease, "m", &task.Progress{Current: 1, Total: -1})
		},
	} {
		err := bad()
		if !errors.Is(err, backend.ErrInvalidText) && !errors.Is(err, backend.ErrInvalidProgress) {
			t.Errorf("%s: err = %v, want ErrInvalidText or ErrInvalidProgress", name, err)
		}
	}
	sameSnapshot(t, "after invalid reports", before, mustFind(t, b, tk.ID()))

	// A retry keeps the count; so does the terminal write of the next run.
	wantErr(t, "ReportProgress with a count", reporter(b).ReportProgress(bg, j.Lease, "half", &task.Progress{Current: 5, Total: 10}), "ok")
	wantErr(t, "Retry", b.Jobs().Retry(bg, j.Lease, c.Now(), "again", ""), "ok")
	again := claimOne(t, b, c, tk.ID())
	wantErr(t, "Fail", b.Jobs().Fail(bg, again.Lease, toolError, "failed", ""), "ok")
	if got := mustFind(t, b, tk.ID()).Params().Progress; got == nil || *got != (task.Progress{Current: 5, Total: 10}) {
		t.Errorf("after Retry and Fail: progress %v, want 5 of 10", got)
	}
	wantErr(t, "ReportProgress after the terminal write", reporter(b).ReportProgress(bg, again.Lease, "late", nil), "ErrLeaseLost")

	bc, ok := b.Jobs().(backend.BatchCompleter)
	if !ok {
		return
	}
	other := enqueue(t, b, backend.EnqueueOptions{})
	oj := claimOne(t, b, c, other.ID())
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	lost, err := bc.CompleteBatch(bg, []backend.Completion{{Lease: oj.Lease, Result: res, Progress: &task.Progress{Current: 10, Total: 10}}})
	if err != nil || len(lost) != 1 || lost[0] {
		t.Fatalf("CompleteBatch = %v, %v", lost, err)
	}
	done := mustFind(t, b, other.ID())
	if p := done.Params().Progress; done.Status() != task.Completed || p == nil || *p != (task.Progress{Current: 10, Total: 10}) {
		t.Errorf("batched completion: %v progress %v, want completed with 10 of 10", done.Status(), p)
	}
}

// testCompleteBatchInvalidProgress: a batch with an item whose progress
// numbers are invalid fails as a whole before anything is written, whether
// or not that item's lease is still current, as an invalid report to
// ReportProgress does.
func testCompleteBatchInvalidProgress(t *testing.T, open opener) {
	b, c := open(t)
	bc, ok := b.Jobs().(backend.BatchCompleter)
	if !ok {
		t.Skip("backend does not implement backend.BatchCompleter")
	}
	live := enqueue(t, b, backend.EnqueueOptions{})
	gone := enqueue(t, b, backend.EnqueueOptions{})
	jobs := claim(t, b, c, 2)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(jobs))
	}
	leases := map[string]backend.Lease{}
	for _, j := range jobs {
		leases[j.TaskID] = j.Lease
	}
	stale := leases[gone.ID()]
	stale.Attempt-- // a lease of an attempt that is not the job's
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x"}}}
	for name, p := range map[string]*task.Progress{
		"NaN":      {Current: math.NaN()},
		"negative": {Current: -1},
		"infinite": {Current: 1, Total: math.Inf(1)},
	} {
		lost, err := bc.CompleteBatch(bg, []backend.Completion{
			{Lease: leases[live.ID()], Result: res},
			{Lease: stale, Result: res, Progress: p},
		})
		if !errors.Is(err, backend.ErrInvalidProgress) {
			t.Errorf("%s progress on a lost item: CompleteBatch = %v, %v; want backend.ErrInvalidProgress", name, lost, err)
		}
		if got := mustFind(t, b, live.ID()); got.Status() != task.Working {
			t.Fatalf("%s progress: the batch committed its valid item: %v", name, got.Status())
		}
	}
}
