package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/taskwire/taskwire/worker"
)

// Ending the 2025-era sessions of upstream tasks.
//
// The task client keeps its session open on Close (a 2025-11-25 server
// binds tasks to it, and a gateway started later resumes it). Each run
// that follows an upstream task to its end (its result read, or the task
// failed, was cancelled, or is unknown to the upstream) tells the task
// caller so (settled); a run that ends otherwise (a shutdown, a lost
// lease, input pending, an upstream that could not be polled) leaves its
// task unsettled, for the run that follows it next, here or in another
// process.
//
// The own session is ended with DELETE on Close when no task this process
// created in it is unsettled. A resumed session holds tasks an earlier
// process created, which runs of this process or of others may still
// follow: no process knows them all. So a resumed session is ended only
// when the upstream itself lists no task of it (tasks/list in that
// session) that is not known to be settled: settled by a run of this
// process, or named settled by the process that created the task (each
// checkpoint carries the IDs of the tasks of its session settled last
// there, recentSettled). A task the upstream no longer lists is lost to
// every run anyway. That check runs when the last run using the session
// releases it after a task of it settled, and on Close; a failed or
// refused tasks/list keeps the session. The check is sound in a fleet
// (a task settled by another process keeps the session open here until
// the upstream forgets it), at the cost of one tasks/list per check.

// maxOpenTasks bounds the unsettled tasks tracked per own session, and
// the settled ones per resumed session; a session with more is kept open.
const maxOpenTasks = 10_000

// maxToldSettled bounds the settled task IDs a checkpoint carries.
const maxToldSettled = 32

// endTimeout bounds the tasks/list and DELETE that end one resumed
// session; closeEndTimeout those of Close, for every session together.
const (
	endTimeout      = 10 * time.Second
	closeEndTimeout = 10 * time.Second
)

// errFollowAgain marks the outcome of a run whose next run follows the
// same upstream task.
var errFollowAgain = errors.New("gateway: the upstream task is followed again")

// errResumedBusy is the error of a run that needs to resume a session
// while Options.MaxResumedSessions are resumed and each is in use.
var errResumedBusy = errors.New("gateway: every resumed upstream session is in use (MaxResumedSessions)")

// settler is a taskCaller that tracks the unsettled tasks of its sessions.
type settler interface {
	// settled records that no run follows t again.
	settled(t upstreamTask)
	// settledIn returns IDs of tasks of the session sid settled last in
	// this process, at most maxToldSettled, for a checkpoint.
	settledIn(sid string) []string
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

// toldSettled returns what a checkpoint of a task of the session sid
// tells of its settled siblings.
func (g *Gateway) toldSettled(sid string) []string {
	if s, ok := g.tasks.(settler); ok && sid != "" {
		return s.settledIn(sid)
	}
	return nil
}

// recentSettled are the IDs of the tasks of one session settled last, in
// the order they settled.
type recentSettled struct {
	sid string
	ids []string
}

func (r *recentSettled) add(sid, id string) {
	if r.sid != sid {
		r.sid, r.ids = sid, nil
	}
	if len(r.ids) == maxToldSettled {
		r.ids = append(r.ids[:0], r.ids[1:]...)
	}
	r.ids = append(r.ids, id)
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
	if own, _ := h.c.Session(); sid != "" && sid == own {
		h.recent.add(sid, t.ID())
	}
	if r := h.resumed[sid]; r != nil {
		r.told([]string{t.ID()})
		r.dirty = true
	}
}

func (h *httpTasks) settledIn(sid string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.recent.sid != sid {
		return nil
	}
	return append([]string(nil), h.recent.ids...)
}

// told records ids as settled tasks of r's session; h.mu is held.
func (r *resumedSession) told(ids []string) {
	for _, id := range ids {
		if r.pinned {
			return
		}
		if len(r.settled) >= maxOpenTasks {
			r.pinned, r.settled = true, nil
			return
		}
		r.settled[id] = struct{}{}
	}
}

// release ends one use of r, the resumed client of the session sid; the
// last use after a task of it settled checks whether to end the session
// (endIfSettled), within endTimeout.
func (h *httpTasks) release(sid string, r *resumedSession) {
	h.mu.Lock()
	h.seq++
	r.used = h.seq
	check := r.users == 1 && r.dirty && !r.pinned && !h.closed
	if !check {
		r.users--
	}
	h.mu.Unlock()
	if !check {
		return
	}
	// The check keeps its use, so that no eviction closes r meanwhile.
	ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
	defer cancel()
	ended := h.endIfSettled(ctx, sid, r)
	h.mu.Lock()
	r.users--
	if ended && h.resumed[sid] == r {
		delete(h.resumed, sid)
	}
	h.mu.Unlock()
}

// endIfSettled ends the resumed session sid with DELETE when the upstream
// lists no task of it that r does not know settled, and reports whether
// it did. A failed tasks/list, or an upstream without one, keeps it; so
// does a DELETE that fails (the session may be gone already).
func (h *httpTasks) endIfSettled(ctx context.Context, sid string, r *resumedSession) bool {
	h.mu.Lock()
	r.dirty = false
	h.mu.Unlock()
	tasks, err := r.c.ListLegacyTasks(ctx)
	if err != nil {
		h.mu.Lock()
		r.dirty = true // checked again at the next release or on Close
		h.mu.Unlock()
		return false
	}
	h.mu.Lock()
	for _, t := range tasks {
		if _, ok := r.settled[t.TaskID]; !ok || r.pinned {
			h.mu.Unlock()
			return false
		}
	}
	h.mu.Unlock()
	return r.c.EndSession() == nil // closes r.c whatever the outcome
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
