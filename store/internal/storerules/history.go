package storerules

import (
	"time"

	"github.com/taskwire/taskwire/backend"
)

// History is what a database store keeps of a task's history (the
// console's timeline), in two parts, so that the common life of a task —
// created, claimed once, completed — costs no event rows:
//
//   - Rows, the steps recorded as rows, in the order they were written:
//     everything except the three steps below, and those of them that an
//     earlier version of the store (or a pruned job) recorded as rows;
//   - the steps the task and job rows already hold: the creation time,
//     the claim the job row names (attempt, worker, time), and the
//     completion (time, message, attempt).
//
// A claim is recorded as a row only once a later claim replaces it in
// the job row, so claimed rows are written after the steps of their
// attempt; MergeHistory puts every claim back before them.
type History struct {
	// Rows are the recorded steps in write order: at most
	// backend.MaxTaskEvents, the newest.
	Rows []backend.TaskEvent
	// Created is the task's creation time.
	Created time.Time
	// Claim is the claim the job row names, or nil: no claim, no job row,
	// or one that the row cannot attribute.
	Claim *backend.TaskEvent
	// Completed is the completion the task row shows, or nil when the
	// task has not completed.
	Completed *backend.TaskEvent
}

// MergeHistory returns the task's steps in the order they happened, at
// most backend.MaxTaskEvents, the newest: the creation first, every claim
// right before the first other step of its attempt (or of a later one),
// the completion last. A step the rows already hold is not added again.
// Within an attempt, rows keep their write order.
func MergeHistory(h History) []backend.TaskEvent {
	var claims, steps []backend.TaskEvent
	hasCreated, hasEnd := false, false
	for _, e := range h.Rows {
		switch e.Kind {
		case backend.EventClaimed:
			claims = append(claims, e)
			continue
		case backend.EventCreated:
			hasCreated = true
		case backend.EventCompleted, backend.EventFailed, backend.EventCancelled:
			hasEnd = true
		}
		steps = append(steps, e)
	}
	if c := h.Claim; c != nil && !hasClaim(claims, c.Attempt) {
		claims = append(claims, *c)
	}
	sortClaims(claims)
	out := make([]backend.TaskEvent, 0, len(h.Rows)+3)
	if !hasCreated {
		out = append(out, backend.TaskEvent{At: h.Created, Kind: backend.EventCreated})
	}
	for _, e := range steps {
		// The created step precedes every claim; an operator's retried
		// step of an older version carries attempt 0 and ends a history.
		for len(claims) > 0 && e.Kind != backend.EventCreated && e.Kind != backend.EventRetried &&
			e.Attempt >= claims[0].Attempt {
			out = append(out, claims[0])
			claims = claims[1:]
		}
		out = append(out, e)
	}
	if c := h.Completed; c != nil && !hasEnd {
		out = append(out, claims...)
		claims = nil
		out = append(out, *c)
	}
	out = append(out, claims...)
	if n := len(out) - backend.MaxTaskEvents; n > 0 {
		out = out[n:]
	}
	return out
}

func hasClaim(claims []backend.TaskEvent, attempt int64) bool {
	for _, c := range claims {
		if c.Attempt == attempt {
			return true
		}
	}
	return false
}

// sortClaims orders claims by attempt, keeping the first of equal ones
// (an insertion sort: a task has few claims, nearly in order).
func sortClaims(c []backend.TaskEvent) {
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j].Attempt < c[j-1].Attempt; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}
