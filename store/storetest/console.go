package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// OperatorBackend is a backend.Store with the operator extension.
type OperatorBackend interface {
	backend.Store
	backend.OperatorSource
}

// RunOperator checks a backend's backend.Operator: listing across tenants
// with filters and keyset paging, counts, a task's job and history (every
// kind of step, bounded to backend.MaxTaskEvents, with the failure
// categories and next run times of retries and failures), throughput
// buckets, and the cancel, retry and delete actions.
func RunOperator(t *testing.T, open func(t *testing.T, now func() time.Time) OperatorBackend) {
	tests := []struct {
		name string
		fn   func(t *testing.T, b OperatorBackend, c *Clock)
	}{
		{"List", testOperatorList},
		{"BadQueries", testOperatorBadQueries},
		{"Counts", testOperatorCounts},
		{"History", testOperatorHistory},
		{"HistoryOfLostLeases", testOperatorLostLeases},
		{"HistoryOfFailures", testOperatorFailures},
		{"HistoryBound", testOperatorHistoryBound},
		{"HistoryAfterPrune", testOperatorHistoryPruned},
		{"HistoryOfCheckpoints", testOperatorCheckpoints},
		{"HistoryOfACompletedCheckpoint", testOperatorCompletedCheckpoint},
		{"Activity", testOperatorActivity},
		{"ActivityOfABatch", testOperatorActivityBatch},
		{"Cancel", testOperatorCancel},
		{"Retry", testOperatorRetry},
		{"RetryKeepsQueue", testOperatorRetryQueue},
		{"Delete", testOperatorDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClock(Epoch)
			tc.fn(t, open(t, c.Now), c)
		})
	}
}

// opFixture enqueues n tasks alternating between (tenantA, toolA) and
// (tenantB, toolB), one millisecond apart, and returns their IDs in
// creation order.
func opFixture(t *testing.T, b OperatorBackend, c *Clock, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		ep, tenant, tool := endpointA, tenantA, toolA
		if i%2 == 1 {
			ep, tenant, tool = endpointB, tenantB, toolB
		}
		tk, err := b.Enqueue(context.Background(), creation(t, ep, tenant, tool, fmt.Sprintf(`{"i":%d}`, i)),
			backend.EnqueueOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID())
		c.Advance(time.Millisecond)
	}
	return ids
}

// opListAll walks every page of q and returns the IDs in listing order.
func opListAll(t *testing.T, b OperatorBackend, q backend.OperatorQuery) []string {
	t.Helper()
	var ids []string
	for range 1000 {
		page, err := b.Operator().Tasks(context.Background(), q)
		if err != nil {
			t.Fatalf("OperatorTasks(%+v): %v", q, err)
		}
		if len(page.Tasks) > max(q.Limit, 1) || len(page.Tasks) > backend.MaxOperatorPage {
			t.Fatalf("page of %d tasks for limit %d", len(page.Tasks), q.Limit)
		}
		for _, s := range page.Tasks {
			ids = append(ids, s.ID)
		}
		if page.NextCursor == "" {
			return ids
		}
		q.Cursor = page.NextCursor
	}
	t.Fatal("listing never ended")
	return nil
}

func reversed(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[len(ids)-1-i] = id
	}
	return out
}

// finishOne claims the job of id and ends it with end.
func finishOne(t *testing.T, b backend.Store, c *Clock, id string, end func(l backend.Lease) error) {
	t.Helper()
	j := claimOne(t, b, c, id)
	if err := end(j.Lease); err != nil {
		t.Fatal(err)
	}
}

func testOperatorList(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	ids := opFixture(t, b, c, 7)
	finishOne(t, b, c, ids[0], func(l backend.Lease) error { return b.Jobs().Complete(bg, l, textResult, "") })
	finishOne(t, b, c, ids[1], func(l backend.Lease) error { return b.Jobs().Fail(bg, l, toolError, "", "") })
	from := Epoch.Add(2 * time.Millisecond)
	everyOther := func(start int) []string {
		var out []string
		for i := start; i < len(ids); i += 2 {
			out = append(out, ids[i])
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    backend.OperatorQuery
		want []string
	}{
		{"all", backend.OperatorQuery{Limit: 100}, reversed(ids)},
		{"pages of 2", backend.OperatorQuery{Limit: 2}, reversed(ids)},
		{"pages of 1", backend.OperatorQuery{Limit: 0}, reversed(ids)},
		{"tenant", backend.OperatorQuery{Tenant: tenantB, Limit: 2}, reversed(everyOther(1))},
		{"tool", backend.OperatorQuery{Tool: toolA, Limit: 3}, reversed(everyOther(0))},
		{"status", backend.OperatorQuery{Status: task.Failed}, []string{ids[1]}},
		{"working", backend.OperatorQuery{Status: task.Working, Limit: 2}, reversed(ids[2:])},
		{"created from", backend.OperatorQuery{CreatedFrom: from, Limit: 2}, reversed(ids[2:])},
		{"created before", backend.OperatorQuery{CreatedBefore: from, Limit: 2}, reversed(ids[:2])},
		{"created between", backend.OperatorQuery{CreatedFrom: from, CreatedBefore: from.Add(2 * time.Millisecond)},
			[]string{ids[3], ids[2]}},
		{"no match", backend.OperatorQuery{Tool: "none"}, nil},
	} {
		if d := cmp.Diff(tc.want, opListAll(t, b, tc.q)); d != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, d)
		}
	}

	page, err := b.Operator().Tasks(bg, backend.OperatorQuery{Status: task.Failed})
	if err != nil || len(page.Tasks) != 1 {
		t.Fatalf("failed tasks: %+v, %v", page, err)
	}
	s := page.Tasks[0]
	if !s.ExpiresAt.After(s.CreatedAt) {
		t.Errorf("expires at %v, created at %v", s.ExpiresAt, s.CreatedAt)
	}
	want := backend.TaskSummary{ID: ids[1], Tool: toolB, Endpoint: endpointB, Tenant: tenantB, Status: task.Failed,
		CreatedAt: Epoch.Add(time.Millisecond), UpdatedAt: c.Now(), ExpiresAt: s.ExpiresAt}
	if d := cmp.Diff(want, s); d != "" {
		t.Errorf("summary (-want +got):\n%s", d)
	}

	// A cursor continues only the query it was issued for.
	page, err = b.Operator().Tasks(bg, backend.OperatorQuery{Limit: 2})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("first page: %+v, %v", page, err)
	}
	_, err = b.Operator().Tasks(bg, backend.OperatorQuery{Limit: 2, Tool: toolA, Cursor: page.NextCursor})
	if !errors.Is(err, task.ErrBadCursor) {
		t.Errorf("cursor of another query: %v, want task.ErrBadCursor", err)
	}
	// A client's tasks/list cursor is not an operator cursor.
	lp, err := b.ListTasks(bg, task.ListQuery{Request: rc("", endpointA, tenantA), Limit: 1})
	if err != nil || lp.NextCursor == "" {
		t.Fatalf("ListTasks: %+v, %v", lp, err)
	}
	if _, err := b.Operator().Tasks(bg, backend.OperatorQuery{Cursor: lp.NextCursor}); !errors.Is(err, task.ErrBadCursor) {
		t.Errorf("a tasks/list cursor: %v, want task.ErrBadCursor", err)
	}

	// Expired tasks are not listed.
	c.Advance(s.ExpiresAt.Sub(c.Now()) + time.Hour)
	if got := opListAll(t, b, backend.OperatorQuery{Limit: 100}); len(got) != 0 {
		t.Errorf("after expiry: listed %d tasks", len(got))
	}
}

func testOperatorBadQueries(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	opFixture(t, b, c, 1)
	long := string(make([]byte, backend.MaxFilterText+1))
	for _, tc := range []struct {
		name string
		q    backend.OperatorQuery
		want error
	}{
		{"unknown status", backend.OperatorQuery{Status: "stuck"}, backend.ErrBadOperatorQuery},
		{"long tool", backend.OperatorQuery{Tool: long}, backend.ErrBadOperatorQuery},
		{"NUL in tenant", backend.OperatorQuery{Tenant: "a\x00b"}, backend.ErrBadOperatorQuery},
		{"bad UTF-8 tool", backend.OperatorQuery{Tool: "\xff"}, backend.ErrBadOperatorQuery},
		{"range ends before it starts", backend.OperatorQuery{CreatedFrom: Epoch, CreatedBefore: Epoch.Add(-time.Second)},
			backend.ErrBadOperatorQuery},
		{"made-up cursor", backend.OperatorQuery{Cursor: "c1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"}, task.ErrBadCursor},
		{"garbage cursor", backend.OperatorQuery{Cursor: "'; DROP TABLE tasks; --"}, task.ErrBadCursor},
		{"long cursor", backend.OperatorQuery{Cursor: "c1." + string(make([]byte, 1000))}, task.ErrBadCursor},
	} {
		if _, err := b.Operator().Tasks(bg, tc.q); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, id := range []string{"", "no-such-task", "bad id", string(make([]byte, 200))} {
		if _, err := b.Operator().Task(bg, id); !errors.Is(err, task.ErrNotFound) {
			t.Errorf("OperatorTask(%q): %v, want task.ErrNotFound", id, err)
		}
		if err := b.Operator().Cancel(bg, id); !errors.Is(err, task.ErrNotFound) {
			t.Errorf("OperatorCancel(%q): %v, want task.ErrNotFound", id, err)
		}
		if _, err := b.Operator().Retry(bg, id); !errors.Is(err, task.ErrNotFound) {
			t.Errorf("OperatorRetry(%q): %v, want task.ErrNotFound", id, err)
		}
		if err := b.Operator().Delete(bg, id); !errors.Is(err, task.ErrNotFound) {
			t.Errorf("OperatorDelete(%q): %v, want task.ErrNotFound", id, err)
		}
	}
}

func testOperatorCounts(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	counts, err := b.Operator().Counts(bg)
	if err != nil || len(counts) != 0 {
		t.Fatalf("counts of an empty store: %v, %v", counts, err)
	}
	ids := opFixture(t, b, c, 5)
	finishOne(t, b, c, ids[0], func(l backend.Lease) error { return b.Jobs().Complete(bg, l, textResult, "") })
	finishOne(t, b, c, ids[1], func(l backend.Lease) error { return b.Jobs().Fail(bg, l, toolError, "", "") })
	if _, err := b.Enqueue(bg, creation(t, endpointA, tenantA, toolA, `{}`), backend.EnqueueOptions{TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Second) // the last task expired: counted until deleted
	want := []backend.TaskCount{
		{Tool: toolA, Status: task.Completed, N: 1},
		{Tool: toolA, Status: task.Working, N: 3},
		{Tool: toolB, Status: task.Failed, N: 1},
		{Tool: toolB, Status: task.Working, N: 1},
	}
	check := func(when string) {
		t.Helper()
		counts, err := b.Operator().Counts(bg)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, counts); d != "" {
			t.Errorf("counts %s (-want +got):\n%s", when, d)
		}
	}
	check("with an expired task")
	if n, err := b.Jobs().DeleteExpired(bg, c.Now(), 10); err != nil || n != 1 {
		t.Fatalf("DeleteExpired: %d, %v", n, err)
	}
	want[1].N = 2
	check("after the expired task was deleted")
	if err := b.Operator().Delete(bg, ids[0]); err != nil {
		t.Fatal(err)
	}
	want = want[1:] // no completed task of toolA is left: the row goes
	check("after a deletion")
}

// eventShape is what the suite compares of an event: the times of job
// steps come from the database's clock on the durable stores.
type eventShape struct {
	Kind     backend.TaskEventKind
	Attempt  int64
	Worker   string
	Message  string
	Category backend.FailureCategory
}

func shapes(evs []backend.TaskEvent) []eventShape {
	out := make([]eventShape, len(evs))
	for i, e := range evs {
		out[i] = eventShape{e.Kind, e.Attempt, e.Worker, e.Message, e.Category}
	}
	return out
}

func operatorTask(t *testing.T, b OperatorBackend, id string) backend.OperatorTask {
	t.Helper()
	ot, err := b.Operator().Task(context.Background(), id)
	if err != nil {
		t.Fatalf("OperatorTask: %v", err)
	}
	return ot
}

func testOperatorHistory(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	jobs := b.Jobs()
	id := opFixture(t, b, c, 1)[0]
	j := claimOne(t, b, c, id)
	if err := jobs.Retry(bg, j.Lease, c.Now(), "", ""); err != nil {
		t.Fatal(err)
	}
	j = claimOne(t, b, c, id)
	if err := reporter(b).ReportProgress(bg, j.Lease, "half way", &task.Progress{Current: 1, Total: 2}); err != nil {
		t.Fatal(err)
	}
	if err := jobs.RequestInput(bg, j.Lease, mcp.InputRequests{"colour": reqElicit}, "need a colour"); err != nil {
		t.Fatal(err)
	}
	if err := b.UpdateTask(bg, task.UpdateContext{RequestContext: rc(id, endpointA, tenantA),
		Responses: mcp.InputResponses{"colour": respElicit}}); err != nil {
		t.Fatal(err)
	}
	j = claimOne(t, b, c, id)
	if err := jobs.Release(bg, j.Lease); err != nil {
		t.Fatal(err)
	}
	j = claimOne(t, b, c, id)
	c.Advance(time.Second)
	if err := jobs.Complete(bg, j.Lease, textResult, "all done"); err != nil {
		t.Fatal(err)
	}
	ot := operatorTask(t, b, id)
	want := []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "w"},
		{Kind: backend.EventRetry, Attempt: 1, Worker: "w", Message: "failure 1 of 10"},
		{Kind: backend.EventClaimed, Attempt: 2, Worker: "w"},
		{Kind: backend.EventProgress, Attempt: 2, Message: "half way"},
		{Kind: backend.EventInputRequired, Attempt: 2, Message: "need a colour"},
		{Kind: backend.EventInputAnswered, Attempt: 2},
		{Kind: backend.EventClaimed, Attempt: 3, Worker: "w"},
		{Kind: backend.EventReleased, Attempt: 3, Worker: "w"},
		{Kind: backend.EventClaimed, Attempt: 4, Worker: "w"},
		{Kind: backend.EventCompleted, Attempt: 4, Message: "all done"},
	}
	if d := cmp.Diff(want, shapes(ot.Events)); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if first, last := ot.Events[0], ot.Events[len(ot.Events)-1]; !first.At.Equal(Epoch) || !last.At.Equal(c.Now()) {
		t.Errorf("created at %v, completed at %v; want %v and %v", first.At, last.At, Epoch, c.Now())
	}
	if ot.Job == nil {
		t.Fatal("no job")
	}
	wantJob := backend.JobInfo{State: "done", Attempt: 4, Failures: 1, MaxAttempts: backend.DefaultMaxAttempts,
		InputRounds: 1, RunAt: ot.Job.RunAt}
	if d := cmp.Diff(wantJob, *ot.Job); d != "" {
		t.Errorf("job (-want +got):\n%s", d)
	}
	// Four claims: a failure, a run that asked for input, its resumption
	// (the same attempt), a release; the completing run is attempt 3.
	if n := ot.Job.AttemptNumber(); n != 3 {
		t.Errorf("AttemptNumber = %d, want 3", n)
	}
	if ot.Status != task.Completed || ot.Result == nil || ot.Error != nil || compactJSON(ot.Arguments) != `{"i":0}` ||
		ot.Progress == nil || *ot.Progress != (task.Progress{Current: 1, Total: 2}) {
		t.Errorf("task: status %s, result %v, error %v, arguments %s, progress %v", ot.Status, ot.Result, ot.Error,
			ot.Arguments, ot.Progress)
	}
}

func testOperatorLostLeases(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	id := opFixture(t, b, c, 1)[0]
	for range 2 {
		claimOne(t, b, c, id)
		c.Advance(lease)
		if n, err := b.Jobs().RescueExpired(bg, backend.RescueParams{Now: c.Now(), Limit: 10, MaxInterruptedRuns: 2}); err != nil || n != 1 {
			t.Fatalf("RescueExpired: %d, %v", n, err)
		}
	}
	want := []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "w"},
		{Kind: backend.EventLeaseLost, Attempt: 1, Worker: "w", Message: "interrupted run 1"},
		{Kind: backend.EventProgress, Attempt: 1, Message: backend.InterruptedMessage},
		{Kind: backend.EventClaimed, Attempt: 2, Worker: "w"},
		{Kind: backend.EventLeaseLost, Attempt: 2, Worker: "w", Message: "interrupted run 2"},
		{Kind: backend.EventFailed, Attempt: 2},
	}
	ot := operatorTask(t, b, id)
	if d := cmp.Diff(want, shapes(ot.Events)); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if ot.Error == nil || ot.Error.Message != exhausted.Message {
		t.Errorf("error %v, want %v", ot.Error, exhausted)
	}
}

func testOperatorHistoryBound(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	id := opFixture(t, b, c, 1)[0]
	j := claimOne(t, b, c, id)
	const reports = backend.MaxTaskEvents + 5
	for i := range reports {
		if err := reporter(b).ReportProgress(bg, j.Lease, fmt.Sprintf("step %d", i), nil); err != nil {
			t.Fatal(err)
		}
	}
	evs := operatorTask(t, b, id).Events
	if len(evs) != backend.MaxTaskEvents {
		t.Fatalf("%d events kept, want %d", len(evs), backend.MaxTaskEvents)
	}
	if first, last := evs[0].Message, evs[len(evs)-1].Message; first != fmt.Sprintf("step %d", reports-backend.MaxTaskEvents) ||
		last != fmt.Sprintf("step %d", reports-1) {
		t.Errorf("kept %q .. %q, want the newest", first, last)
	}
}

func testOperatorActivity(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	c.Advance(2 * time.Hour) // the window reaches back an hour: start on a whole minute
	start := c.Now()
	ids := opFixture(t, b, c, 4)
	finishOne(t, b, c, ids[0], func(l backend.Lease) error { return b.Jobs().Complete(bg, l, textResult, "") })
	finishOne(t, b, c, ids[1], func(l backend.Lease) error { return b.Jobs().Fail(bg, l, toolError, "", "") })
	c.Advance(time.Minute)
	finishOne(t, b, c, ids[2], func(l backend.Lease) error { return b.Jobs().Complete(bg, l, textResult, "") })
	finishOne(t, b, c, ids[3], func(l backend.Lease) error { return b.Jobs().Cancel(bg, l, "") })
	got, err := b.Operator().Activity(bg, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	want := []backend.ActivityBucket{
		{Start: start, Completed: 1, Failed: 1},
		{Start: start.Add(time.Minute), Completed: 1, Cancelled: 1},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("activity (-want +got):\n%s", d)
	}
	c.Advance(time.Hour)
	if got, err := b.Operator().Activity(bg, start); err != nil || len(got) != 1 {
		t.Errorf("an hour later: %v, %v; want only the last minute's bucket", got, err)
	}
}

func testOperatorCancel(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	ids := opFixture(t, b, c, 2) // ids[1] is another endpoint's and tenant's
	for _, id := range ids {
		if err := b.Operator().Cancel(bg, id); err != nil {
			t.Fatalf("OperatorCancel: %v", err)
		}
	}
	jobs := claim(t, b, c, 2)
	if len(jobs) != 2 || !jobs[0].CancelRequested || !jobs[1].CancelRequested {
		t.Fatalf("claimed %+v, want both jobs with their cancel intent", jobs)
	}
	for _, j := range jobs {
		if err := b.Jobs().Cancel(bg, j.Lease, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Operator().Cancel(bg, ids[0]); err != nil {
		t.Errorf("OperatorCancel of a cancelled task: %v", err)
	}
	want := []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventCancelRequested},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "w"},
		{Kind: backend.EventCancelled, Attempt: 1},
	}
	if d := cmp.Diff(want, shapes(operatorTask(t, b, ids[1]).Events)); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
}

func testOperatorRetry(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	ids := opFixture(t, b, c, 2)
	finishOne(t, b, c, ids[0], func(l backend.Lease) error { return b.Jobs().Fail(bg, l, toolError, "", "") })
	if _, err := b.Operator().Retry(bg, ids[1]); !errors.Is(err, backend.ErrNotFailed) {
		t.Errorf("OperatorRetry of a working task: %v, want backend.ErrNotFailed", err)
	}
	c.Advance(time.Second)
	tk, err := b.Operator().Retry(bg, ids[0])
	if err != nil {
		t.Fatalf("OperatorRetry: %v", err)
	}
	if tk.ID() == ids[0] || tk.Status() != task.Working || !tk.Origin().Equal(mustFindAs(t, b, ids[0], endpointA, tenantA).Origin()) {
		t.Errorf("retry: %s %s, want a new working task with the same origin", tk.ID(), tk.Status())
	}
	// The new task belongs to the failed task's caller, and the failed
	// task stays failed.
	if got := mustFindAs(t, b, tk.ID(), endpointA, tenantA); got.Status() != task.Working || !got.CreatedAt().Equal(c.Now()) {
		t.Errorf("new task as its caller sees it: %s at %v", got.Status(), got.CreatedAt())
	}
	old := operatorTask(t, b, ids[0])
	if old.Status != task.Failed {
		t.Errorf("failed task is %s after the retry", old.Status)
	}
	if last := old.Events[len(old.Events)-1]; last.Kind != backend.EventRetried || last.Message != tk.ID() {
		t.Errorf("last event of the failed task: %+v, want retried naming %s", last, tk.ID())
	}
	ot := operatorTask(t, b, tk.ID())
	if ot.Job == nil || ot.Job.Failures != 0 || ot.Job.MaxAttempts != backend.DefaultMaxAttempts || ot.Job.State != "available" {
		t.Errorf("new job: %+v, want a fresh attempt budget", ot.Job)
	}
	claimed, err := b.Jobs().Claim(bg, backend.ClaimParams{Worker: "w", Kinds: []string{toolA}, Limit: 2, Lease: lease, Now: c.Now()})
	if err != nil || len(claimed) != 1 || claimed[0].TaskID != tk.ID() {
		t.Fatalf("Claim: %v, %v; want the new task's job", claimed, err)
	}
	j := claimed[0]
	if j.Kind != toolA || compactJSON(j.Origin.Params().Arguments) != `{"i":0}` {
		t.Errorf("claimed %s %s", j.Kind, j.Origin.Params().Arguments)
	}
}

// mustFindAs is mustFind for the caller (endpoint, tenant).
func mustFindAs(t *testing.T, b backend.Store, id, endpoint, tenant string) task.Task {
	t.Helper()
	tk, ok, err := b.FindTask(context.Background(), rc(id, endpoint, tenant))
	if err != nil || !ok {
		t.Fatalf("FindTask(%s) as %s/%s: %v, %v", id, endpoint, tenant, ok, err)
	}
	return tk
}

func testOperatorDelete(t *testing.T, b OperatorBackend, c *Clock) {
	bg := context.Background()
	ids := opFixture(t, b, c, 2)
	if err := b.Operator().Delete(bg, ids[0]); !errors.Is(err, backend.ErrNotFinished) {
		t.Errorf("OperatorDelete of a working task: %v, want backend.ErrNotFinished", err)
	}
	finishOne(t, b, c, ids[0], func(l backend.Lease) error { return b.Jobs().Complete(bg, l, textResult, "") })
	events := make(chan string, 16)
	defer b.EventPublisher().Subscribe(func(id string) {
		select {
		case events <- id:
		default:
		}
	})()
	if err := b.Operator().Delete(bg, ids[0]); err != nil {
		t.Fatalf("OperatorDelete: %v", err)
	}
	if got := <-events; got != ids[0] {
		t.Errorf("published %s, want the deleted task", got)
	}
	if _, ok := find(t, b, ids[0]); ok {
		t.Error("the deleted task is still found")
	}
	if _, err := b.Operator().Task(bg, ids[0]); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("OperatorTask of the deleted task: %v", err)
	}
	if err := b.Operator().Delete(bg, ids[0]); !errors.Is(err, task.ErrNotFound) {
		t.Errorf("second OperatorDelete: %v, want task.ErrNotFound", err)
	}
	if got := opListAll(t, b, backend.OperatorQuery{Limit: 10}); !cmp.Equal(got, []string{ids[1]}) {
		t.Errorf("listing after the deletion: %v", got)
	}
}
