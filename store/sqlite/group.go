package sqlite

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// Group commit.
//
// Every write runs on the one writer connection. A commit costs a fixed
// amount of CPU and rewrites the same hot table and index pages, so callers
// that arrive while a transaction runs are committed together in the next
// one. There is no goroutine of its own: the first caller that finds no
// group running becomes the leader, takes the waiting requests (at most
// maxGroup, in arrival order) and runs them in one BEGIN IMMEDIATE
// transaction, each but the first between SAVEPOINT and RELEASE, so that
// one caller's error is rolled back to its savepoint and undoes nobody
// else's work. It then answers every member, and hands the lead to the
// oldest request still waiting, which runs the next group: each caller
// leads at most one group, so no caller waits on a queue that others keep
// filling.
//
// The first member runs without a savepoint: when it fails, the leader
// rolls the transaction back (nothing else is in it yet) and runs the
// rest as a new group. This matters for the large writes of the worker
// runtime (a batch of completions or checkpoints: writeBatch). Inside a
// savepoint every statement's end walks the savepoint's in-memory
// sub-journal from its start to truncate it, so a member of many
// statements costs time quadratic in the pages it changes; without one,
// each statement's sub-journal is freed on its own. A group therefore
// holds at most one batch write, and runs it first.
//
// A group of one runs as a plain transaction under its caller's context,
// with no savepoint. A larger group runs under a context of its own,
// bounded by Options.Timeout from the group's start: a caller's
// cancellation must not reach the connection, which the driver interrupts
// on cancellation, and an interrupted write rolls back the whole
// transaction.

// maxGroup bounds the requests of one group; the rest wait for the next.
const maxGroup = 64

// The states of a writeReq. pending changes once: to started when a leader
// commits to running its fn and answering it, or to abandoned when its
// caller's context ends first, after which nothing touches it but the
// queue.
const (
	reqPending int32 = iota
	reqStarted
	reqAbandoned
)

// errFnPanicked is the error of a request whose fn panicked; its caller
// panics again with the value.
var errFnPanicked = errors.New("sqlite: write function panicked")

// writeReq is one caller of write.
type writeReq struct {
	ctx   context.Context // the caller's, with the per-call deadline
	fn    func(tx *wtx) (publish []string, err error)
	state atomic.Int32
	// leader is set, under writeGroup.mu, when the request is to run the
	// next group; lead is closed then.
	leader bool
	lead   chan struct{}
	// Set by the leader, then done is closed.
	err      error
	panicked any
	done     chan struct{}
	// batch marks a write of many statements (writeBatch): a group runs
	// at most one, first.
	batch bool
	// Leader-only bookkeeping of the group being run.
	answered bool
	publish  []string
}

// writeGroup is the queue of writes waiting for the writer connection.
type writeGroup struct {
	mu      sync.Mutex
	queue   []*writeReq // in arrival order; abandoned requests may remain
	leading bool        // a leader is running or about to run a group
}

// start moves a pending request to started and reports whether it did. A
// request whose caller's context has ended is abandoned instead, so that its
// fn never runs.
func (r *writeReq) start() bool {
	if r.ctx.Err() != nil {
		r.state.CompareAndSwap(reqPending, reqAbandoned)
		return false
	}
	return r.state.CompareAndSwap(reqPending, reqStarted)
}

// finish answers a started request.
func (r *writeReq) finish(err error) {
	r.err, r.answered = err, true
	close(r.done)
}

// call runs fn, turning a panic into errFnPanicked and keeping its value
// for the caller, so that a leader answers every member of its group
// whatever a member's fn does.
func (r *writeReq) call(tx *wtx) (publish []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.panicked, publish, err = p, nil, errFnPanicked
		}
	}()
	return r.fn(tx)
}

// enqueue adds r to the queue and reports whether it is to lead, which it
// is when no group runs.
func (g *writeGroup) enqueue(r *writeReq) (leader bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queue = append(g.queue, r)
	if !g.leading {
		g.leading, r.leader = true, true
	}
	return r.leader
}

// wait returns once r has been answered or abandoned (its context ended
// before its fn started), or has been made the leader, which it reports. A
// request whose fn has started is waited for to the end of its group,
// whatever its context.
func (g *writeGroup) wait(r *writeReq) (leader bool) {
	select {
	case <-r.done:
		return false
	case <-r.lead:
		return true
	case <-r.ctx.Done():
	}
	g.mu.Lock()
	r.state.CompareAndSwap(reqPending, reqAbandoned)
	leader = r.leader
	g.mu.Unlock()
	if leader || r.state.Load() == reqAbandoned {
		return leader
	}
	<-r.done
	return false
}

// take removes up to maxGroup live requests from the head of the queue,
// stopping before a second batch write; the batch write it takes, if any,
// comes first in the group it returns.
func (g *writeGroup) take() []*writeReq {
	g.mu.Lock()
	defer g.mu.Unlock()
	var batch []*writeReq
	big := -1 // the index in batch of its batch write
	i := 0
	for ; i < len(g.queue) && len(batch) < maxGroup; i++ {
		r := g.queue[i]
		if r.state.Load() == reqAbandoned {
			g.queue[i] = nil
			continue
		}
		if r.batch {
			if big >= 0 {
				break
			}
			big = len(batch)
		}
		batch = append(batch, r)
		g.queue[i] = nil
	}
	g.queue = g.queue[i:]
	if big > 0 {
		r := batch[big]
		copy(batch[1:big+1], batch[:big])
		batch[0] = r
	}
	return batch
}

// handOff makes the oldest waiting request the next leader, or ends the
// lead when none waits. A queued request is abandoned only under mu, so the
// one chosen is still waiting.
func (g *writeGroup) handOff() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for len(g.queue) > 0 && g.queue[0].state.Load() == reqAbandoned {
		g.queue[0] = nil
		g.queue = g.queue[1:]
	}
	if len(g.queue) == 0 {
		g.queue, g.leading = nil, false
		return
	}
	next := g.queue[0]
	next.leader = true
	close(next.lead)
}

// lead runs one group, then hands the lead on.
func (s *Store) lead() {
	defer s.group.handOff()
	batch := s.group.take()
	if len(batch) == 1 {
		if r := batch[0]; r.start() {
			r.finish(s.writeUnbounded(r.ctx, r.call))
		}
		return
	}
	s.commitGroup(batch)
}

// commitGroup runs the requests of batch in one transaction, the first
// it starts as it is and each later one between a savepoint and its
// release, and answers every request it started: a later one whose fn
// fails with its error as soon as its savepoint is rolled back, the others
// once COMMIT has succeeded and their task IDs are published. When the
// first one's fn fails, the transaction holds nothing else: it is rolled
// back, that request answered, and the rest of batch run as a group of
// their own. When the transaction itself is lost (BEGIN, a savepoint
// statement or COMMIT fails) every request not yet answered gets that
// error.
func (s *Store) commitGroup(batch []*writeReq) {
	for len(batch) > 0 {
		batch = s.commitGroupOnce(batch)
	}
}

// commitGroupOnce is one transaction of commitGroup. It returns the
// requests still to run: those after a first request whose fn failed.
func (s *Store) commitGroupOnce(batch []*writeReq) (rest []*writeReq) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.Timeout)
	defer cancel()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		failGroup(batch, fmt.Errorf("sqlite: begin: %w", err))
		return nil
	}
	defer s.ws.prepareWanted(ctx) // after the transaction, holding no connection
	t := &wtx{ctx: ctx, tx: tx, cache: s.ws, writer: s.writer}
	lost := func(err error) {
		tx.Rollback()
		failGroup(batch, err)
	}
	var ok []*writeReq
	first := true // no request has run yet in this transaction
	for i, r := range batch {
		if !r.start() {
			continue
		}
		if first {
			first = false
			ids, err := r.call(t)
			if err != nil {
				tx.Rollback()
				r.finish(err)
				return batch[i+1:]
			}
			r.publish = ids
			ok = append(ok, r)
			continue
		}
		if _, err := t.ExecContext(ctx, `SAVEPOINT member`); err != nil {
			lost(fmt.Errorf("sqlite: savepoint: %w", err))
			return nil
		}
		ids, err := r.call(t)
		if err != nil {
			if _, rbErr := t.ExecContext(ctx, `ROLLBACK TO member`); rbErr != nil {
				r.finish(err)
				lost(fmt.Errorf("sqlite: roll back to savepoint: %w", rbErr))
				return nil
			}
			r.finish(err) // nothing of it is written, whatever becomes of the group
		} else {
			r.publish = ids
			ok = append(ok, r)
		}
		if _, err := t.ExecContext(ctx, `RELEASE member`); err != nil {
			lost(fmt.Errorf("sqlite: release savepoint: %w", err))
			return nil
		}
	}
	if err := tx.Commit(); err != nil {
		failGroup(batch, fmt.Errorf("sqlite: commit: %w", err))
		return nil
	}
	for _, r := range ok {
		for _, id := range r.publish {
			s.pub.Publish(id)
		}
	}
	for _, r := range ok {
		r.finish(nil)
	}
	return nil
}

// failGroup answers err to every request of batch that is neither answered
// nor abandoned.
func failGroup(batch []*writeReq, err error) {
	for _, r := range batch {
		if r.answered {
			continue
		}
		if r.state.Load() == reqStarted || r.start() {
			r.finish(err)
		}
	}
}
