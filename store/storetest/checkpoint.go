package storetest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// checkpointer returns the Checkpointer of b's JobStore. The suite requires
// one, as it requires a ProgressReporter.
func checkpointer(t testing.TB, b backend.Store) backend.Checkpointer {
	t.Helper()
	cp, ok := b.Jobs().(backend.Checkpointer)
	if !ok {
		t.Fatal("the backend's JobStore does not implement backend.Checkpointer")
	}
	return cp
}

// saveCheckpoint saves data under l and returns whether the lease was lost.
func saveCheckpoint(t testing.TB, b backend.Store, l backend.Lease, data []byte) bool {
	t.Helper()
	lost, err := checkpointer(t, b).SaveCheckpoints(context.Background(), []backend.CheckpointWrite{{Lease: l, Data: data}})
	if err != nil || len(lost) != 1 {
		t.Fatalf("SaveCheckpoints = %v, %v", lost, err)
	}
	return lost[0]
}

// testCheckpoint: a checkpoint is written under the lease (a stale lease
// writes nothing), bounded in size (refused before anything is written),
// changes nothing a client sees, and is kept with the job: the claim after
// a release, a retry, an input round and a rescued crash carries the last
// one, with the task's progress count as of the claim.
func testCheckpoint(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 5})
	j := claimOne(t, b, c, tk.ID())
	if j.Checkpoint != nil || j.Progress != nil {
		t.Fatalf("first claim: checkpoint %q progress %v, want none", j.Checkpoint, j.Progress)
	}
	before := mustFind(t, b, tk.ID())
	c.Advance(time.Millisecond)
	if saveCheckpoint(t, b, j.Lease, []byte(`{"page":1}`)) || saveCheckpoint(t, b, j.Lease, []byte(`{"page":2}`)) {
		t.Fatal("SaveCheckpoints under the live lease: lost")
	}
	sameSnapshot(t, "after a checkpoint", before, mustFind(t, b, tk.ID()))

	// Invalid items fail the call, the valid one with them.
	big := bytes.Repeat([]byte("x"), backend.MaxCheckpointBytes+1)
	for name, items := range map[string][]backend.CheckpointWrite{
		"empty":     {{Lease: j.Lease, Data: []byte("ok")}, {Lease: j.Lease}},
		"too large": {{Lease: j.Lease, Data: []byte("ok")}, {Lease: j.Lease, Data: big}},
		"too many":  make([]backend.CheckpointWrite, backend.MaxCheckpointBatch+1),
	} {
		if lost, err := checkpointer(t, b).SaveCheckpoints(bg, items); !errors.Is(err, backend.ErrInvalidCheckpoint) {
			t.Errorf("%s: SaveCheckpoints = %v, %v; want backend.ErrInvalidCheckpoint", name, lost, err)
		}
	}
	wantErr(t, "ReportProgress", reporter(b).ReportProgress(bg, j.Lease, "page 2", &task.Progress{Current: 2, Total: 20}), "ok")

	// A release keeps the checkpoint; the released lease writes nothing.
	wantErr(t, "Release", b.Jobs().Release(bg, j.Lease), "ok")
	if !saveCheckpoint(t, b, j.Lease, []byte(`{"page":99}`)) {
		t.Fatal("a released lease saved a checkpoint")
	}
	steps := []struct {
		name string
		end  func(l backend.Lease)
	}{
		{"release", nil},
		{"retry", func(l backend.Lease) { wantErr(t, "Retry", b.Jobs().Retry(bg, l, c.Now(), "again", ""), "ok") }},
		{"input round", func(l backend.Lease) {
			wantErr(t, "RequestInput", b.Jobs().RequestInput(bg, l, mcp.InputRequests{"colour": reqElicit}, "ask"), "ok")
			update(t, b, tk.ID(), mcp.InputResponses{"colour": respElicit})
		}},
		{"crash", func(l backend.Lease) {
			c.Advance(lease)
			if !saveCheckpoint(t, b, l, []byte(`{"page":98}`)) {
				t.Fatal("an expired lease saved a checkpoint")
			}
			if n, err := b.Jobs().RescueExpired(bg, rescueParams(c, 10)); err != nil || n != 1 {
				t.Fatalf("RescueExpired = %d, %v", n, err)
			}
		}},
	}
	want := []byte(`{"page":2}`)
	for i, st := range steps {
		if st.end != nil {
			st.end(j.Lease)
		}
		j = claimOne(t, b, c, tk.ID())
		if !bytes.Equal(j.Checkpoint, want) {
			t.Fatalf("claim after %s: checkpoint %q, want %q", st.name, j.Checkpoint, want)
		}
		if p := j.Progress; p == nil || *p != (task.Progress{Current: 2, Total: 20}) {
			t.Fatalf("claim after %s: progress %v, want 2 of 20", st.name, p)
		}
		want = []byte{byte('a' + i)}
		if saveCheckpoint(t, b, j.Lease, want) {
			t.Fatalf("after %s: the new claim's checkpoint was lost", st.name)
		}
	}
	full := bytes.Repeat([]byte("y"), backend.MaxCheckpointBytes)
	if saveCheckpoint(t, b, j.Lease, full) {
		t.Fatal("a checkpoint of MaxCheckpointBytes was lost")
	}
	wantErr(t, "Retry", b.Jobs().Retry(bg, j.Lease, c.Now(), "again", ""), "ok")
	if j = claimOne(t, b, c, tk.ID()); !bytes.Equal(j.Checkpoint, full) {
		t.Fatalf("claim after a full checkpoint: %d bytes, want %d", len(j.Checkpoint), len(full))
	}
}

// testCheckpointBatch: one call writes the checkpoints of several leases;
// a lost item changes nothing and leaves the others to commit; two items of
// one lease leave the last.
func testCheckpointBatch(t *testing.T, open opener) {
	b, c := open(t)
	a, z := enqueue(t, b, backend.EnqueueOptions{}), enqueue(t, b, backend.EnqueueOptions{})
	jobs := claim(t, b, c, 2)
	if len(jobs) != 2 {
		t.Fatalf("claimed %d jobs, want 2", len(jobs))
	}
	leases := map[string]backend.Lease{}
	for _, j := range jobs {
		leases[j.TaskID] = j.Lease
	}
	stale := leases[z.ID()]
	stale.Attempt--
	lost, err := checkpointer(t, b).SaveCheckpoints(bg, []backend.CheckpointWrite{
		{Lease: leases[a.ID()], Data: []byte("a1")},
		{Lease: stale, Data: []byte("stale")},
		{Lease: leases[a.ID()], Data: []byte("a2")},
		{Lease: leases[z.ID()], Data: []byte("z1")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]bool{false, true, false, false}, lost); d != "" {
		t.Errorf("lost (-want +got):\n%s", d)
	}
	for _, l := range leases {
		wantErr(t, "Release", b.Jobs().Release(bg, l), "ok")
	}
	got := map[string]string{}
	for _, j := range claim(t, b, c, 2) {
		got[j.TaskID] = string(j.Checkpoint)
	}
	if d := cmp.Diff(map[string]string{a.ID(): "a2", z.ID(): "z1"}, got); d != "" {
		t.Errorf("checkpoints after the batch (-want +got):\n%s", d)
	}
}

// testOperatorCheckpoints: each checkpoint is a step of the task's
// history, with its size and never its content, and the job shows the
// last one's size.
func testOperatorCheckpoints(t *testing.T, b OperatorBackend, c *Clock) {
	id := opFixture(t, b, c, 1)[0]
	j := claimOne(t, b, c, id)
	saveCheckpoint(t, b, j.Lease, []byte(`{"secret":"s3cr3t"}`))
	wantErr(t, "Retry", b.Jobs().Retry(bg, j.Lease, c.Now(), "", ""), "ok")
	j = claimOne(t, b, c, id)
	saveCheckpoint(t, b, j.Lease, []byte("12345"))
	ot := operatorTask(t, b, id)
	want := []eventShape{
		{Kind: backend.EventCreated},
		{Kind: backend.EventClaimed, Attempt: 1, Worker: "w"},
		{Kind: backend.EventCheckpoint, Attempt: 1, Worker: "w", Message: "19 bytes"},
		{Kind: backend.EventRetry, Attempt: 1, Worker: "w", Message: "failure 1 of 10"},
		{Kind: backend.EventClaimed, Attempt: 2, Worker: "w"},
		{Kind: backend.EventCheckpoint, Attempt: 2, Worker: "w", Message: "5 bytes"},
	}
	if d := cmp.Diff(want, shapes(ot.Events)); d != "" {
		t.Errorf("history (-want +got):\n%s", d)
	}
	if ot.Job == nil || ot.Job.CheckpointBytes != 5 || ot.Job.CheckpointAt.IsZero() {
		t.Errorf("job %+v: want CheckpointBytes 5 and a CheckpointAt", ot.Job)
	}
}

// testCompleteWithCheckpoint: a batched completion that carries a
// checkpoint saves it with the completion under the same fence: a lost
// item saves neither, so the job keeps its last checkpoint for the claim
// that runs it again; an invalid checkpoint fails the whole call before
// anything is written.
func testCompleteWithCheckpoint(t *testing.T, open opener) {
	b, c := open(t)
	bc, ok := b.Jobs().(backend.BatchCompleter)
	if !ok {
		t.Skip("the backend is not a backend.BatchCompleter")
	}
	a := enqueue(t, b, backend.EnqueueOptions{})
	c.Advance(time.Millisecond) // claimed in creation order
	z := enqueue(t, b, backend.EnqueueOptions{})
	ja, jz := claimOne(t, b, c, a.ID()), claimOne(t, b, c, z.ID())
	if saveCheckpoint(t, b, jz.Lease, []byte("z1")) {
		t.Fatal("SaveCheckpoints under the live lease: lost")
	}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	big := bytes.Repeat([]byte("x"), backend.MaxCheckpointBytes+1)
	for name, bad := range map[string][]byte{"empty": {}, "too large": big} {
		lost, err := bc.CompleteBatch(bg, []backend.Completion{
			{Lease: ja.Lease, Result: res, Checkpoint: []byte("ok")}, {Lease: jz.Lease, Result: res, Checkpoint: bad}})
		if !errors.Is(err, backend.ErrInvalidCheckpoint) {
			t.Errorf("%s checkpoint: CompleteBatch = %v, %v; want backend.ErrInvalidCheckpoint", name, lost, err)
		}
	}
	if st := mustFind(t, b, a.ID()).Status(); st != task.Working {
		t.Fatalf("after refused batches: %v, want working", st)
	}
	stale := jz.Lease
	stale.Attempt++ // a claim that is not the job's
	lost, err := bc.CompleteBatch(bg, []backend.Completion{
		{Lease: ja.Lease, Result: res, Checkpoint: []byte(`{"page":20}`)},
		{Lease: stale, Result: res, Checkpoint: []byte("stale")},
	})
	if err != nil || !cmp.Equal(lost, []bool{false, true}) {
		t.Fatalf("CompleteBatch = %v, %v; want [false true]", lost, err)
	}
	if st := mustFind(t, b, a.ID()).Status(); st != task.Completed {
		t.Errorf("the live item's task is %v, want completed", st)
	}
	if st := mustFind(t, b, z.ID()).Status(); st != task.Working {
		t.Errorf("the lost item's task is %v, want working", st)
	}
	// The lost item wrote nothing: the next claim resumes from z1.
	wantErr(t, "Release", b.Jobs().Release(bg, jz.Lease), "ok")
	jz = claimOne(t, b, c, z.ID())
	if string(jz.Checkpoint) != "z1" {
		t.Errorf("claim after a lost completion: checkpoint %q, want \"z1\"", jz.Checkpoint)
	}
	wantErr(t, "Complete", b.Jobs().Complete(bg, jz.Lease, res, ""), "ok")
	// A completion under an expired lease is lost too, checkpoint and all.
	e := enqueue(t, b, backend.EnqueueOptions{MaxAttempts: 5})
	je := claimOne(t, b, c, e.ID())
	c.Advance(lease)
	lost, err = bc.CompleteBatch(bg, []backend.Completion{{Lease: je.Lease, Result: res, Checkpoint: []byte("late")}})
	if err != nil || !cmp.Equal(lost, []bool{true}) {
		t.Fatalf("CompleteBatch under an expired lease = %v, %v; want lost", lost, err)
	}
	if n, err := b.Jobs().RescueExpired(bg, rescueParams(c, 10)); err != nil || n != 1 {
		t.Fatalf("RescueExpired = %d, %v", n, err)
	}
	if j := claimOne(t, b, c, e.ID()); j.Checkpoint != nil {
		t.Errorf("claim after an expired completion: checkpoint %q, want none", j.Checkpoint)
	}
}

// testOperatorCompletedCheckpoint: a checkpoint saved with a batched
// completion shows as the job's checkpoint size and time, and adds no
// step to the history (the completed step follows the run's claim).
func testOperatorCompletedCheckpoint(t *testing.T, b OperatorBackend, c *Clock) {
	bc, ok := b.Jobs().(backend.BatchCompleter)
	if !ok {
		t.Skip("the backend is not a backend.BatchCompleter")
	}
	id := opFixture(t, b, c, 1)[0]
	j := claimOne(t, b, c, id)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}
	lost, err := bc.CompleteBatch(bg, []backend.Completion{{Lease: j.Lease, Result: res, Checkpoint: []byte("1234567")}})
	if err != nil || !cmp.Equal(lost, []bool{false}) {
		t.Fatalf("CompleteBatch = %v, %v", lost, err)
	}
	ot := operatorTask(t, b, id)
	for _, ev := range ot.Events {
		if ev.Kind == backend.EventCheckpoint {
			t.Errorf("history holds a checkpoint step %+v; a completion's checkpoint adds none", ev)
		}
	}
	if ot.Job == nil || ot.Job.CheckpointBytes != 7 || !ot.Job.CheckpointAt.Equal(c.Now()) {
		t.Errorf("job %+v: want CheckpointBytes 7 and CheckpointAt %v", ot.Job, c.Now())
	}
}
