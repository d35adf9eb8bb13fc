package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskwire/taskwire/backend"
)

// ErrNoCheckpoints is returned by Job.Checkpoint when the runtime's store
// keeps no checkpoints (it does not implement backend.Checkpointer).
// store/memory, store/sqlite and store/postgres keep them.
var ErrNoCheckpoints = errors.New("worker: the store keeps no checkpoints (backend.Checkpointer)")

// Checkpoint saves v, encoded with encoding/json, as the job's checkpoint:
// where the run got to (a cursor, the last page done, the results of the
// steps so far), so that a later run of the same job, after a crash, a
// lost lease, a retry, a shutdown or an input round, resumes from it
// (LastCheckpoint) instead of from the start. Each call replaces the last
// checkpoint; the job keeps it across runs until the job is deleted, with
// its task (or pruned once it has finished). Checkpoints are not shown to
// the task's client; the task's history (package console) records each
// one's size, never its content.
//
// Checkpoint returns once the store holds the checkpoint: a side effect
// made after it returns nil is never redone by a run that resumes from
// it. The write is fenced by the run's lease like every write (a run whose
// lease was lost saves nothing: Checkpoint then fails with an error
// wrapping backend.ErrLeaseLost and cancels the handler's context with
// that cause), batched with the checkpoints of other running jobs into one
// transaction, and bounded by Options.Lease. It does not follow the
// handler's context, so a handler told to stop (ErrShuttingDown,
// ErrCancelRequested) can still save where it got to.
//
// It fails, writing nothing, with an error wrapping
// backend.ErrInvalidCheckpoint when the encoding is longer than
// backend.MaxCheckpointBytes (64 KiB), with the encoding error when v
// cannot be encoded, and with ErrNoCheckpoints when the store keeps none.
// Other store errors are returned as they are; the last checkpoint saved
// stays. Returning any of these errors from the handler is an ordinary
// failure (retried).
func (j *Job) Checkpoint(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("worker: checkpoint: %w", err)
	}
	if len(data) > backend.MaxCheckpointBytes {
		return fmt.Errorf("worker: checkpoint: %w: %d bytes exceed the bound of %d (backend.MaxCheckpointBytes)",
			backend.ErrInvalidCheckpoint, len(data), backend.MaxCheckpointBytes)
	}
	rt := j.run.rt
	if rt.checkpoints == nil {
		return ErrNoCheckpoints
	}
	ctx, cancel := context.WithTimeout(j.run.base, rt.opts.Lease)
	defer cancel()
	err = rt.checkpoints.complete(ctx, backend.CheckpointWrite{Lease: j.job.Lease, Data: data}, nil)
	switch {
	case errors.Is(err, backend.ErrLeaseLost):
		j.loseLease()
		return fmt.Errorf("worker: checkpoint: %w", err)
	case err != nil:
		rt.log.Warn("worker: checkpoint write failed", "kind", j.run.kind, "attempt", j.job.AttemptNumber(), "err", errText(err))
		return fmt.Errorf("worker: checkpoint: %w", err)
	}
	j.mu.Lock()
	j.checkpoint = data
	j.mu.Unlock()
	return nil
}

// LastCheckpoint decodes the job's last checkpoint into v (with
// encoding/json, as Unmarshal does) and reports whether there was one: the
// last one this run saved, or else the one the job held when this run was
// claimed, saved by an earlier run. found is false, and v untouched, for a
// job that never saved one. A checkpoint that does not decode into v (the
// handler's type changed since it was saved) fails with the decoding
// error.
func (j *Job) LastCheckpoint(v any) (found bool, err error) {
	j.mu.Lock()
	data := j.checkpoint
	j.mu.Unlock()
	if data == nil {
		return false, nil
	}
	if err := json.Unmarshal(data, v); err != nil {
		return true, fmt.Errorf("worker: last checkpoint: %w", err)
	}
	return true, nil
}
