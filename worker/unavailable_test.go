package worker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// TestFaultOutlastingMaxAttempts: a handler whose database is down for five
// minutes, with the default backoff and a MaxAttempts of 3 (used up in a
// few seconds), completes its task once the database is back when it
// reports the fault with Unavailable; an ordinary error still fails the
// task at MaxAttempts.
func TestFaultOutlastingMaxAttempts(t *testing.T) {
	const fault = 5 * time.Minute
	tests := []struct {
		name       string
		wrap       func(error) error
		status     task.Status
		category   FailureCategory
		atFailures func(int) bool // of the job at the end
	}{
		{"unavailable", Unavailable, task.Completed, FailureUnavailable, func(n int) bool { return n > 3 }},
		{"handler error", func(err error) error { return err }, task.Failed, FailureHandlerError,
			func(n int) bool { return n == 2 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{})
				start := time.Now()
				err := AddHandler(h.rt, "export", func(ctx context.Context, job *Job, in struct{}) (greetOut, error) {
					if time.Since(start) < fault {
						return greetOut{}, tt.wrap(errors.New("dial tcp: connection refused"))
					}
					return greetOut{Greeting: "done"}, nil
				})
				if err != nil {
					t.Fatal(err)
				}
				id := h.enqueue(t, testOrigin(t, "export", `{}`, ""), 3)
				h.start()
				j := h.waitStatus(t, id, tt.status)
				h.stop(t)
				if !tt.atFailures(j.failures) {
					t.Errorf("%d failures recorded", j.failures)
				}
				if n := h.metrics.failure("export", tt.category); n < 3 {
					t.Errorf("%s failures = %d, want at least 3", tt.category, n)
				}
				if tt.status == task.Failed {
					want := &mcp.Error{Code: -32603, Message: "The task failed after repeated attempts."}
					if diff := cmp.Diff(want, j.rpcErr); diff != "" {
						t.Errorf("error (-want +got):\n%s", diff)
					}
				}
			})
		})
	}
}

// TestUnavailableFailsAfterRetryWindow: a fault that never ends fails the
// task at the first failure at least RetryWindow after the first one, and
// not before; the retries between are spaced by the backoff, which
// reaches its 5 min cap.
func TestUnavailableFailsAfterRetryWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = 20 * time.Minute
		h := newHarness(t, Options{RetryWindow: window})
		var runs []time.Time
		err := h.rt.AddRawHandler("export", func(ctx context.Context, job *Job) (*mcp.CallToolResult, error) {
			runs = append(runs, time.Now())
			return nil, Unavailable(errors.New("dial tcp: connection refused"))
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "export", `{}`, ""), 3)
		h.start()
		j := h.waitStatus(t, id, task.Failed)
		h.stop(t)
		if len(runs) < 4 {
			t.Fatalf("%d runs, want more than MaxAttempts (3)", len(runs))
		}
		last, first := runs[len(runs)-1], runs[0]
		if got := last.Sub(first); got < window || got > window+backoffCap+time.Second {
			t.Errorf("failed %v after the first failure, want between %v and %v", got, window, window+backoffCap)
		}
		if got := runs[len(runs)-2].Sub(first); got >= window {
			t.Errorf("a run %v after the first failure was retried, past the %v window", got, window)
		}
		if j.failures != len(runs)-1 {
			t.Errorf("%d failures recorded for %d runs", j.failures, len(runs))
		}
		want := &mcp.Error{Code: -32603, Message: "The task failed after repeated attempts."}
		if diff := cmp.Diff(want, j.rpcErr); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
}
