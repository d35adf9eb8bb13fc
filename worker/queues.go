package worker

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/taskwire/taskwire/backend"
)

// QueueConfig configures one queue a Runtime serves (Options.Queues).
type QueueConfig struct {
	// MaxWorkers bounds the handlers of the queue's jobs running at once.
	// At least 1, and at most Options.Concurrency when that is set.
	MaxWorkers int
}

// MaxQueues bounds the queues of one Runtime (Options.Queues, and the
// queues its handlers name): queue names are metric labels.
const MaxQueues = 32

// WithQueue names the queue of the handler's jobs: the runtime claims the
// kind's jobs only from that queue, which must be the queue its tasks are
// enqueued in (backend.EnqueueOptions.Queue; durable.TaskOptions.Queue
// sets both). Empty means backend.DefaultQueue, the default; any other
// name that backend.CheckQueue refuses makes the registration fail.
func WithQueue(name string) HandlerOption {
	return func(o *handlerOptions) { o.queue = name }
}

// QueueMetrics is an optional extension of Metrics: when Options.Metrics
// implements it, the runtime reports the jobs running in each of its
// queues (a bounded label: the served queues, at most MaxQueues).
type QueueMetrics interface {
	// QueueRunning adds delta (1 when a job of queue starts, -1 when it
	// frees its slot) to the jobs of queue running in this runtime.
	QueueRunning(queue string, delta int)
}

// checkQueues validates Options.Queues against Concurrency (zero: not
// set) and returns the Concurrency to use: the one given, or the sum of
// the queues' MaxWorkers when Queues is set and Concurrency is not.
func checkQueues(qs map[string]QueueConfig, concurrency int) (int, error) {
	if qs == nil {
		return concurrency, nil
	}
	if len(qs) == 0 {
		return 0, errors.New("worker: Options.Queues is empty; leave it nil to serve the queues of the handlers")
	}
	if len(qs) > MaxQueues {
		return 0, fmt.Errorf("worker: Options.Queues names %d queues; at most %d", len(qs), MaxQueues)
	}
	var errs []error
	sum := 0
	for _, name := range slices.Sorted(maps.Keys(qs)) {
		c := qs[name]
		if err := backend.CheckQueue(name); err != nil {
			errs = append(errs, fmt.Errorf("worker: Options.Queues: %q: %w", name, err))
			continue
		}
		switch {
		case c.MaxWorkers < 1:
			errs = append(errs, fmt.Errorf("worker: Options.Queues[%q].MaxWorkers must be at least 1", name))
		case concurrency > 0 && c.MaxWorkers > concurrency:
			errs = append(errs, fmt.Errorf("worker: Options.Queues[%q].MaxWorkers (%d) exceeds Concurrency (%d)",
				name, c.MaxWorkers, concurrency))
		}
		sum += max(c.MaxWorkers, 0)
	}
	if len(errs) > 0 {
		return 0, errors.Join(errs...)
	}
	return cmp.Or(concurrency, sum), nil
}

// queueState is the claim loop's view of one served queue. Only the claim
// loop reads and writes it, except slots (released by finishing jobs)
// and freed (set by them).
type queueState struct {
	name string
	// kinds are the sorted kinds of the handlers of this queue, read at
	// each claim: a handler registered while Run runs replaces them
	// (Runtime.AddRawHandler).
	kinds atomic.Pointer[[]string]
	// slots is the queue's semaphore (cap MaxWorkers, or Concurrency when
	// Options.Queues is nil): one token per running job of the queue,
	// taken with the runtime's.
	slots chan struct{}
	// freed is set when a job of the queue frees its slots, so that the
	// claim loop claims for this queue (and no other) on the wake.
	freed atomic.Bool
	// The claim loop's own state: the slots its claims under way
	// reserved, and whether there may be jobs to claim.
	reserved int
	want     bool
}

// free is the number of this queue's slots neither held nor reserved.
func (q *queueState) free() int { return cap(q.slots) - len(q.slots) - q.reserved }

// servedQueues builds the claim loop's queues from the registered
// handlers: every queue of Options.Queues, or every queue a handler names
// when it is nil. It fails when a configured queue has no handler, or
// when no handler's queue is served.
func (rt *Runtime) servedQueues() ([]*queueState, error) {
	byQueue := map[string][]string{}
	for kind, h := range rt.handlers {
		byQueue[h.queue] = append(byQueue[h.queue], kind)
	}
	names := slices.Sorted(maps.Keys(byQueue))
	if rt.opts.Queues != nil {
		var missing []string
		for _, name := range slices.Sorted(maps.Keys(rt.opts.Queues)) {
			if _, ok := byQueue[name]; !ok {
				missing = append(missing, fmt.Sprintf("%q", name))
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("worker: Options.Queues names queues no handler uses: %s (handlers use %s)",
				strings.Join(missing, ", "), quoted(names))
		}
		names = slices.Sorted(maps.Keys(rt.opts.Queues))
	} else if len(names) > MaxQueues {
		return nil, fmt.Errorf("worker: the handlers use %d queues; at most %d", len(names), MaxQueues)
	}
	qs := make([]*queueState, 0, len(names))
	for _, name := range names {
		limit := rt.opts.Concurrency
		if c, ok := rt.opts.Queues[name]; ok {
			limit = c.MaxWorkers
		}
		q := &queueState{name: name, slots: make(chan struct{}, limit), want: true}
		kinds := slices.Sorted(slices.Values(byQueue[name]))
		q.kinds.Store(&kinds)
		qs = append(qs, q)
	}
	return qs, nil
}

// quoted renders names as a list of quoted strings.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
