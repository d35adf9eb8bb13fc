// Package storerules holds the rules every backend.Store of this module
// applies to what it is asked to keep, so that store/memory, store/sqlite
// and store/postgres refuse the same values with the same errors: text a
// store keeps (CheckText), progress reports (CheckProgress), input
// requests (CheckRequests), completions (CheckCompletion), the options of
// a creation resolved against a backend's defaults (ResolveEnqueue,
// ResolveBatch) and the idempotency comparison of origins (SameArguments).
// The error of a task whose job used its attempts is
// backend.ExhaustedError.
//
// The errors carry no prefix: each backend wraps them with its own name.
// They name the field or option at fault, never the bytes, which may be a
// principal's.
package storerules

import (
	"errors"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// SameArguments reports whether two origins carry the same tool arguments
// for idempotency purposes: the same JSON value, whatever the white space,
// member order or string escapes of their texts (task.Origin.SameArguments,
// the comparison the server applies to the task a store returns). Number
// spellings still count, so 1 and 1.0 are different arguments.
func SameArguments(a, b task.Origin) bool {
	return a.SameArguments(b)
}

// CheckRequests checks what a store needs of input requests: at least
// one, each with a non-empty key that is storable text (see CheckText), a
// value and a method. Workers validate the rest against the origin with
// task.Validator before calling the store.
func CheckRequests(reqs mcp.InputRequests) error {
	if len(reqs) == 0 {
		return errors.New("at least one input request is required")
	}
	for k, r := range reqs {
		if k == "" || r == nil || r.Method == "" {
			return errors.New("input requests need a key and a method")
		}
		if err := CheckText("input request key", k); err != nil {
			return err
		}
	}
	return nil
}

// CheckCompletion checks what a store keeps of a completion besides its
// result: its message is storable text (CheckMessage), and its progress
// numbers, when present, are finite and not negative
// (backend.ErrInvalidProgress), and its checkpoint, when present, passes
// CheckCheckpoint (backend.ErrInvalidCheckpoint). A store checks every item of a batch
// before writing anything.
func CheckCompletion(c backend.Completion) error {
	if err := CheckMessage(c.Message); err != nil {
		return err
	}
	if c.Checkpoint != nil {
		if err := CheckCheckpoint(c.Checkpoint); err != nil {
			return err
		}
	}
	return checkNumbers(c.Progress)
}
