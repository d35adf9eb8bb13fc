package postgres

import (
	"context"
	"errors"
	"sync"

	"github.com/jackc/pgx/v5"
)

// receiver is one Receive registration: a bounded queue filled by the
// listener, and at most one goroutine draining it, which exists only while
// the queue is not empty (so a store closed without stopping its receivers
// leaves none behind). Its owner is the receiver: stop ends it.
type receiver struct {
	r    *AnswerRelay
	node string
	fn   func([]byte)

	ctx    context.Context // ended by stop; bounds the drain's reads
	cancel context.CancelFunc

	mu      sync.Mutex // guards the fields below
	q       []answer
	running bool
	stopped bool
	idle    chan struct{} // closed while no drain goroutine runs
	dropped int           // responses dropped since the queue last emptied
}

// enqueue appends a to the queue, or drops it when the queue is full, and
// starts the drain goroutine when none runs. It never blocks.
func (rc *receiver) enqueue(a answer) {
	rc.mu.Lock()
	if rc.stopped {
		rc.mu.Unlock()
		return
	}
	if len(rc.q) >= rc.r.queue {
		rc.dropped++
		first := rc.dropped == 1
		rc.mu.Unlock()
		if first {
			rc.r.log.Warn("postgres: forwarded answer queue full; dropping answers until it drains",
				"node", rc.node, "queue", rc.r.queue)
		}
		return
	}
	rc.q = append(rc.q, a)
	if !rc.running {
		rc.running = true
		rc.idle = make(chan struct{})
		go rc.drain()
	}
	rc.mu.Unlock()
}

// drain delivers queued answers until the queue is empty or the receiver
// stops.
func (rc *receiver) drain() {
	for {
		rc.mu.Lock()
		if rc.stopped || len(rc.q) == 0 {
			dropped := rc.dropped
			rc.dropped = 0
			rc.running = false
			rc.q = nil
			close(rc.idle)
			rc.mu.Unlock()
			if dropped > 0 {
				rc.r.log.Warn("postgres: forwarded answers dropped on a full queue",
					"node", rc.node, "dropped", dropped)
			}
			return
		}
		a := rc.q[0]
		rc.q[0] = answer{}
		rc.q = rc.q[1:]
		rc.mu.Unlock()
		rc.deliver(a)
	}
}

// deliver hands one answer to fn, reading its row first when it has one.
func (rc *receiver) deliver(a answer) {
	switch {
	case a.catchUp:
		rc.catchUp()
	case a.row != 0:
		if body, ok := rc.take(a.row); ok {
			rc.call(body)
		}
	default:
		rc.call(a.body)
	}
}

// call runs fn unless the receiver stopped meanwhile.
func (rc *receiver) call(body []byte) {
	if rc.ctx.Err() == nil {
		rc.fn(body)
	}
}

// take deletes and returns the row's response; false when it is gone
// (delivered already, swept), expired, or the read failed (logged).
func (rc *receiver) take(id int64) ([]byte, bool) {
	var body []byte
	var live bool
	err := rc.r.s.pool.QueryRow(rc.ctx, rc.r.take, rc.r.s.now(), id, rc.node, rc.r.ttlMS).Scan(&body, &live)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil, false
	case err != nil:
		if rc.ctx.Err() == nil {
			rc.r.log.Warn("postgres: forwarded answer not read", "node", rc.node, "err", err)
		}
		return nil, false
	}
	return body, live
}

// catchUp delivers the rows waiting for the node, oldest first, at most
// catchUpAnswers of them.
func (rc *receiver) catchUp() {
	rows, err := rc.r.s.pool.Query(rc.ctx, rc.r.pending, rc.node, catchUpAnswers)
	var ids []int64
	if err == nil {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
	}
	if err != nil {
		if rc.ctx.Err() == nil {
			rc.r.log.Warn("postgres: forwarded answers not read after reconnecting", "node", rc.node, "err", err)
		}
		return
	}
	for _, id := range ids {
		if rc.ctx.Err() != nil {
			return
		}
		if body, ok := rc.take(id); ok {
			rc.call(body)
		}
	}
}

// stop empties the queue, ends pending reads and waits until the drain
// goroutine (and so fn) has returned. It must not be called from fn.
func (rc *receiver) stop() {
	rc.mu.Lock()
	rc.stopped = true
	rc.q = nil
	idle := rc.idle
	rc.mu.Unlock()
	rc.cancel()
	<-idle
}
