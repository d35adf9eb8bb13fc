package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// enqueueDefaults are the store's defaults for EnqueueOptions.
func (s *Store) enqueueDefaults() storerules.EnqueueDefaults {
	return storerules.EnqueueDefaults{TTL: s.opts.DefaultTTL, PollInterval: s.opts.DefaultPollInterval,
		MaxAttempts: s.opts.DefaultMaxAttempts}
}

// EnqueueBatch implements backend.BatchEnqueuer: the tasks and their jobs
// are inserted in one statement, and the task IDs are published after
// commit. Each item is checked as Enqueue
// checks it; an invalid item fails the whole batch before anything is
// written.
func (s *Store) EnqueueBatch(ctx context.Context, items []backend.BatchItem) ([]task.Task, error) {
	resolved, err := storerules.ResolveBatch(items, s.enqueueDefaults())
	if err != nil || len(items) == 0 {
		return nil, wrapErr("enqueue batch", err)
	}
	type column struct {
		ids, endpoints, tenants, principals, kinds []string
		origins                                    [][]byte
		ttls, polls                                []int64
		maxAttempts                                []int32
		runAts                                     []*time.Time
		traces                                     []*string
		queues                                     []string
		priorities                                 []int16
	}
	var c column
	for i, it := range items {
		id, err := taskdata.NewID(s.clock())
		if err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		var runAt *time.Time
		if !it.Options.RunAt.IsZero() {
			t := it.Options.RunAt.Truncate(time.Millisecond)
			runAt = &t
		}
		cc, e := it.Creation, resolved[i]
		c.ids = append(c.ids, id)
		c.endpoints = append(c.endpoints, cc.Request.Endpoint)
		c.tenants = append(c.tenants, cc.Request.Tenant)
		c.principals = append(c.principals, cc.Request.Principal)
		c.kinds = append(c.kinds, cc.Origin.Tool())
		c.origins = append(c.origins, cc.Origin.Persisted())
		c.ttls = append(c.ttls, e.TTL.Milliseconds())
		c.polls = append(c.polls, e.PollInterval.Milliseconds())
		c.maxAttempts = append(c.maxAttempts, int32(e.MaxAttempts))
		c.runAts = append(c.runAts, runAt)
		c.traces = append(c.traces, taskdata.TraceColumn(cc))
		c.queues = append(c.queues, e.Queue)
		c.priorities = append(c.priorities, int16(e.Priority))
	}
	var created time.Time
	err = s.pool.QueryRow(ctx, s.q.enqueueBatch, s.now(), c.ids, c.endpoints, c.tenants, c.principals, c.kinds,
		c.origins, c.ttls, c.polls, c.maxAttempts, c.runAts, c.traces, c.queues, c.priorities).Scan(&created)
	if err != nil {
		return nil, wrapErr("insert tasks", err)
	}
	snaps := make([]task.Task, len(items))
	evs := make([]event, len(items))
	for i, it := range items {
		snap, err := resolved[i].Created(c.ids[i], it.Creation.Origin, created)
		if err != nil {
			return nil, errors.Join(errors.New("postgres: tasks created, snapshot failed"), err)
		}
		snaps[i] = snap
		evs[i] = event{taskID: c.ids[i]}
	}
	s.emit(evs...)
	return snaps, nil
}
