// Package opsdata holds what both stores share in their reports to
// operations: Ready errors with a short, safe reason (a category that
// names no host, user, password or driver message, which package admin
// reads through the ReadinessReason method), and the job states of
// backend.Gauges.
package opsdata

import (
	"context"
	"errors"

	"github.com/taskwire/taskwire/backend"
)

// Reasons shared by the stores.
const (
	ReasonTimeout  = "store timed out"
	ReasonOutdated = "schema outdated"
	ReasonTooNew   = "schema too new"
)

// Error is a store that is not ready: Reason is safe to show, Err is the
// cause, for logs.
type Error struct {
	Reason string
	Err    error
}

// NotReady returns an *Error with reason and cause.
func NotReady(reason string, err error) error { return &Error{Reason: reason, Err: err} }

// Error returns the reason and the cause's text, for logs.
func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// ReadinessReason returns the reason, which is safe to show.
func (e *Error) ReadinessReason() string { return e.Reason }

// Category returns ReasonTimeout when err is a deadline, else other.
func Category(err error, other string) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return ReasonTimeout
	}
	return other
}

// JobState maps a job row's state, whether its run_at is still ahead and
// whether a run of it failed, to the state it is reported in.
func JobState(state string, later, failed bool) backend.JobState {
	switch {
	case state == "running":
		return backend.JobRunning
	case state == "awaiting_input":
		return backend.JobInputWaiting
	case later && failed:
		return backend.JobRetryWaiting
	case later:
		return backend.JobScheduled
	}
	return backend.JobAvailable
}
