package worker

import (
	"context"
	"sync"

	"github.com/taskwire/taskwire/backend"
)

// maxCompleteBatch bounds one CompleteBatch call.
const maxCompleteBatch = 256

// completeInFlight is the number of CompleteBatch calls that may run at
// once: while one batch commits, the next ones gather and run, so the
// database's commit latency does not cap the completion rate, and a
// completion that arrives while batches commit waits for the next free
// call rather than for one of two busy ones (under a closed loop of HTTP
// clients on a saturated two-core machine, 4 rather than 2 cut the wait
// from handler return to commit by about a fifth; see docs/benchmarks.md).
const completeInFlight = 4

// completer funnels concurrent completions into CompleteBatch calls. It
// batches naturally: while a batch commits, the next completions queue, and
// the following call takes all of them (up to maxCompleteBatch), so a quiet
// runtime pays no extra latency and a busy one commits many jobs at once. Its
// completeInFlight goroutines are owned by Run and end when Run closes it,
// after every job has finished.
type completer struct {
	store backend.BatchCompleter
	reqs  chan completeReq
	done  sync.WaitGroup
}

type completeReq struct {
	item  backend.Completion
	reply chan error // capacity 1
}

func newCompleter(store backend.BatchCompleter, queue int) *completer {
	c := &completer{store: store, reqs: make(chan completeReq, queue)}
	for range completeInFlight {
		c.done.Go(c.loop)
	}
	return c
}

// complete submits one completion, calls queued (when not nil) once it is
// queued, and waits for its outcome: nil, backend.ErrLeaseLost, or the batch's
// error.
func (c *completer) complete(ctx context.Context, item backend.Completion, queued func()) error {
	req := completeReq{item: item, reply: make(chan error, 1)}
	select {
	case c.reqs <- req:
	case <-ctx.Done():
		return ctx.Err()
	}
	if queued != nil {
		queued()
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		// The batch may still commit it; the fenced outcome is then
		// unknown to this run, like any write that times out.
		return ctx.Err()
	}
}

// close stops the loop once the queued requests are answered.
func (c *completer) close() {
	close(c.reqs)
	c.done.Wait()
}

func (c *completer) loop() {
	batch := make([]completeReq, 0, maxCompleteBatch)
	items := make([]backend.Completion, 0, maxCompleteBatch)
	for first := range c.reqs {
		batch = append(batch[:0], first)
	gather:
		for len(batch) < maxCompleteBatch {
			select {
			case r, ok := <-c.reqs:
				if !ok {
					break gather
				}
				batch = append(batch, r)
			default:
				break gather
			}
		}
		items = items[:0]
		for _, r := range batch {
			items = append(items, r.item)
		}
		// The batch outlives any one caller's context; each item's own
		// deadline is enforced by its caller's wait.
		ctx, cancel := context.WithTimeout(context.Background(), batchTimeout)
		lost, err := c.store.CompleteBatch(ctx, items)
		cancel()
		for i, r := range batch {
			switch {
			case err != nil:
				r.reply <- err
			case lost[i]:
				r.reply <- backend.ErrLeaseLost
			default:
				r.reply <- nil
			}
		}
	}
}
