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

// checkpointInFlight is the number of SaveCheckpoints calls that may run
// at once, for the same reason; checkpoints are rarer than completions.
const checkpointInFlight = 2

// completer batches completions (backend.BatchCompleter).
type completer = batcher[backend.Completion]

func newCompleter(store backend.BatchCompleter, queue int) *completer {
	return newBatcher(store.CompleteBatch, queue, maxCompleteBatch, completeInFlight)
}

// newCheckpointer batches checkpoint writes (backend.Checkpointer).
func newCheckpointer(store backend.Checkpointer, queue int) *batcher[backend.CheckpointWrite] {
	return newBatcher(store.SaveCheckpoints, queue, backend.MaxCheckpointBatch, checkpointInFlight)
}

// batcher funnels concurrent fenced writes into calls of a batch method
// (CompleteBatch, SaveCheckpoints). It batches naturally: while a batch
// commits, the next writes queue, and the following call takes all of them
// (up to max), so a quiet runtime pays no extra latency and a busy one
// commits many jobs at once. Its goroutines are owned by Run and end when
// Run closes it, after every job has finished.
type batcher[T any] struct {
	run  func(ctx context.Context, items []T) (lost []bool, err error)
	max  int
	reqs chan batchReq[T]
	done sync.WaitGroup
}

type batchReq[T any] struct {
	item  T
	reply chan error // capacity 1
}

func newBatcher[T any](run func(ctx context.Context, items []T) ([]bool, error), queue, max, inFlight int) *batcher[T] {
	c := &batcher[T]{run: run, max: max, reqs: make(chan batchReq[T], queue)}
	for range inFlight {
		c.done.Go(c.loop)
	}
	return c
}

// complete submits one write, calls queued (when not nil) once it is
// queued, and waits for its outcome: nil, backend.ErrLeaseLost, or the
// batch's error.
func (c *batcher[T]) complete(ctx context.Context, item T, queued func()) error {
	req := batchReq[T]{item: item, reply: make(chan error, 1)}
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
func (c *batcher[T]) close() {
	close(c.reqs)
	c.done.Wait()
}

func (c *batcher[T]) loop() {
	batch := make([]batchReq[T], 0, c.max)
	items := make([]T, 0, c.max)
	for first := range c.reqs {
		batch = append(batch[:0], first)
	gather:
		for len(batch) < c.max {
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
		lost, err := c.run(ctx, items)
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
