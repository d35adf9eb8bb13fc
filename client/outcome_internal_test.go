package client

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
)

// TestUpdateOutcome maps every terminal state of an update to Wait's
// outcome, and refuses a state that is not terminal.
func TestUpdateOutcome(t *testing.T) {
	task := func(s mcp.TaskStatus) *mcp.DetailedTask {
		return &mcp.DetailedTask{TaskInfo: mcp.TaskInfo{TaskID: "t1", Status: s, StatusMessage: "m"}}
	}
	completed := task(mcp.TaskCompleted)
	completed.Result = json.RawMessage(`{"content":[],"isError":true}`)
	failed := task(mcp.TaskFailed)
	failed.Error = &mcp.Error{Code: -32000, Message: "boom"}
	for _, tc := range []struct {
		name    string
		u       Update
		isError bool
		check   func(error) bool
	}{
		{"completed with isError", updateOf(completed), true, func(err error) bool { return err == nil }},
		{"failed", updateOf(failed), false, func(err error) bool {
			var f *TaskFailedError
			return errors.As(err, &f) && f.Err.Code == -32000 && f.Err.Message == "boom" && f.TaskID == "t1"
		}},
		{"cancelled", updateOf(task(mcp.TaskCancelled)), false, func(err error) bool {
			var c *TaskCancelledError
			return errors.As(err, &c) && errors.Is(err, ErrTaskCancelled) && c.StatusMessage == "m"
		}},
		{"working", updateOf(task(mcp.TaskWorking)), false, func(err error) bool {
			var p *ProtocolError
			return errors.As(err, &p)
		}},
		{"empty", Update{}, false, func(err error) bool {
			var p *ProtocolError
			return errors.As(err, &p)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.u.Outcome()
			if !tc.check(err) {
				t.Fatalf("Outcome error %v", err)
			}
			if got := res != nil && res.IsError; got != tc.isError {
				t.Errorf("result %+v, want isError %v", res, tc.isError)
			}
			if err == nil && res == nil {
				t.Error("no result and no error")
			}
			if diff := cmp.Diff(err != nil, res == nil); diff != "" {
				t.Errorf("exactly one of result and error (-err +nil result):\n%s", diff)
			}
		})
	}
}
