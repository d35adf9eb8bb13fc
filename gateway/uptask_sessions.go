package gateway

import (
	"context"
	"errors"

	"github.com/taskwire/taskwire/worker"
)

// Ending the 2025-era sessions of upstream tasks.
//
// The task client keeps its session open on Close (a 2025-11-25 server
// binds tasks to it, and a gateway started later resumes it). Each run
// that follows an upstream task to its end (its result read, or the task
// failed, was cancelled, or is unknown to the upstream) tells the task
// caller so (settled); on Close the task client's session is ended with
// DELETE when no task this process created in it is unsettled. A run that
// ends otherwise (a shutdown, a lost lease, input pending, an upstream
// that could not be polled) leaves its task unsettled: the session stays
// for the run that follows the task next, here or in another process.
// The sessions resumed from an earlier process are kept as before: that
// process may have created tasks in them that no run here has followed
// yet.

// maxOpenTasks bounds the unsettled tasks tracked per session; a session
// with more is kept open on Close.
const maxOpenTasks = 10_000

// errFollowAgain marks the outcome of a run whose next run follows the
// same upstream task.
var errFollowAgain = errors.New("gateway: the upstream task is followed again")

// settler is a taskCaller that tracks the unsettled tasks of its sessions.
type settler interface {
	// settled records that no run follows t again.
	settled(t upstreamTask)
}

// settleTask tells the task caller, when it tracks them, that the run
// whose context is ctx followed t to an outcome no later run revisits
// (err is the run's outcome).
func (g *Gateway) settleTask(ctx context.Context, t upstreamTask, err error) {
	s, ok := g.tasks.(settler)
	switch {
	case !ok:
		return
	case ctx.Err() != nil && !errors.Is(context.Cause(ctx), worker.ErrCancelRequested):
		return // a shutdown, a lost lease or input pending: followed again
	case errors.Is(err, worker.ErrInputPending), errors.Is(err, errFollowAgain):
		return
	}
	s.settled(t)
}

// created records the task id that this process's client created in the
// session sid; h.mu is held.
func (h *httpTasks) createdLocked(sid, id string) {
	if sid == "" || h.pinned[sid] {
		return
	}
	open := h.open[sid]
	if open == nil {
		open = map[string]struct{}{}
		h.open[sid] = open
	}
	if len(open) >= maxOpenTasks {
		h.pinned[sid] = true
		delete(h.open, sid)
		return
	}
	open[id] = struct{}{}
}

func (h *httpTasks) settled(t upstreamTask) {
	sid, _ := t.Session()
	h.mu.Lock()
	defer h.mu.Unlock()
	if open := h.open[sid]; open != nil {
		delete(open, t.ID())
		if len(open) == 0 {
			delete(h.open, sid)
		}
	}
}

// closeOwn closes the task client, ending its session when no task this
// process created in it is unsettled.
func (h *httpTasks) closeOwn() error {
	sid, _ := h.c.Session()
	h.mu.Lock()
	needed := h.pinned[sid] || len(h.open[sid]) > 0
	h.mu.Unlock()
	if sid != "" && !needed {
		return h.c.EndSession()
	}
	return h.c.Close()
}
