package server

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// notifications/tasks/status: after a session creates a task, the node that
// created it follows the task's hints and queues the task's new state on the
// session's GET stream whenever its status or lastUpdatedAt changes, until
// the task ends. The notification is optional in 2025-11-25 and best
// effort here: it goes only to a GET stream open on this node, is dropped
// when that stream's queue is full, and needs a manager that publishes
// hints. Clients keep polling tasks/get, which stays authoritative.

// Bounds of status following.
const (
	maxStatusFollows           = 1024 // tasks followed on this node
	maxStatusFollowsPerSession = 32
	maxStatusFollowsPerOwner   = maxStatusFollows / 4 // of one principal, all its sessions
	maxStatusFollow            = time.Hour            // the longest a task is followed
)

// legacyTaskState is the node-local state of the 2025-11-25 tasks layer: the
// status followers, each a goroutine owned by this state and ended by the
// task's end, maxStatusFollow, the end of its session on this node
// (endSession) or close; and the context that ends every long wait when
// the server closes.
type legacyTaskState struct {
	mu         sync.Mutex
	closed     bool
	follows    int
	perSession map[string]*sessionFollows
	perOwner   map[string]int
	ctx        context.Context // ended by close
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	waits      waitSlots // long waits of tasks/result and inline calls
}

// sessionFollows are the followers of one session: their count and the
// context that ends them with the session.
type sessionFollows struct {
	n      int
	ctx    context.Context
	cancel context.CancelFunc
}

// initLocked creates the state's context on first use.
func (s *legacyTaskState) initLocked() {
	if s.ctx == nil {
		s.ctx, s.cancel = context.WithCancel(context.Background())
		s.perSession = map[string]*sessionFollows{}
		s.perOwner = map[string]int{}
		if s.closed {
			s.cancel()
		}
	}
}

// closing returns a context that ends when the server closes: long waits
// (tasks/result, waiting inline) end with it, leaving their tasks running.
func (s *legacyTaskState) closing() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	return s.ctx
}

// acquire takes a follower slot for a session of owner (tenant and
// principal) and returns the context that ends with the session.
func (s *legacyTaskState) acquire(session, owner string) (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.initLocked()
	sf := s.perSession[session]
	if s.closed || s.follows >= maxStatusFollows || s.perOwner[owner] >= maxStatusFollowsPerOwner ||
		sf != nil && sf.n >= maxStatusFollowsPerSession {
		return nil, false
	}
	if sf == nil {
		sf = &sessionFollows{}
		sf.ctx, sf.cancel = context.WithCancel(s.ctx)
		s.perSession[session] = sf
	}
	s.follows++
	sf.n++
	s.perOwner[owner]++
	s.wg.Add(1)
	return sf.ctx, true
}

// release gives back a slot acquire returned with ctx.
func (s *legacyTaskState) release(ctx context.Context, session, owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.follows--
	if sf := s.perSession[session]; sf != nil && sf.ctx == ctx {
		if sf.n--; sf.n <= 0 {
			sf.cancel()
			delete(s.perSession, session)
		}
	}
	if s.perOwner[owner]--; s.perOwner[owner] <= 0 {
		delete(s.perOwner, owner)
	}
	s.wg.Done()
}

// endSession ends the followers of a session that ended on this node
// (DELETE, expiry found by a lookup, the end of a stdio connection).
func (s *legacyTaskState) endSession(session string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sf := s.perSession[session]; sf != nil {
		sf.cancel()
		delete(s.perSession, session)
	}
}

// close ends every follower and waits for them.
func (s *legacyTaskState) close() {
	s.mu.Lock()
	s.closed = true
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// followStatus starts following a task the session just created; first is
// its state as the creating call returned it. It does nothing when the
// manager publishes no hints, when the task has ended, or when the bounds
// are reached.
func (ep *Endpoint) followStatus(lc *legacyCall, first mcp.LegacyTask) {
	srv := lc.c.srv
	if srv.opts.TaskManager.EventPublisher() == nil || first.Status.Terminal() {
		return
	}
	state := &srv.legacy.tasks
	key := lc.session.rec.Key
	owner := lc.c.id.Tenant + "\x00" + lc.c.id.Principal
	sctx, ok := state.acquire(key, owner)
	if !ok {
		return
	}
	rc := lc.c.requestContext(first.TaskID)
	w := srv.watchTask(first.TaskID)
	w.wake <- struct{}{} // read once at once: a change before the watch began is not missed
	go func() {
		defer state.release(sctx, key, owner)
		defer w.stop()
		ctx, cancel := context.WithTimeout(sctx, maxStatusFollow)
		defer cancel()
		last := changeStamp(first)
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.wake:
			}
			rctx, rcancel := context.WithTimeout(ctx, srv.opts.RequestTimeout)
			t, found, err := srv.opts.TaskManager.FindTask(rctx, rc)
			rcancel()
			if err != nil {
				continue // a later hint reads again
			}
			if !found || t.ID() != first.TaskID {
				return
			}
			lt := legacyTask(t)
			if stamp := changeStamp(lt); stamp != last {
				last = stamp
				if b, err := json.Marshal(lt); err == nil {
					lc.notifySession(mcp.NotificationTasksStatus, b)
				}
			}
			if t.Status().Terminal() {
				return
			}
		}
	}()
}
