package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
)

// queuesClaimer returns the QueuesClaimer of b's JobStore, or skips the
// test when it has none (the extension is optional).
func queuesClaimer(t testing.TB, b backend.Store) backend.QueuesClaimer {
	t.Helper()
	qc, ok := b.Jobs().(backend.QueuesClaimer)
	if !ok {
		t.Skip("the backend's JobStore does not implement backend.QueuesClaimer")
	}
	return qc
}

// claimQueuesFrom claims from qs at once and returns the labels of each
// queue's jobs.
func claimQueuesFrom(t testing.TB, qc backend.QueuesClaimer, c *Clock, qs []backend.QueueClaim, labels map[string]string) [][]string {
	t.Helper()
	jobs, err := qc.ClaimQueues(context.Background(), backend.ClaimParams{Worker: "w", Lease: lease, Now: c.Now()}, qs)
	if err != nil {
		t.Fatalf("ClaimQueues(%v): %v", qs, err)
	}
	if len(jobs) != len(qs) {
		t.Fatalf("ClaimQueues(%v) returned %d slices; want one per queue", qs, len(jobs))
	}
	got := make([][]string, len(jobs))
	for i, js := range jobs {
		got[i] = []string{}
		for _, j := range js {
			got[i] = append(got[i], labels[j.TaskID])
		}
	}
	return got
}

// testClaimQueues: a claim of several queues at once (QueuesClaimer) takes
// from each what a Claim of that queue would, in its order, within that
// queue's own limit and kinds, and returns the jobs by queue in the order
// the queues were given; it refuses malformed calls, claiming nothing.
func testClaimQueues(t *testing.T, open opener) {
	b, c := open(t)
	qc := queuesClaimer(t, b)
	labels := enqueueQueued(t, b, c, []queued{
		{"m-low", "mail", 4, 0}, {"m1", "mail", 1, 0}, {"m2", "mail", 1, 0}, {"m-later", "mail", 1, time.Second},
		{"d1", "", 2, 0}, {"d2", "default", 2, 0}, {"b-d", "default", 1, 0},
		{"r1", "reports", 3, 0}, {"u", "unserved", 1, 0},
	})

	for _, bad := range []struct {
		name string
		p    backend.ClaimParams
		qs   []backend.QueueClaim
	}{
		{"no queues", backend.ClaimParams{}, nil},
		{"a queue twice", backend.ClaimParams{}, []backend.QueueClaim{{Queue: "", Limit: 1}, {Queue: "default", Limit: 1}}},
		{"a zero limit", backend.ClaimParams{}, []backend.QueueClaim{{Queue: "mail", Limit: 1}, {Queue: "reports"}}},
		{"a limit in ClaimParams", backend.ClaimParams{Limit: 1}, []backend.QueueClaim{{Queue: "mail", Limit: 1}}},
		{"a queue in ClaimParams", backend.ClaimParams{Queue: "mail"}, []backend.QueueClaim{{Queue: "mail", Limit: 1}}},
		{"too many queues", backend.ClaimParams{}, manyQueueClaims(backend.MaxClaimQueues + 1)},
	} {
		p := bad.p
		p.Worker, p.Lease, p.Now = "w", lease, c.Now()
		if jobs, err := qc.ClaimQueues(bg, p, bad.qs); err == nil {
			t.Errorf("ClaimQueues with %s = %d queues of jobs, nil; want an error", bad.name, len(jobs))
		}
	}

	steps := []struct {
		qs   []backend.QueueClaim
		want [][]string
	}{
		// Each queue in its own order and within its own limit; the
		// unserved queue and the job not due yet stay.
		{[]backend.QueueClaim{{Queue: "mail", Limit: 2}, {Queue: "", Kinds: []string{toolA}, Limit: 5}, {Queue: "reports", Limit: 1}},
			[][]string{{"m1", "m2"}, {"d1", "d2"}, {"r1"}}},
		// The rest: toolB's job of the default queue, the low-priority mail.
		{[]backend.QueueClaim{{Queue: "reports", Limit: 3}, {Queue: "mail", Limit: 3}, {Queue: "default", Kinds: []string{toolB}, Limit: 3}},
			[][]string{{}, {"m-low"}, {"b-d"}}},
		{[]backend.QueueClaim{{Queue: "mail", Limit: 10}, {Queue: "default", Limit: 10}}, [][]string{{}, {}}},
	}
	for i, st := range steps {
		if d := cmp.Diff(st.want, claimQueuesFrom(t, qc, c, st.qs, labels)); d != "" {
			t.Errorf("ClaimQueues %d (-want +got):\n%s", i, d)
		}
	}
	c.Advance(time.Second)
	if d := cmp.Diff([][]string{{"m-later"}, {}}, claimQueuesFrom(t, qc, c,
		[]backend.QueueClaim{{Queue: "mail", Limit: 10}, {Queue: "unserved-too", Limit: 10}}, labels)); d != "" {
		t.Errorf("ClaimQueues once the delayed job is due (-want +got):\n%s", d)
	}
	if got := claimFrom(t, b, c, "unserved", nil, 10, labels); len(got) != 1 {
		t.Errorf("the unserved queue holds %v; want its one job, never claimed", got)
	}
}

// manyQueueClaims returns n claims of distinct queues.
func manyQueueClaims(n int) []backend.QueueClaim {
	qs := make([]backend.QueueClaim, n)
	for i := range qs {
		qs[i] = backend.QueueClaim{Queue: fmt.Sprintf("q%d", i), Limit: 1}
	}
	return qs
}
