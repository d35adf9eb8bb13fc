package storerules

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// EnqueueDefaults are a backend's defaults for the zero fields of
// backend.EnqueueOptions.
type EnqueueDefaults struct {
	TTL          time.Duration // negative: unlimited
	PollInterval time.Duration
	MaxAttempts  int
}

// Defaults of the enqueue defaults the SQL stores' Options carry.
const (
	DefaultTTL          = 24 * time.Hour
	DefaultPollInterval = time.Second
)

// Resolve fills in the zero fields of a SQL store's enqueue defaults (TTL
// DefaultTTL, PollInterval DefaultPollInterval, MaxAttempts
// backend.DefaultMaxAttempts) and checks them as Options fields: a
// negative TTL (unlimited) is kept, a positive one and PollInterval must be
// whole milliseconds, PollInterval must not be negative, and MaxAttempts
// must be within [0, backend.MaxMaxAttempts]. The errors name the Options
// fields (DefaultTTL, ...).
func (d *EnqueueDefaults) Resolve() error {
	if d.TTL == 0 {
		d.TTL = DefaultTTL
	}
	if d.PollInterval == 0 {
		d.PollInterval = DefaultPollInterval
	}
	if d.MaxAttempts == 0 {
		d.MaxAttempts = backend.DefaultMaxAttempts
	}
	switch {
	case d.MaxAttempts < 0 || d.MaxAttempts > backend.MaxMaxAttempts:
		return fmt.Errorf("DefaultMaxAttempts must be between 0 and %d", backend.MaxMaxAttempts)
	case d.TTL > 0 && d.TTL%time.Millisecond != 0:
		return errors.New("DefaultTTL must be whole milliseconds")
	case d.PollInterval < 0 || d.PollInterval%time.Millisecond != 0:
		return errors.New("DefaultPollInterval must be positive whole milliseconds")
	}
	return nil
}

// Enqueue is a validated creation: its options with the backend's
// defaults filled in.
type Enqueue struct {
	TTL          time.Duration // 0: unlimited
	PollInterval time.Duration
	MaxAttempts  int
	Queue        string // backend.DefaultQueue when none was given
	Priority     int    // backend.DefaultPriority when none was given
}

// ResolveEnqueue checks a creation context and its options and fills in the
// defaults. A negative TTL means unlimited (0 in the result); TTL and
// PollInterval must be whole milliseconds, and MaxAttempts at most
// backend.MaxMaxAttempts. Queue must pass backend.CheckQueue (empty:
// backend.DefaultQueue) and Priority backend.CheckPriority (zero:
// backend.DefaultPriority). Text a store keeps must be valid
// UTF-8 without NUL bytes (backend.ErrInvalidText).
func ResolveEnqueue(cc *task.CreationContext, opts backend.EnqueueOptions, d EnqueueDefaults) (Enqueue, error) {
	if cc == nil || cc.Origin.IsZero() || cc.Request.Endpoint == "" {
		return Enqueue{}, errors.New("a creation context with an origin and endpoint is required")
	}
	if err := checkCreation(cc, opts.IdempotencyKey); err != nil {
		return Enqueue{}, err
	}
	e := Enqueue{TTL: cmp.Or(opts.TTL, d.TTL), PollInterval: cmp.Or(opts.PollInterval, d.PollInterval),
		MaxAttempts: cmp.Or(opts.MaxAttempts, d.MaxAttempts),
		Queue:       cmp.Or(opts.Queue, backend.DefaultQueue), Priority: cmp.Or(opts.Priority, backend.DefaultPriority)}
	e.TTL = max(e.TTL, 0)
	if err := backend.CheckQueue(e.Queue); err != nil {
		return Enqueue{}, fmt.Errorf("Queue: %w", err)
	}
	if err := backend.CheckPriority(opts.Priority); err != nil {
		return Enqueue{}, fmt.Errorf("Priority: %w", err)
	}
	switch {
	case e.TTL%time.Millisecond != 0 || e.PollInterval < 0 || e.PollInterval%time.Millisecond != 0:
		return Enqueue{}, errors.New("TTL and PollInterval must be whole milliseconds")
	case e.MaxAttempts < 0 || e.MaxAttempts > backend.MaxMaxAttempts:
		return Enqueue{}, fmt.Errorf("MaxAttempts must be between 0 and %d", backend.MaxMaxAttempts)
	}
	return e, nil
}

// ResolveBatch checks the items of an EnqueueBatch, as ResolveEnqueue
// checks one creation, and that the batch is within backend.MaxEnqueueBatch
// and carries no idempotency key (backend.ErrBatchIdempotencyKey).
func ResolveBatch(items []backend.BatchItem, d EnqueueDefaults) ([]Enqueue, error) {
	if len(items) > backend.MaxEnqueueBatch {
		return nil, fmt.Errorf("a batch holds at most %d items, not %d", backend.MaxEnqueueBatch, len(items))
	}
	resolved := make([]Enqueue, len(items))
	for i, it := range items {
		if it.Options.IdempotencyKey != "" {
			return nil, backend.ErrBatchIdempotencyKey
		}
		e, err := ResolveEnqueue(it.Creation, it.Options, d)
		if err != nil {
			return nil, fmt.Errorf("batch item %d: %w", i, err)
		}
		resolved[i] = e
	}
	return resolved, nil
}

// Created returns the snapshot of a task a backend has just created: working,
// created and last updated at created, with the resolved TTL and poll
// interval.
func (e Enqueue) Created(id string, origin task.Origin, created time.Time) (task.Task, error) {
	t, err := task.New(task.Params{
		ID: id, Origin: origin, Status: task.Working,
		CreatedAt: created.UTC(), LastUpdatedAt: created.UTC(),
		TTL: e.TTL, PollInterval: e.PollInterval,
	})
	if err != nil {
		return task.Task{}, fmt.Errorf("new task: %w", err)
	}
	return t, nil
}
