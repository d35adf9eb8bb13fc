package server

import (
	"math/rand/v2"
	"time"
)

// Retrying failed lookups. A projection whose lookup fails (a storage
// error, no maintenance slot or no answer within AuthorizationTimeout)
// learned nothing about the task, and for a task that reached a terminal
// state no later hint will come. So the listen looks it up again, a few
// times with backoff, and when every attempt fails it ends gracefully:
// its client reconnects and polls, as after any graceful end, instead of
// missing the change until it happens to reconnect.
//
// The retry state is one entry per accepted task ID (at most
// MaxListenTaskIDs), guarded by the projection lock, and a single timer of
// the listen's own goroutine: no queue grows and no goroutine is started
// per retry. A newer hint for the ID coalesces with a pending retry: it is
// projected at once, and the retry finds a duplicate.

// lookupAttempts is how many consecutive failed lookups of one task a
// listen makes before it ends (the first and three retries).
const lookupAttempts = 4

// retryBase is the backoff before the first retry; it doubles with each
// further one, and a random part of up to half of it is added so that
// listens whose lookups failed together do not retry together.
const retryBase = 250 * time.Millisecond

// lookupRetry is the retry state of one task of a listen.
type lookupRetry struct {
	failures int       // consecutive failed lookups
	due      time.Time // when to look again; zero once queued
}

// retryLater records a failed lookup of id at now. It reports false when
// the task has failed lookupAttempts times in a row: the listen must then
// end. Called under the projection lock.
func (s *subscription) retryLater(id string, now time.Time) bool {
	r := s.retries[id]
	r.failures++
	if r.failures >= lookupAttempts {
		delete(s.retries, id)
		return false
	}
	backoff := retryBase << (r.failures - 1)
	r.due = now.Add(backoff + rand.N(backoff/2))
	if s.retries == nil {
		s.retries = map[string]lookupRetry{}
	}
	s.retries[id] = r
	return true
}

// nextRetry is how long until the earliest pending retry; false when none
// is pending. Called under the projection lock.
func (s *subscription) nextRetry(now time.Time) (time.Duration, bool) {
	var first time.Time
	for _, r := range s.retries {
		if !r.due.IsZero() && (first.IsZero() || r.due.Before(first)) {
			first = r.due
		}
	}
	if first.IsZero() {
		return 0, false
	}
	return max(0, first.Sub(now)), true
}

// queueDueRetries queues the hints of every retry that is due at now, in
// no particular order, and forgets the retries of IDs the listen no
// longer follows. Called under the projection lock.
func (s *subscription) queueDueRetries(now time.Time) {
	for id, r := range s.retries {
		if s.terminal[id] {
			delete(s.retries, id)
			continue
		}
		if r.due.IsZero() || r.due.After(now) {
			continue
		}
		r.due = time.Time{}
		s.retries[id] = r
		s.record(id)
	}
}

// forgetRetries drops the retries of IDs outside keep (a renewal narrowed
// the listen). Called under the projection lock.
func (s *subscription) forgetRetries(keep map[string]bool) {
	for id := range s.retries {
		if !keep[id] {
			delete(s.retries, id)
		}
	}
}
