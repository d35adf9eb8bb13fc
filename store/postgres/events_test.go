package postgres

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
)

// Two Stores on one schema stand for two nodes.

func TestEventsAcrossNodes(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a, b := openStore(t, schema, nil), openStore(t, schema, nil)
	ctx := ctxT(t)
	if a.EventPublisher() != a.EventPublisher() {
		t.Fatal("EventPublisher changed")
	}
	onB := subscribe(t, b.EventPublisher(), "")

	// A committed change on A reaches B's subscribers through NOTIFY.
	snap, err := a.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, onB, "B to hear of A's Enqueue"); got != snap.ID() {
		t.Fatalf("B heard %q, want %q", got, snap.ID())
	}
	// So does a hint published on A's publisher by other code, and it
	// reaches A's own subscribers at once.
	onA := subscribe(t, a.EventPublisher(), "")
	a.EventPublisher().Publish("external-hint")
	if len(onA) != 1 || <-onA != "external-hint" {
		t.Fatal("A's own subscribers missed its Publish")
	}
	if got := waitFor(t, onB, "B to hear of A's Publish"); got != "external-hint" {
		t.Fatalf("B heard %q", got)
	}
	// A does not hear its own changes twice.
	j := claimOne(t, b, time.Time{})
	if err := b.Jobs().Complete(ctx, j.Lease, &mcp.CallToolResult{}, ""); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, onA, "A to hear of B's Complete"); got != snap.ID() {
		t.Fatalf("A heard %q", got)
	}
	if got := waitFor(t, onB, "B's own Complete"); got != snap.ID() {
		t.Fatalf("B heard %q", got)
	}
	a.EventPublisher().Publish("marker") // B's own events precede A's marker
	if got := waitFor(t, onB, "the marker"); got != "marker" {
		t.Fatalf("B heard %q before the marker: its own change came back through NOTIFY", got)
	}
}

// TestListenerReconnect kills B's LISTEN session, commits a change on A
// while B is disconnected, and checks that B delivers it after reconnecting
// (outbox catch-up), and that later changes arrive through NOTIFY again.
func TestListenerReconnect(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openStore(t, schema, nil)
	var pid atomic.Uint32
	connected := make(chan uint32, 4)
	disconnected := make(chan struct{}, 4)
	resume := make(chan struct{})
	b := openWithHooks(t, Options{Schema: schema}, testHooks{
		connected: func(p uint32) { pid.Store(p); connected <- p },
		beforeReconnect: func() {
			select {
			case disconnected <- struct{}{}:
			default:
			}
			<-resume
		},
	})
	releaseB := sync.OnceFunc(func() { close(resume) })
	t.Cleanup(releaseB) // runs before B closes, should the test stop early
	first := waitFor(t, connected, "B's first LISTEN session")
	ctx := ctxT(t)
	onB := subscribe(t, b.EventPublisher(), "")

	// A change before the outage advances B's cursor.
	before, err := a.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, onB, "the change before the outage"); got != before.ID() {
		t.Fatalf("B heard %q", got)
	}

	// Two running jobs, to be completed in one batch during the outage.
	var batch []backend.Completion
	for range 2 {
		if _, err := a.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
		waitFor(t, onB, "the creation of a batch task")
	}
	jobs, err := a.Jobs().Claim(ctx, backend.ClaimParams{Worker: "a", Limit: 2, Lease: time.Minute})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Claim: %d jobs, %v", len(jobs), err)
	}
	for _, j := range jobs {
		batch = append(batch, backend.Completion{Lease: j.Lease, Result: &mcp.CallToolResult{}})
	}

	var killed bool
	if err := a.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(first)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", first, killed, err)
	}
	waitFor(t, disconnected, "B's listener to notice the outage")

	// A cancellation request is a change with its outbox row; a creation
	// has none (its hint only wakes workers, which poll), so one made now
	// reaches B only if its NOTIFY does.
	if err := a.RequestCancel(ctx, rc(before.ID(), "acme")); err != nil {
		t.Fatal(err)
	}
	created, err := a.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if lost, err := (jobStore{a}).CompleteBatch(ctx, batch); err != nil || slices.Contains(lost, true) {
		t.Fatalf("CompleteBatch: lost %v, %v", lost, err)
	}
	releaseB()
	if p := waitFor(t, connected, "B's new LISTEN session"); p == first {
		t.Fatal("the listener kept its killed session")
	}
	// The catch-up replays every change of the outage that has an outbox
	// row, the batch's one row included; its overlap may repeat earlier
	// ones.
	missed := map[string]bool{before.ID(): true, jobs[0].TaskID: true, jobs[1].TaskID: true}
	for len(missed) > 0 {
		delete(missed, waitFor(t, onB, fmt.Sprintf("the changes committed during the outage (%d left)", len(missed))))
	}

	after, err := a.Enqueue(ctx, creation(t, "acme", "echo", `{}`), backend.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Then the new change, through NOTIFY, after any repeats of the replay.
	// The creation's hint may arrive too: A sends its NOTIFYs after
	// commit, possibly once B listens again.
	earlier := map[string]bool{before.ID(): true, created.ID(): true, jobs[0].TaskID: true, jobs[1].TaskID: true}
	for {
		got := waitFor(t, onB, "the change after the reconnection")
		if got == after.ID() {
			break
		}
		if !earlier[got] {
			t.Fatalf("B heard %q", got)
		}
	}
	if pid.Load() == first {
		t.Fatal("pid did not change")
	}
}

func TestParsePayload(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		node string
		evs  []event
	}{
		{"n1 42 abc", true, "n1", []event{{42, "abc"}}},
		{"n1 42 abc 43 def", true, "n1", []event{{42, "abc"}, {43, "def"}}},
		{"n1 0 x y", false, "", nil},
		{"abc", false, "", nil},
		{"n1 x abc", false, "", nil},
		{"n1 -1 abc", false, "", nil},
		{"n1 5 ", false, "", nil},
		{" 5 abc", false, "", nil},
		{"n1 5 abc 6", false, "", nil},
	} {
		node, evs, ok := parsePayload(tc.in)
		if ok != tc.ok || node != tc.node || !slices.Equal(evs, tc.evs) {
			t.Errorf("parsePayload(%q) = %q %v %v", tc.in, node, evs, ok)
		}
	}
}

// TestPackPayloads checks that packed payloads stay under the limit and
// parse back to the events, in order.
func TestPackPayloads(t *testing.T) {
	var evs []event
	for i := range 1000 {
		evs = append(evs, event{id: int64(1_000_000 + i), taskID: fmt.Sprintf("%08d-0000-4000-8000-000000000000", i)})
	}
	payloads := packPayloads("node1", evs)
	if len(payloads) < 2 {
		t.Fatalf("%d payloads for 1,000 events: want them split", len(payloads))
	}
	var got []event
	for _, p := range payloads {
		if len(p) > maxPayload {
			t.Fatalf("payload of %d bytes", len(p))
		}
		node, e, ok := parsePayload(p)
		if !ok || node != "node1" {
			t.Fatalf("parsePayload(%.40q...) = %q, %v", p, node, ok)
		}
		got = append(got, e...)
	}
	if !slices.Equal(got, evs) {
		t.Fatalf("round trip lost or reordered events: %d of %d", len(got), len(evs))
	}
}

// FuzzParsePayload checks that any payload parses without panicking, and
// that whatever parses packs back into payloads that parse to the same
// events.
func FuzzParsePayload(f *testing.F) {
	for _, s := range []string{"n1 42 abc", "n1 42 abc 43 def", "n1 0 x y", "", " ", "n 1 a 2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		node, evs, ok := parsePayload(p)
		if !ok {
			return
		}
		var again []event
		for _, q := range packPayloads(node, evs) {
			n, e, ok := parsePayload(q)
			if !ok || n != node {
				t.Fatalf("repacked payload %q does not parse (from %q)", q, p)
			}
			again = append(again, e...)
		}
		if !slices.Equal(again, evs) {
			t.Fatalf("%q: events %v, repacked %v", p, evs, again)
		}
	})
}
