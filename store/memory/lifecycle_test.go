package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

func TestTerminalStatesAreImmutable(t *testing.T) {
	t.Parallel()
	toolError := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "bad input"}}}
	rpcErr := &mcp.Error{Code: -32603, Message: "Internal error", Data: json.RawMessage(`{"retry":false}`)}
	tests := []struct {
		name       string
		fromInput  bool // finish while input is outstanding
		finish     func(m *memory.Manager, id string) (task.Task, error)
		wantStatus task.Status
	}{
		{"complete", false, func(m *memory.Manager, id string) (task.Task, error) {
			return m.Complete(id, textResult("done"), "done")
		}, task.Completed},
		{"complete with a tool error", false, func(m *memory.Manager, id string) (task.Task, error) {
			return m.Complete(id, toolError, "")
		}, task.Completed},
		{"fail", false, func(m *memory.Manager, id string) (task.Task, error) {
			return m.Fail(id, rpcErr, "failed")
		}, task.Failed},
		{"cancel", false, func(m *memory.Manager, id string) (task.Task, error) {
			return m.Cancel(id, "stopped")
		}, task.Cancelled},
		{"complete while input is outstanding", true, func(m *memory.Manager, id string) (task.Task, error) {
			return m.Complete(id, textResult("done"), "")
		}, task.Completed},
		{"cancel while input is outstanding", true, func(m *memory.Manager, id string) (task.Task, error) {
			return m.Cancel(id, "")
		}, task.Cancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m, c := newManager(t, memory.Options{})
			ctx := context.Background()
			id := create(t, m).ID()
			if tt.fromInput {
				if _, err := m.RequestInput(id, mcp.InputRequests{"a": formRequest()}, ""); err != nil {
					t.Fatal(err)
				}
			}
			c.Advance(time.Second)
			done, err := tt.finish(m, id)
			if err != nil {
				t.Fatalf("finishing = %v", err)
			}
			if done.Status() != tt.wantStatus || len(done.InputRequests()) != 0 {
				t.Fatalf("finished task = %s with %d input requests", done.Status(), len(done.InputRequests()))
			}
			want := view(done)
			h := subscribe(t, m)
			c.Advance(time.Second)

			for op, err := range terminalOps(m, id) {
				if !errors.Is(err, memory.ErrTerminal) {
					t.Errorf("%s() = %v, want ErrTerminal", op, err)
				}
			}
			if err := m.UpdateTask(ctx, update(id, mcp.InputResponses{"a": acceptForm, "late": acceptForm})); err != nil {
				t.Errorf("UpdateTask() = %v", err)
			}
			if err := m.RequestCancel(ctx, rc(id)); err != nil {
				t.Errorf("RequestCancel() = %v", err)
			}
			if err := m.RequestCancel(ctx, rc(id)); err != nil {
				t.Errorf("second RequestCancel() = %v", err)
			}
			if diff := cmp.Diff(want, view(find(t, m, id))); diff != "" {
				t.Errorf("terminal task changed (-want +got):\n%s", diff)
			}
			if got, _ := m.TakeInputResponses(id); len(got) != 0 {
				t.Errorf("a terminal task accepted answers: %s", got)
			}
			if ids, _ := h.take(); len(ids) != 0 {
				t.Errorf("rejected transitions published %q", ids)
			}
		})
	}
}

func TestWorkerTransitionsKeepOriginAndTimes(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{TTL: 10 * time.Minute, PollInterval: 500 * time.Millisecond})
	ctx := context.Background()
	created := create(t, m)
	id := created.ID()
	res := &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"n":3.50}`)}
	steps := []struct {
		name  string
		clock time.Time // the clock when the step runs
		run   func() (task.Task, error)
		// want fills in the members the step sets on a copy of the
		// previous snapshot.
		want           func(v *snapshotView)
		wantLastUpdate time.Time
	}{
		{"MarkWorking", t0.Add(time.Second), func() (task.Task, error) { return m.MarkWorking(id, "step 1") },
			func(v *snapshotView) { v.StatusMessage = "step 1" }, t0.Add(time.Second)},
		{"RequestInput with the clock stepped back", t0.Add(-time.Hour), func() (task.Task, error) {
			return m.RequestInput(id, mcp.InputRequests{"a": formRequest()}, "step 2")
		}, func(v *snapshotView) {
			v.Status, v.StatusMessage, v.InputRequests = string(task.InputRequired), "step 2", mcp.InputRequests{"a": formRequest()}
		}, t0.Add(time.Second)},
		{"UpdateTask with the clock stepped back", t0.Add(-time.Minute), func() (task.Task, error) {
			err := m.UpdateTask(ctx, update(id, mcp.InputResponses{"a": acceptForm}))
			tk, _ := m.Find(id)
			return tk, err
		}, func(v *snapshotView) { v.Status, v.StatusMessage, v.InputRequests = string(task.Working), "", nil }, t0.Add(time.Second)},
		{"MarkWorking at the same instant", t0.Add(time.Second), func() (task.Task, error) {
			if _, err := m.TakeInputResponses(id); err != nil {
				return task.Task{}, err
			}
			return m.MarkWorking(id, "step 4")
		}, func(v *snapshotView) { v.StatusMessage = "step 4" }, t0.Add(time.Second)},
		{"Complete", t0.Add(5*time.Second + 123456789), func() (task.Task, error) { return m.Complete(id, res, "done") },
			func(v *snapshotView) { v.Status, v.StatusMessage, v.Result = string(task.Completed), "done", res },
			t0.Add(5*time.Second + 123456789)},
	}
	prev := view(created)
	for _, s := range steps {
		c.Set(s.clock)
		got, err := s.run()
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		want := prev
		s.want(&want)
		want.LastUpdatedAt = s.wantLastUpdate
		if diff := cmp.Diff(want, view(got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", s.name, diff)
		}
		if !got.Origin().Equal(created.Origin()) || !got.CreatedAt().Equal(t0) {
			t.Errorf("%s: origin or creation time changed", s.name)
		}
		if got.LastUpdatedAt().Before(prev.LastUpdatedAt) {
			t.Errorf("%s: lastUpdatedAt went back from %v to %v", s.name, prev.LastUpdatedAt, got.LastUpdatedAt())
		}
		if diff := cmp.Diff(view(got), view(find(t, m, id))); diff != "" {
			t.Errorf("%s: returned snapshot differs from the stored one (-returned +stored):\n%s", s.name, diff)
		}
		prev = view(got)
	}
}

func TestRequestCancel(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{})
	ctx := context.Background()
	tk := create(t, m)
	id := tk.ID()
	c.Advance(time.Second)

	for i := range 3 { // idempotent
		if err := m.RequestCancel(ctx, rc(id)); err != nil {
			t.Fatalf("RequestCancel #%d = %v", i+1, err)
		}
		if req, err := m.CancelRequested(id); err != nil || !req {
			t.Errorf("CancelRequested after RequestCancel #%d = %t, %v", i+1, req, err)
		}
		// Intent only: the snapshot is unchanged.
		if diff := cmp.Diff(view(tk), view(find(t, m, id))); diff != "" {
			t.Errorf("RequestCancel changed the task (-before +after):\n%s", diff)
		}
	}
	// Cooperative: the worker may still finish, and completion wins.
	done, err := m.Complete(id, textResult("finished anyway"), "")
	if err != nil || done.Status() != task.Completed {
		t.Fatalf("Complete after a cancellation request = %v, %v", done, err)
	}
	if _, err := m.Cancel(id, ""); !errors.Is(err, memory.ErrTerminal) {
		t.Errorf("Cancel after Complete = %v, want ErrTerminal", err)
	}

	// A worker that honours the intent cancels.
	other := create(t, m).ID()
	if err := m.RequestCancel(ctx, rc(other)); err != nil {
		t.Fatal(err)
	}
	if req, _ := m.CancelRequested(other); !req {
		t.Fatal("intent not recorded")
	}
	if got, err := m.Cancel(other, "cancelled by the client"); err != nil || got.Status() != task.Cancelled {
		t.Errorf("Cancel = %v, %v", got, err)
	}

	if _, err := m.CancelRequested("00000000-0000-4000-8000-000000000000"); err != task.ErrNotFound {
		t.Errorf("CancelRequested(unknown) = %v", err)
	}
}

// TestConcurrentTerminalTransitions races Complete, Fail and Cancel on many
// tasks, with reads, updates and cancellation requests alongside: exactly
// one transition per task wins and the stored state is the winner's.
func TestConcurrentTerminalTransitions(t *testing.T) {
	t.Parallel()
	const tasks, racersPerKind = 24, 4
	m, _ := newManager(t, memory.Options{})
	ctx := context.Background()
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = create(t, m).ID()
		if i%2 == 0 { // half of them wait for input while the race runs
			if _, err := m.RequestInput(ids[i], mcp.InputRequests{"a": formRequest()}, ""); err != nil {
				t.Fatal(err)
			}
		}
	}
	type outcome struct {
		status  task.Status
		message string
		snap    task.Task
		err     error
	}
	results := make([][]outcome, tasks)
	var mu sync.Mutex
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, id := range ids {
		for r := range racersPerKind {
			for _, kind := range []task.Status{task.Completed, task.Failed, task.Cancelled} {
				wg.Go(func() {
					<-start
					msg := fmt.Sprintf("%s by racer %d", kind, r)
					var snap task.Task
					var err error
					switch kind {
					case task.Completed:
						snap, err = m.Complete(id, textResult(msg), msg)
					case task.Failed:
						snap, err = m.Fail(id, mcp.NewError(-32603, msg), msg)
					case task.Cancelled:
						snap, err = m.Cancel(id, msg)
					}
					mu.Lock()
					results[i] = append(results[i], outcome{kind, msg, snap, err})
					mu.Unlock()
				})
			}
		}
		wg.Go(func() { // noise: reads, answers, cancellation requests, non-terminal transitions
			<-start
			for range 5 {
				if _, found, err := m.FindTask(ctx, rc(id)); !found || err != nil {
					t.Errorf("FindTask during the race = %t, %v", found, err)
				}
				if err := m.UpdateTask(ctx, update(id, mcp.InputResponses{"a": acceptForm})); err != nil {
					t.Errorf("UpdateTask during the race = %v", err)
				}
				if err := m.RequestCancel(ctx, rc(id)); err != nil {
					t.Errorf("RequestCancel during the race = %v", err)
				}
				if _, err := m.MarkWorking(id, "noise"); err != nil && !errors.Is(err, memory.ErrTerminal) {
					t.Errorf("MarkWorking during the race = %v", err)
				}
			}
		})
	}
	close(start)
	wg.Wait()

	for i, id := range ids {
		var winners []outcome
		for _, o := range results[i] {
			switch {
			case o.err == nil:
				winners = append(winners, o)
			case !errors.Is(o.err, memory.ErrTerminal):
				t.Errorf("task %d: losing %s = %v, want ErrTerminal", i, o.status, o.err)
			}
		}
		if len(results[i]) != 3*racersPerKind || len(winners) != 1 {
			t.Errorf("task %d: %d of %d terminal transitions succeeded, want exactly 1", i, len(winners), len(results[i]))
			continue
		}
		w := winners[0]
		final := find(t, m, id)
		if final.Status() != w.status || final.StatusMessage() != w.message {
			t.Errorf("task %d: final state %s %q, winner %s %q", i, final.Status(), final.StatusMessage(), w.status, w.message)
		}
		if diff := cmp.Diff(view(w.snap), view(final)); diff != "" {
			t.Errorf("task %d: stored state differs from the winner's snapshot (-winner +stored):\n%s", i, diff)
		}
		if len(final.InputRequests()) != 0 {
			t.Errorf("task %d: a terminal task keeps input requests", i)
		}
	}
}
