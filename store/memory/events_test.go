package memory_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// TestEventsFollowCommittedChanges: every committed change publishes the
// task ID once, after the change is readable; failed or ignored operations
// publish nothing; a panicking subscriber affects nobody.
func TestEventsFollowCommittedChanges(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{})
	ctx := context.Background()
	h := subscribe(t, m)
	other := subscribe(t, m)
	m.EventPublisher().Subscribe(func(string) { panic("a broken subscriber") })

	// expect checks that exactly one hint for id arrived and that, when it
	// arrived, Find already returned want.
	expect := func(step string, id string, want task.Task) {
		t.Helper()
		ids, seen := h.take()
		if !cmp.Equal(ids, []string{id}) {
			t.Fatalf("%s: hints = %q, want [%s]", step, ids, id)
		}
		if diff := cmp.Diff(view(want), seen[0]); diff != "" {
			t.Errorf("%s: state visible to the subscriber (-want +got):\n%s", step, diff)
		}
		if ids, _ := other.take(); !cmp.Equal(ids, []string{id}) {
			t.Errorf("%s: second subscriber got %q", step, ids)
		}
	}
	silent := func(step string) {
		t.Helper()
		if ids, _ := h.take(); len(ids) != 0 {
			t.Errorf("%s: published %q", step, ids)
		}
		other.take()
	}
	must := func(tk task.Task, err error) task.Task {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}

	tk := must(m.Create(creation(t, endpoint, tenant)))
	id := tk.ID()
	expect("Create", id, tk)
	c.Advance(time.Second)
	expect("RequestInput", id, must(m.RequestInput(id, mcp.InputRequests{"a": formRequest(), "b": urlRequest()}, "need input")))
	c.Advance(time.Second)
	if err := m.UpdateTask(ctx, update(id, mcp.InputResponses{"a": acceptForm})); err != nil {
		t.Fatal(err)
	}
	expect("partial UpdateTask", id, find(t, m, id))

	if err := m.UpdateTask(ctx, update(id, mcp.InputResponses{"a": acceptForm, "nope": acceptForm, "b": samplingAnswer})); err != nil {
		t.Fatal(err)
	}
	silent("UpdateTask with nothing acceptable")
	if _, err := m.RequestInput(id, mcp.InputRequests{"c": formRequest()}, ""); !errors.Is(err, memory.ErrPendingResponses) {
		t.Fatalf("RequestInput with responses pending = %v", err)
	}
	silent("failed RequestInput")
	if _, err := m.TakeInputResponses(id); err != nil {
		t.Fatal(err)
	}
	silent("TakeInputResponses")
	if _, _, err := m.FindTask(ctx, rc(id)); err != nil {
		t.Fatal(err)
	}
	silent("FindTask")

	c.Advance(time.Second)
	if err := m.UpdateTask(ctx, update(id, mcp.InputResponses{"b": acceptURL})); err != nil {
		t.Fatal(err)
	}
	last := find(t, m, id)
	if last.Status() != task.Working {
		t.Fatalf("status after the last answer = %s", last.Status())
	}
	expect("final UpdateTask", id, last)
	if _, err := m.TakeInputResponses(id); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest()}, ""); !errors.Is(err, memory.ErrKeyReused) {
		t.Fatalf("RequestInput with a used key = %v", err)
	}
	silent("RequestInput with a used key")

	c.Advance(time.Second)
	expect("MarkWorking", id, must(m.MarkWorking(id, "again")))
	c.Advance(time.Second)
	expect("Complete", id, must(m.Complete(id, textResult("done"), "finished")))

	for op, err := range terminalOps(m, id) {
		if !errors.Is(err, memory.ErrTerminal) {
			t.Errorf("%s after Complete = %v, want ErrTerminal", op, err)
		}
	}
	silent("transitions of a terminal task")
	if err := m.UpdateTask(ctx, task.UpdateContext{RequestContext: task.RequestContext{TaskID: id, Endpoint: "admin"}}); err != task.ErrNotFound {
		t.Errorf("unauthorized UpdateTask = %v", err)
	}
	silent("unauthorized UpdateTask")
}

func TestEventPublisherIdentity(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{})
	p := m.EventPublisher()
	if p == nil {
		t.Fatal("EventPublisher() = nil")
	}
	for range 3 {
		if q := m.EventPublisher(); q != p {
			t.Fatal("EventPublisher() returned another value")
		}
	}
	other, _ := newManager(t, memory.Options{})
	if other.EventPublisher() == p {
		t.Error("two managers share a publisher")
	}
	// A subscription made through the value returned earlier sees the
	// manager's later hints.
	var got []string
	p.Subscribe(func(id string) { got = append(got, id) })
	tk := create(t, m)
	create(t, other)
	if !cmp.Equal(got, []string{tk.ID()}) {
		t.Errorf("hints = %q, want [%s]", got, tk.ID())
	}
}
