package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
)

// queued is one job a queue case enqueues: its label, queue, priority,
// and how long after the previous job it is created (all are created at
// least 1 ms apart, so that creation order is defined).
type queued struct {
	label, queue string
	priority     int
	delay        time.Duration // RunAt after creation; 0: due at once
}

// enqueueQueued creates jobs, 1 ms apart (of toolB when the label starts
// with "b", else toolA), advances the clock 1 ms more and returns the
// labels by task ID.
func enqueueQueued(t testing.TB, b backend.Store, c *Clock, jobs []queued) map[string]string {
	t.Helper()
	labels := map[string]string{}
	for _, j := range jobs {
		c.Advance(time.Millisecond)
		tool := toolA
		if strings.HasPrefix(j.label, "b") {
			tool = toolB
		}
		opts := backend.EnqueueOptions{Queue: j.queue, Priority: j.priority}
		if j.delay > 0 {
			opts.RunAt = c.Now().Add(j.delay)
		}
		tk, err := b.Enqueue(bg, creation(t, endpointA, tenantA, tool, `{"n":1}`), opts)
		if err != nil {
			t.Fatalf("Enqueue %s: %v", j.label, err)
		}
		labels[tk.ID()] = j.label
	}
	c.Advance(time.Millisecond)
	return labels
}

// claimFrom claims up to limit jobs of queue and returns their labels.
func claimFrom(t testing.TB, b backend.Store, c *Clock, queue string, kinds []string, limit int, labels map[string]string) []string {
	t.Helper()
	jobs, err := b.Jobs().Claim(context.Background(), backend.ClaimParams{
		Worker: "w", Queue: queue, Kinds: kinds, Limit: limit, Lease: lease, Now: c.Now(),
	})
	if err != nil {
		t.Fatalf("Claim(%q): %v", queue, err)
	}
	got := []string{}
	for _, j := range jobs {
		got = append(got, labels[j.TaskID])
	}
	return got
}

// testQueues: a claim takes the jobs of its queue only (ClaimParams.Queue,
// "" meaning backend.DefaultQueue), the highest priority first (1 before
// 4) and, within a priority, oldest run-at time first, then creation
// order; a job of a queue no claim names is never claimed.
func testQueues(t *testing.T, open opener) {
	type claimStep struct {
		queue string
		kinds []string
		limit int
		want  []string
	}
	for _, tc := range []struct {
		name   string
		jobs   []queued
		claims []claimStep
	}{
		{
			name: "queue filtering",
			jobs: []queued{{"d1", "", 0, 0}, {"m1", "mail", 0, 0}, {"d2", "default", 0, 0}, {"r1", "reports", 0, 0}, {"m2", "mail", 0, 0}},
			claims: []claimStep{
				{"mail", nil, 10, []string{"m1", "m2"}},
				{"", nil, 10, []string{"d1", "d2"}},
				{"mail", nil, 10, []string{}},
				{"reports", nil, 10, []string{"r1"}},
			},
		},
		{
			name: "priority order",
			jobs: []queued{{"p3", "q", 3, 0}, {"p1", "q", 1, 0}, {"p4", "q", 4, 0}, {"p0", "q", 0, 0}, {"p2", "q", 2, 0}},
			claims: []claimStep{
				{"q", nil, 2, []string{"p1", "p0"}}, // 0 is the default: 1, and p1 is older
				{"q", nil, 10, []string{"p2", "p3", "p4"}},
			},
		},
		{
			name: "FIFO within a priority",
			jobs: []queued{{"a", "q", 2, 0}, {"b", "q", 2, 0}, {"hi", "q", 1, 0}, {"c", "q", 2, 0}, {"d", "q", 2, 0}},
			claims: []claimStep{
				{"q", nil, 1, []string{"hi"}},
				{"q", nil, 2, []string{"a", "b"}},
				{"q", nil, 2, []string{"c", "d"}},
			},
		},
		{
			name: "a job not due yet yields to lower priorities",
			jobs: []queued{{"later", "q", 1, time.Hour}, {"low", "q", 4, 0}},
			claims: []claimStep{
				{"q", nil, 10, []string{"low"}},
			},
		},
		{
			name: "kinds within a queue",
			jobs: []queued{{"a1", "q", 0, 0}, {"b1", "q", 0, 0}, {"a2", "other", 0, 0}},
			claims: []claimStep{
				{"q", []string{toolB}, 10, []string{"b1"}},
				{"q", []string{toolA}, 10, []string{"a1"}},
			},
		},
		{
			name: "a job of an unserved queue is never claimed",
			jobs: []queued{{"u", "unserved", 1, 0}, {"d", "", 4, 0}, {"m", "mail", 4, 0}},
			claims: []claimStep{
				{"", nil, 10, []string{"d"}},
				{"mail", nil, 10, []string{"m"}},
				{"", nil, 10, []string{}},
				{"mail", []string{toolA, toolB}, 10, []string{}},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, c := open(t)
			labels := enqueueQueued(t, b, c, tc.jobs)
			for i, s := range tc.claims {
				got := claimFrom(t, b, c, s.queue, s.kinds, s.limit, labels)
				if d := cmp.Diff(s.want, got); d != "" {
					t.Errorf("claim %d of queue %q (-want +got):\n%s", i, s.queue, d)
				}
			}
		})
	}
}

// testQueueOptionsRange: Enqueue and EnqueueBatch refuse a queue name that
// backend.CheckQueue refuses and a priority outside [1, 4] (0 is the
// default) before writing anything, and keep the longest name and every
// priority.
func testQueueOptionsRange(t *testing.T, open opener) {
	b, c := open(t)
	for _, tc := range []struct {
		name string
		opts backend.EnqueueOptions
		want string
	}{
		{"long name", backend.EnqueueOptions{Queue: strings.Repeat("q", backend.MaxQueueNameBytes+1)}, "queue name"},
		{"space", backend.EnqueueOptions{Queue: "my queue"}, "queue name"},
		{"leading dot", backend.EnqueueOptions{Queue: ".q"}, "queue name"},
		{"non-ASCII", backend.EnqueueOptions{Queue: "f\u00efle"}, "queue name"},
		{"priority 5", backend.EnqueueOptions{Priority: 5}, "priority"},
		{"priority -1", backend.EnqueueOptions{Priority: -1}, "priority"},
	} {
		_, err := b.Enqueue(bg, creation(t, endpointA, tenantA, toolA, `{"n":1}`), tc.opts)
		checkRangeErr(t, tc.name+": Enqueue", err, tc.want)
		if be, ok := b.(backend.BatchEnqueuer); ok {
			_, err := be.EnqueueBatch(bg, []backend.BatchItem{
				{Creation: creation(t, endpointA, tenantA, toolA, `{"n":2}`)},
				{Creation: creation(t, endpointA, tenantA, toolA, `{"n":3}`), Options: tc.opts},
			})
			checkRangeErr(t, tc.name+": EnqueueBatch", err, tc.want)
		}
	}
	if jobs := claim(t, b, c, 10); len(jobs) != 0 {
		t.Fatalf("the refused creations left %d jobs", len(jobs))
	}
	longest := strings.Repeat("q", backend.MaxQueueNameBytes)
	labels := map[string]string{}
	for p := backend.LowestPriority; p >= backend.HighestPriority; p-- {
		tk := enqueue(t, b, backend.EnqueueOptions{Queue: longest, Priority: p})
		labels[tk.ID()] = string(rune('0' + p))
	}
	if d := cmp.Diff([]string{"1", "2", "3", "4"}, claimFrom(t, b, c, longest, nil, 10, labels)); d != "" {
		t.Errorf("claim of the longest queue name (-want +got):\n%s", d)
	}
}

// checkRangeErr checks that err is an error whose text holds want.
func checkRangeErr(t *testing.T, op string, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v; want an error about the %s", op, err, want)
	}
}

// testOperatorRetryQueue: an operator's retry of a failed task enqueues
// in the failed task's queue with its priority, also once the failed
// task's job row was pruned: a job in another queue would never be
// claimed by the runtimes serving the tool's queue.
func testOperatorRetryQueue(t *testing.T, b OperatorBackend, c *Clock) {
	tk, err := b.Enqueue(bg, creation(t, endpointA, tenantA, toolA, `{"n":1}`), backend.EnqueueOptions{Queue: "mail", Priority: 3})
	if err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{tk.ID(): "failed"}
	if d := cmp.Diff([]string{"failed"}, claimFromAndFail(t, b, c, labels)); d != "" {
		t.Fatalf("claim of mail (-want +got):\n%s", d)
	}
	if p, ok := b.Jobs().(backend.Pruner); ok {
		c.Advance(time.Hour)
		if n, err := p.PruneJobs(bg, c.Now(), 10); err != nil || n != 1 {
			t.Fatalf("PruneJobs = %d, %v; want the failed task's job", n, err)
		}
	}
	again, err := b.Operator().Retry(bg, tk.ID())
	if err != nil {
		t.Fatalf("OperatorRetry: %v", err)
	}
	labels[again.ID()] = "retry"
	// A job of a higher priority (2) enqueued after the retry runs before
	// it: the retry kept its priority (3).
	c.Advance(time.Millisecond)
	o, err := b.Enqueue(bg, creation(t, endpointA, tenantA, toolA, `{"n":2}`), backend.EnqueueOptions{Queue: "mail", Priority: 2})
	if err != nil {
		t.Fatal(err)
	}
	labels[o.ID()] = "later, higher"
	c.Advance(time.Millisecond)
	if got := claimFrom(t, b, c, "", nil, 10, labels); len(got) != 0 {
		t.Errorf("the default queue holds %v; want nothing", got)
	}
	if d := cmp.Diff([]string{"later, higher", "retry"}, claimFrom(t, b, c, "mail", nil, 10, labels)); d != "" {
		t.Errorf("claim of mail after the retry (-want +got):\n%s", d)
	}
}

// claimFromAndFail claims the jobs of queue "mail" and fails each, and
// returns their labels.
func claimFromAndFail(t *testing.T, b backend.Store, c *Clock, labels map[string]string) []string {
	t.Helper()
	jobs, err := b.Jobs().Claim(bg, backend.ClaimParams{Worker: "w", Queue: "mail", Limit: 10, Lease: lease, Now: c.Now()})
	if err != nil {
		t.Fatal(err)
	}
	got := []string{}
	for _, j := range jobs {
		if err := b.Jobs().Fail(bg, j.Lease, toolError, "", ""); err != nil {
			t.Fatal(err)
		}
		got = append(got, labels[j.TaskID])
	}
	return got
}
