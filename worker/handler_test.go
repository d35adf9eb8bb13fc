package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

type sumIn struct {
	A int `json:"a"`
	B int `json:"b"`
}

type sumOut struct {
	Sum int `json:"sum"`
}

const sumSchema = `{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"]}`

func TestTypedSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		var got *Job
		err := AddHandler(h.rt, "sum", func(ctx context.Context, job *Job, in sumIn) (sumOut, error) {
			got = job
			return sumOut{Sum: in.A + in.B}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "sum", `{"a":1,"b":2}`, sumSchema), 3)
		h.start()
		j := h.waitStatus(t, id, task.Completed)
		h.stop(t)

		if got.TaskID() != id || got.Kind() != "sum" || got.Attempt() != 1 || got.Failures() != 0 {
			t.Errorf("Job = %s %s %d %d", got.TaskID(), got.Kind(), got.Attempt(), got.Failures())
		}
		if string(j.result.StructuredContent) != `{"sum":3}` {
			t.Errorf("structuredContent = %s", j.result.StructuredContent)
		}
		want := []mcp.Content{&mcp.TextContent{Text: `{"sum":3}`}}
		if diff := cmp.Diff(want, j.result.Content); diff != "" {
			t.Errorf("content (-want +got):\n%s", diff)
		}
		if j.result.IsError {
			t.Error("isError set")
		}
		if n := h.metrics.transition("sum", TransitionCompleted); n != 1 {
			t.Errorf("completed = %d", n)
		}
		if n := h.metrics.transition("sum", TransitionClaimed); n != 1 {
			t.Errorf("claimed = %d", n)
		}
	})
}

func TestRawHandlerResultIsValidated(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		err := h.rt.AddRawHandler("raw", func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
			if string(job.Arguments()) != `{"x":1}` {
				return nil, Permanent(errors.New("unexpected arguments"))
			}
			return &mcp.CallToolResult{StructuredContent: []byte(`{"sum":7}`)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// The origin mirrors structured output: the validated result, with
		// the mirror added, is what gets stored.
		p := testOrigin(t, "raw", `{"x":1}`, sumSchema).Params()
		p.MirrorStructured = true
		o, err := task.NewOrigin(p)
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, o, 3)
		h.start()
		j := h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if len(j.result.Content) != 1 {
			t.Fatalf("content = %v", j.result.Content)
		}
		if tc, ok := j.result.Content[0].(*mcp.TextContent); !ok || tc.Text != `{"sum":7}` {
			t.Errorf("content = %#v", j.result.Content[0])
		}
	})
}

func TestInvalidResultFailsWithoutRetry(t *testing.T) {
	for name, h := range map[string]RawHandler{
		"schema mismatch": func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{StructuredContent: []byte(`{"sum":"three"}`)}, nil
		},
		"nil result": func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
			return nil, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				hs := newHarness(t, Options{})
				if err := hs.rt.AddRawHandler("sum", h); err != nil {
					t.Fatal(err)
				}
				id := hs.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 5)
				hs.start()
				j := hs.waitStatus(t, id, task.Failed)
				hs.stop(t)
				want := &mcp.Error{Code: -32603, Message: "The task produced an invalid result."}
				if diff := cmp.Diff(want, j.rpcErr); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if j.attempt != 1 || j.failures != 0 {
					t.Errorf("attempt %d failures %d, want one run and no retry", j.attempt, j.failures)
				}
				if n := hs.metrics.failure("sum", FailureInvalidResult); n != 1 {
					t.Errorf("invalid_result failures = %d", n)
				}
			})
		})
	}
}

func TestTypedOutputThatCannotBeEncoded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		err := AddHandler(h.rt, "chan", func(ctx context.Context, job *Job, in struct{}) (chan int, error) {
			return make(chan int), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "chan", `{}`, ""), 5)
		h.start()
		j := h.waitStatus(t, id, task.Failed)
		h.stop(t)
		if j.rpcErr.Message != msgInvalidResult || j.attempt != 1 {
			t.Errorf("error %v after %d attempts", j.rpcErr, j.attempt)
		}
	})
}

func TestArgumentsThatDoNotDecodeAreAToolError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		ran := false
		err := AddHandler(h.rt, "sum", func(ctx context.Context, job *Job, in sumIn) (sumOut, error) {
			ran = true
			return sumOut{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "sum", `{"a":"one"}`, sumSchema), 5)
		h.start()
		j := h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if ran || !j.result.IsError {
			t.Errorf("ran=%t isError=%t", ran, j.result.IsError)
		}
	})
}

func TestRetryWithBackoffThenFail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var backoffs []int
		h := newHarness(t, Options{Backoff: func(n int) time.Duration {
			backoffs = append(backoffs, n)
			return time.Duration(n) * 10 * time.Second
		}})
		err := h.rt.AddRawHandler("flaky", func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("boom in %s with secret-arg", job.TaskID())
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "flaky", `{"k":"secret-arg"}`, ""), 3)
		h.start()
		j := h.waitStatus(t, id, task.Failed)
		h.stop(t)

		want := &mcp.Error{Code: -32603, Message: "The task failed after repeated attempts."}
		if diff := cmp.Diff(want, j.rpcErr); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
		if j.attempt != 3 || j.failures != 2 {
			t.Errorf("attempt %d failures %d, want 3 and 2", j.attempt, j.failures)
		}
		if diff := cmp.Diff([]int{1, 2}, backoffs); diff != "" {
			t.Errorf("backoff calls (-want +got):\n%s", diff)
		}
		if gap := j.claimTimes[1].Sub(j.claimTimes[0]); gap < 10*time.Second || gap > 11*time.Second {
			t.Errorf("second claim after %v, want the 10s backoff", gap)
		}
		if gap := j.claimTimes[2].Sub(j.claimTimes[1]); gap < 20*time.Second || gap > 21*time.Second {
			t.Errorf("third claim after %v, want the 20s backoff", gap)
		}
		if diff := cmp.Diff([]string{"Retry", "Retry", "Fail"}, h.store.writeLog()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		if n := h.metrics.failure("flaky", FailureHandlerError); n != 3 {
			t.Errorf("handler_error failures = %d", n)
		}
		if n := h.metrics.transition("flaky", TransitionRetried); n != 2 {
			t.Errorf("retried = %d", n)
		}
		// The log says why, without the task ID and the argument the
		// handler wrapped into its error.
		if logs := h.logs.String(); strings.Count(logs, `err="boom in <task> with <argument>"`) != 3 {
			t.Errorf("log lacks the scrubbed error text:\n%s", logs)
		}
		h.checkLogsRedacted(t, "secret-arg")
	})
}

func TestRetryThenSucceed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Backoff: func(int) time.Duration { return time.Second }})
		err := AddHandler(h.rt, "sum", func(ctx context.Context, job *Job, in sumIn) (sumOut, error) {
			if job.Failures() == 0 {
				return sumOut{}, context.DeadlineExceeded
			}
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 3)
		h.start()
		j := h.waitStatus(t, id, task.Completed)
		h.stop(t)
		if j.attempt != 2 {
			t.Errorf("attempt = %d", j.attempt)
		}
		if n := h.metrics.failure("sum", FailureTimeout); n != 1 {
			t.Errorf("timeout failures = %d", n)
		}
	})
}

func TestPermanentFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want *mcp.Error
	}{
		{"Permanent", Permanent(errors.New("disk full at /secret/dir")), &mcp.Error{Code: -32603, Message: "The task failed."}},
		{"mcp.Error", fmt.Errorf("wrapped: %w", mcp.InvalidParams("Unknown city")), &mcp.Error{Code: -32602, Message: "Unknown city"}},
		{"Permanent mcp.Error", Permanent(mcp.NewError(-32000, "Quota exceeded")), &mcp.Error{Code: -32000, Message: "Quota exceeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				err := h.rt.AddRawHandler("p", func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
					return nil, tc.err
				})
				if err != nil {
					t.Fatal(err)
				}
				id := h.enqueue(t, testOrigin(t, "p", `{"dir":"/secret/dir"}`, ""), 5)
				h.start()
				j := h.waitStatus(t, id, task.Failed)
				h.stop(t)
				if diff := cmp.Diff(tc.want, j.rpcErr); diff != "" {
					t.Errorf("error (-want +got):\n%s", diff)
				}
				if j.attempt != 1 {
					t.Errorf("attempt = %d, want no retry", j.attempt)
				}
				if n := h.metrics.failure("p", FailurePermanent); n != 1 {
					t.Errorf("permanent failures = %d", n)
				}
				if logs := h.logs.String(); !strings.Contains(logs, "category=permanent err=") {
					t.Errorf("log lacks the error text:\n%s", logs)
				}
				h.checkLogsRedacted(t, "/secret")
			})
		})
	}
	if Permanent(nil) != nil {
		t.Error("Permanent(nil) != nil")
	}
}

func TestToolErrorCompletesWithIsError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		err := AddHandler(h.rt, "sum", func(ctx context.Context, job *Job, in sumIn) (sumOut, error) {
			return sumOut{}, ToolError("The city was not found.")
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "sum", `{}`, sumSchema), 5)
		h.start()
		j := h.waitStatus(t, id, task.Completed)
		h.stop(t)
		want := &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "The city was not found."}}}
		if diff := cmp.Diff(want, j.result); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if j.attempt != 1 {
			t.Errorf("attempt = %d", j.attempt)
		}
	})
}

func TestPanicIsRecoveredAndRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Backoff: func(int) time.Duration { return time.Second }})
		err := h.rt.AddRawHandler("boom", func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
			panic("secret-panic-value")
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "boom", `{}`, ""), 2)
		h.start()
		j := h.waitStatus(t, id, task.Failed)
		h.stop(t)
		if j.attempt != 2 || j.rpcErr.Message != backend.ExhaustedError().Message {
			t.Errorf("attempt %d error %v", j.attempt, j.rpcErr)
		}
		if n := h.metrics.failure("boom", FailurePanic); n != 2 {
			t.Errorf("panic failures = %d", n)
		}
		h.checkLogsRedacted(t, "secret-panic-value")
	})
}
