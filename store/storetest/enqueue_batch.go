package storetest

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// testEnqueueBatch: a backend that enqueues in batches creates each item as
// Enqueue would (readable at once, claimable when due, with its options,
// published after commit), and refuses a batch with an idempotency key, an
// invalid item or too many items without writing anything.
func testEnqueueBatch(t *testing.T, open opener) {
	b, c := open(t)
	be, ok := b.(backend.BatchEnqueuer)
	if !ok {
		t.Skip("backend does not implement backend.BatchEnqueuer")
	}
	var mu sync.Mutex
	var published []string
	unsubscribe := b.EventPublisher().Subscribe(func(id string) {
		mu.Lock()
		published = append(published, id)
		mu.Unlock()
	})
	defer unsubscribe()

	items := []backend.BatchItem{
		{Creation: creation(t, endpointA, tenantA, toolA, `{"n": 1.50}`), Options: backend.EnqueueOptions{TTL: time.Hour, MaxAttempts: 4}},
		{Creation: creation(t, endpointA, tenantA, toolB, `{"n":2}`), Options: backend.EnqueueOptions{MaxAttempts: 2}},
		{Creation: creation(t, endpointA, tenantA, toolA, `{"n":3}`), Options: backend.EnqueueOptions{RunAt: c.Now().Add(time.Minute)}},
	}
	snaps, err := be.EnqueueBatch(bg, items)
	if err != nil || len(snaps) != len(items) {
		t.Fatalf("EnqueueBatch: %d snapshots, %v", len(snaps), err)
	}
	var ids []string
	for i, snap := range snaps {
		if !snap.Origin().Equal(items[i].Creation.Origin) || snap.Status() != task.Working ||
			!snap.CreatedAt().Equal(c.Now()) {
			t.Fatalf("snapshot %d: %v created %v, want the item's origin, working, created now", i, snap, snap.CreatedAt())
		}
		sameSnapshot(t, "batch task", mustFind(t, b, snap.ID()), snap)
		ids = append(ids, snap.ID())
	}
	if ttl := snaps[0].TTL(); ttl != time.Hour {
		t.Errorf("TTL of item 0 = %v, want 1h", ttl)
	}
	mu.Lock()
	got := slices.Clone(published)
	mu.Unlock()
	if slices.Sort(got); !slices.Equal(got, slices.Sorted(slices.Values(ids))) {
		t.Errorf("published %v, want the batch's %v", got, ids)
	}

	// The two due jobs are claimable (created together, they are ordered
	// by task ID); the third runs later.
	jobs := claim(t, b, c, 10)
	if len(jobs) != 2 || jobs[0].TaskID > jobs[1].TaskID {
		t.Fatalf("claimed %+v, want the jobs of %v in task ID order", jobs, ids[:2])
	}
	for _, j := range jobs {
		switch j.TaskID {
		case ids[0]:
			if j.Kind != toolA || j.MaxAttempts != 4 {
				t.Errorf("job of item 0: %+v", j)
			}
		case ids[1]:
			if j.Kind != toolB || j.MaxAttempts != 2 {
				t.Errorf("job of item 1: %+v", j)
			}
		default:
			t.Errorf("claimed %s, not due yet", j.TaskID)
		}
	}

	// Refused batches write nothing: nothing more is claimable or published.
	mu.Lock()
	before := len(published)
	mu.Unlock()
	valid := backend.BatchItem{Creation: creation(t, endpointA, tenantA, toolA, `{}`)}
	for name, batch := range map[string][]backend.BatchItem{
		"idempotency key": {valid, {Creation: valid.Creation, Options: backend.EnqueueOptions{IdempotencyKey: "k"}}},
		"no creation":     {valid, {}},
		"bad TTL":         {valid, {Creation: valid.Creation, Options: backend.EnqueueOptions{TTL: time.Microsecond}}},
		"too many":        slices.Repeat([]backend.BatchItem{valid}, backend.MaxEnqueueBatch+1),
	} {
		snaps, err := be.EnqueueBatch(bg, batch)
		if err == nil || snaps != nil {
			t.Errorf("%s: EnqueueBatch = %d snapshots, %v; want an error", name, len(snaps), err)
		}
		if name == "idempotency key" && !errors.Is(err, backend.ErrBatchIdempotencyKey) {
			t.Errorf("%s: %v, want ErrBatchIdempotencyKey", name, err)
		}
	}
	if snaps, err := be.EnqueueBatch(bg, nil); err != nil || len(snaps) != 0 {
		t.Errorf("empty batch: %v, %v", snaps, err)
	}
	if jobs := claim(t, b, c, 10); len(jobs) != 0 {
		t.Errorf("refused batches left %d claimable jobs", len(jobs))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(published) != before {
		t.Errorf("refused batches published %v", published[before:])
	}
}

// testMaxAttemptsRange: MaxAttempts beyond backend.MaxMaxAttempts is
// refused, by Enqueue and EnqueueBatch alike and before anything is
// written, rather than stored by one database, refused by another and
// wrapped around on the way to it; the largest allowed value is kept as it
// is.
func testMaxAttemptsRange(t *testing.T, open opener) {
	b, c := open(t)
	for _, tooMany := range []int{backend.MaxMaxAttempts + 1, 1<<32 + 3} {
		if _, err := b.Enqueue(bg, creation(t, endpointA, tenantA, toolA, `{"n":1}`),
			backend.EnqueueOptions{MaxAttempts: tooMany}); err == nil {
			t.Errorf("Enqueue with MaxAttempts %d succeeded", tooMany)
		}
		if be, ok := b.(backend.BatchEnqueuer); ok {
			if _, err := be.EnqueueBatch(bg, []backend.BatchItem{{Creation: creation(t, endpointA, tenantA, toolA, `{"n":1}`),
				Options: backend.EnqueueOptions{MaxAttempts: tooMany}}}); err == nil {
				t.Errorf("EnqueueBatch with MaxAttempts %d succeeded", tooMany)
			}
		}
	}
	if jobs := claim(t, b, c, 10); len(jobs) != 0 {
		t.Fatalf("the refused creations left %d jobs", len(jobs))
	}
	tk := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: backend.MaxMaxAttempts})
	if j := claimOne(t, b, c, tk.ID()); j.MaxAttempts != backend.MaxMaxAttempts {
		t.Errorf("MaxAttempts %d stored as %d", backend.MaxMaxAttempts, j.MaxAttempts)
	}
}
