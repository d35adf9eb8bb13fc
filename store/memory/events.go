package memory

import (
	"strconv"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// before is what observe compares a changed entry with: the snapshot, the
// job and the cancel intent before the change.
type before struct {
	snap   task.Task
	job    job
	cancel bool
}

// mark captures e before a change.
func (e *entry) mark() before {
	b := before{snap: e.snap, cancel: e.cancelRequested}
	if e.job != nil {
		b.job = *e.job
	}
	return b
}

// observe records the history events of the change from b to e's current
// state at now, the same steps the durable stores' triggers record, with
// the failure category the change set on the job (which it then clears).
func (e *entry) observe(b before, now time.Time) {
	var attempt int64
	var category backend.FailureCategory
	if j := e.job; j != nil {
		attempt, category = j.attempt, j.category
		j.category = ""
		switch {
		case j.attempt > b.job.attempt:
			e.record(backend.TaskEvent{At: now, Kind: backend.EventClaimed, Attempt: attempt, Worker: j.worker})
		case j.failures > b.job.failures:
			ev := backend.TaskEvent{At: now, Kind: backend.EventRetry, Attempt: attempt, Worker: b.job.worker,
				Message: "failure " + itoa(j.failures) + " of " + itoa(j.maxAttempts), Category: category}
			if j.state == jobAvailable {
				ev.RunAt = j.runAt
			}
			e.record(ev)
		case j.interrupted > b.job.interrupted:
			e.record(backend.TaskEvent{At: now, Kind: backend.EventLeaseLost, Attempt: attempt, Worker: b.job.worker,
				Message: "interrupted run " + itoa(j.interrupted)})
		case b.job.state == jobRunning && j.state == jobAvailable:
			e.record(backend.TaskEvent{At: now, Kind: backend.EventReleased, Attempt: attempt, Worker: b.job.worker})
		case j.saved > 0:
			e.record(backend.TaskEvent{At: now, Kind: backend.EventCheckpoint, Attempt: attempt, Worker: j.worker,
				Message: backend.CheckpointMessage(j.saved)})
		}
		j.saved = 0
	}
	s, old := e.snap, b.snap
	switch {
	case s.Status() != old.Status():
		kind := backend.TaskEventKind(s.Status())
		if s.Status() == task.Working {
			kind = backend.EventInputAnswered
		}
		ev := backend.TaskEvent{At: s.LastUpdatedAt(), Kind: kind, Attempt: attempt, Message: s.StatusMessage()}
		if kind == backend.EventFailed {
			ev.Category = category
		}
		e.record(ev)
	case s.Status() == task.Working && (s.StatusMessage() != old.StatusMessage() || !sameProgress(s, old)):
		e.record(backend.TaskEvent{At: s.LastUpdatedAt(), Kind: backend.EventProgress, Attempt: attempt,
			Message: s.StatusMessage()})
	}
	if e.cancelRequested && !b.cancel {
		e.record(backend.TaskEvent{At: now, Kind: backend.EventCancelRequested, Attempt: attempt})
	}
}

// record appends ev to e's history, keeping the newest
// backend.MaxTaskEvents.
func (e *entry) record(ev backend.TaskEvent) {
	if len(e.events) >= backend.MaxTaskEvents {
		e.events = append(e.events[:0], e.events[len(e.events)-backend.MaxTaskEvents+1:]...)
	}
	ev.At = ev.At.UTC()
	if !ev.RunAt.IsZero() {
		ev.RunAt = ev.RunAt.UTC()
	}
	e.events = append(e.events, ev)
}

func sameProgress(a, b task.Task) bool {
	p, okp := a.Progress()
	q, okq := b.Progress()
	return okp == okq && p == q
}

func itoa(n int) string { return strconv.Itoa(n) }
