package worker

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

type greetOut struct {
	Greeting string `json:"greeting"`
}

const nameSchema = `{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`

// askName asks for key's name and returns the accepted value.
func askName(ctx context.Context, job *Job, key string) (string, error) {
	raw, err := job.Ask(ctx, key, mcp.NewElicitFormRequest("Your name?", json.RawMessage(nameSchema)))
	if err != nil {
		return "", err
	}
	var r mcp.ElicitResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return "", Permanent(err)
	}
	name, _ := r.Content["name"].(string)
	return name, nil
}

func TestAskRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		runs := 0
		var attempts, rounds []int64 // Job.Attempt and Job.InputRounds of each run
		err := AddHandler(h.rt, "greet", func(ctx context.Context, job *Job, in struct{}) (greetOut, error) {
			runs++
			attempts, rounds = append(attempts, job.Attempt()), append(rounds, int64(job.InputRounds()))
			name, err := askName(ctx, job, "name")
			if err != nil {
				return greetOut{}, err
			}
			return greetOut{Greeting: "Hello, " + name}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "greet", `{}`, "", task.InputElicitationForm), 3)
		h.start()

		j := h.waitStatus(t, id, task.InputRequired)
		if len(j.pending) != 1 || j.pending["name"] == nil || j.pending["name"].Method != mcp.MethodElicitationCreate {
			t.Fatalf("pending = %v", j.pending)
		}
		if j.state != memory.JobAwaitingInput || j.failures != 0 || j.message != msgWaitingInput {
			t.Errorf("state %s failures %d message %q", j.state, j.failures, j.message)
		}
		if n := h.metrics.transition("greet", TransitionInputRequested); n != 1 {
			t.Errorf("input_requested = %d", n)
		}

		h.answer(t, id, "name", `{"action":"accept","content":{"name":"Ada"}}`)
		j = h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if string(j.result.StructuredContent) != `{"greeting":"Hello, Ada"}` {
			t.Errorf("result = %s", j.result.StructuredContent)
		}
		if runs != 2 || j.attempt != 2 || j.failures != 0 {
			t.Errorf("runs %d attempt %d failures %d", runs, j.attempt, j.failures)
		}
		// The run that resumes after the answer continues the first
		// attempt: an input round is not an attempt.
		if diff := cmp.Diff([]int64{1, 1}, attempts); diff != "" {
			t.Errorf("Job.Attempt of each run (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]int64{0, 1}, rounds); diff != "" {
			t.Errorf("Job.InputRounds of each run (-want +got):\n%s", diff)
		}
		if n := h.metrics.failure("greet", FailureHandlerError); n != 0 {
			t.Errorf("parking counted as a failure")
		}
	})
}

func TestAskSeveralKeysAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		err := AddHandler(h.rt, "pair", func(ctx context.Context, job *Job, in struct{}) (greetOut, error) {
			a, errA := askName(ctx, job, "first")
			b, errB := askName(ctx, job, "second")
			// Asking the same key again with the same request is allowed.
			_, errA2 := askName(ctx, job, "first")
			if err := errors.Join(errA, errB, errA2); err != nil {
				return greetOut{}, err
			}
			return greetOut{Greeting: a + " & " + b}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "pair", `{}`, "", task.InputElicitationForm), 3)
		h.start()
		j := h.waitStatus(t, id, task.InputRequired)
		if len(j.pending) != 2 {
			t.Fatalf("pending = %v, want both keys in one request", j.pending)
		}
		h.answer(t, id, "first", `{"action":"accept","content":{"name":"Ada"}}`)
		synctest.Wait()
		if j := h.job(t, id); j.state != memory.JobAwaitingInput {
			t.Fatalf("state %s after a partial answer", j.state)
		}
		h.answer(t, id, "second", `{"action":"accept","content":{"name":"Grace"}}`)
		j = h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if string(j.result.StructuredContent) != `{"greeting":"Ada \u0026 Grace"}` {
			t.Errorf("result = %s", j.result.StructuredContent)
		}
		if diff := h.store.writeLog(); len(diff) != 2 || diff[0] != "RequestInput" || diff[1] != "Complete" {
			t.Errorf("writes = %v", diff)
		}
	})
}

func TestAskMisuseFailsWithoutRetry(t *testing.T) {
	for _, tc := range []struct {
		name    string
		declare []string
		handler RawHandler
		setup   func(h *harness)
	}{
		{
			name: "undeclared input kind",
			handler: func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
				_, err := askName(ctx, job, "name")
				return nil, err
			},
		},
		{
			name:    "empty key",
			declare: []string{task.InputElicitationForm},
			handler: func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
				_, err := askName(ctx, job, "")
				return nil, err
			},
		},
		{
			name:    "same key, other request",
			declare: []string{task.InputElicitationForm},
			handler: func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
				_, _ = askName(ctx, job, "k")
				_, err := job.Ask(ctx, "k", mcp.NewElicitFormRequest("Other?", json.RawMessage(nameSchema)))
				return nil, err
			},
		},
		{
			name:    "ErrInputPending without Ask",
			declare: []string{task.InputElicitationForm},
			handler: func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
				return nil, ErrInputPending
			},
		},
		{
			name:    "key reused",
			declare: []string{task.InputElicitationForm},
			handler: func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
				_, err := askName(ctx, job, "used")
				return nil, err
			},
			// The store reports the key used before (no run of a correct
			// store can reach that: a key that was asked and not answered
			// keeps the job parked).
			setup: func(h *harness) { h.store.setRequestInputErr(backend.ErrKeyReused) },
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				if err := h.rt.AddRawHandler("ask", tc.handler); err != nil {
					t.Fatal(err)
				}
				id := h.enqueue(t, testOrigin(t, "ask", `{}`, "", tc.declare...), 5)
				if tc.setup != nil {
					tc.setup(h)
				}
				h.start()
				j := h.waitStatus(t, id, task.Failed)
				h.stop(t)
				if j.rpcErr.Code != mcp.CodeInternalError || j.rpcErr.Message != msgTaskFailed || j.attempt != 1 {
					t.Errorf("error %v after %d attempts", j.rpcErr, j.attempt)
				}
				if n := h.metrics.failure("ask", FailureInvalidResult); n != 1 {
					t.Errorf("invalid_result failures = %d", n)
				}
			})
		})
	}
}
