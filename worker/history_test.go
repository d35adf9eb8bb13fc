package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// TestHistoryRecordsFailureCategories: the category the runtime computes
// for a failed run reaches the store's history, on the retry event and on
// the failed event of the run that fails the task, and the history holds
// the category only, never the error's text.
func TestHistoryRecordsFailureCategories(t *testing.T) {
	type shape struct {
		Kind     backend.TaskEventKind
		Attempt  int64
		Category backend.FailureCategory
	}
	retried := func(c FailureCategory) []shape {
		return []shape{{backend.EventRetry, 1, c}, {backend.EventFailed, 2, c}}
	}
	for _, tc := range []struct {
		name   string
		schema string
		h      RawHandler
		want   []shape
	}{
		{"handler error", "", func(context.Context, *Job) (*mcp.CallToolResult, error) {
			return nil, errors.New("secret-error-text")
		}, retried(FailureHandlerError)},
		{"timeout", "", func(context.Context, *Job) (*mcp.CallToolResult, error) {
			return nil, fmt.Errorf("secret-error-text: %w", context.DeadlineExceeded)
		}, retried(FailureTimeout)},
		{"panic", "", func(context.Context, *Job) (*mcp.CallToolResult, error) {
			panic("secret-error-text")
		}, retried(FailurePanic)},
		{"permanent", "", func(context.Context, *Job) (*mcp.CallToolResult, error) {
			return nil, Permanent(errors.New("secret-error-text"))
		}, []shape{{backend.EventFailed, 1, FailurePermanent}}},
		{"invalid result", sumSchema, func(context.Context, *Job) (*mcp.CallToolResult, error) {
			return textResult("secret-error-text", false), nil
		}, []shape{{backend.EventFailed, 1, FailureInvalidResult}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Options{Backoff: func(int) time.Duration { return time.Second }})
				if err := h.rt.AddRawHandler("k", tc.h); err != nil {
					t.Fatal(err)
				}
				id := h.enqueue(t, testOrigin(t, "k", `{}`, tc.schema), 2)
				h.start()
				h.waitStatus(t, id, task.Failed)
				h.stop(t)
				ot, err := h.mem.Operator().Task(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				var got []shape
				for _, e := range ot.Events {
					if e.Kind == backend.EventRetry || e.Kind == backend.EventFailed {
						got = append(got, shape{e.Kind, e.Attempt, e.Category})
					}
					if e.Message == "secret-error-text" || string(e.Category) == "secret-error-text" {
						t.Errorf("event %+v carries the error's text", e)
					}
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("history (-want +got):\n%s", d)
				}
			})
		})
	}
}
