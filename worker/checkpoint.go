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
//
// A checkpoint saved with CheckpointLater and not written yet is replaced
// by this one: it is never written after it.
func (j *Job) Checkpoint(v any) error {
	data, err := encodeCheckpoint(v)
	if err != nil {
		return err
	}
	if j.run.rt.checkpoints == nil {
		return ErrNoCheckpoints
	}
	j.saving.Lock()
	defer j.saving.Unlock()
	j.mu.Lock()
	j.later = nil // older than data: never written after it
	j.mu.Unlock()
	if err := j.save(data); err != nil {
		return err
	}
	j.mu.Lock()
	j.checkpoint = data
	j.mu.Unlock()
	return nil
}

// CheckpointLater saves v, encoded with encoding/json, as the job's
// checkpoint, as Checkpoint does, but without waiting for the store: the
// value is held by the run, LastCheckpoint returns it at once, and it is
// written, fenced by the run's lease, with the run's completion (in the
// completing transaction, at no cost of its own, when the store completes
// in batches: see backend.Completion.Checkpoint) or at the run's next
// heartbeat (Options.HeartbeatEvery), whichever comes first; a run that
// ends otherwise (a failure, a retry, an input round, a release, a
// cancellation) writes it right before its final write. Each call replaces
// the value not yet written: at most one is held, and the last one wins.
//
// The contract is weaker than Checkpoint's, as for the heartbeat details
// of other job systems: a crash, or a lost lease, loses the value not yet
// written (the next run resumes from the last one written), so a side
// effect made after CheckpointLater may be redone. Use it for where a run
// got to when redoing a little is cheap (a cursor over pages already
// fetched idempotently); use Checkpoint (or Step) before a side effect
// that must not be repeated. A run whose lease was lost writes nothing: a
// heartbeat write that finds it lost cancels the handler's context with
// cause backend.ErrLeaseLost, and the completion is refused with the
// value. A write that fails otherwise is logged and the value kept for
// the next heartbeat; the completion then writes it.
//
// It fails, holding nothing, as Checkpoint does for a value that cannot be
// encoded or whose encoding is longer than backend.MaxCheckpointBytes, and
// with ErrNoCheckpoints when the store keeps none. The task's history
// (package console) records a heartbeat's write as a checkpoint step, like
// Checkpoint's; a value written with the completion is shown as the job's
// last checkpoint (its size and time) without a step of its own.
func (j *Job) CheckpointLater(v any) error {
	data, err := encodeCheckpoint(v)
	if err != nil {
		return err
	}
	if j.run.rt.checkpoints == nil {
		return ErrNoCheckpoints
	}
	j.mu.Lock()
	j.later, j.checkpoint = data, data
	j.mu.Unlock()
	return nil
}

// encodeCheckpoint encodes a checkpoint and checks its bound.
func encodeCheckpoint(v any) ([]byte, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("worker: checkpoint: %w", err)
	}
	if len(data) > backend.MaxCheckpointBytes {
		return nil, fmt.Errorf("worker: checkpoint: %w: %d bytes exceed the bound of %d (backend.MaxCheckpointBytes)",
			backend.ErrInvalidCheckpoint, len(data), backend.MaxCheckpointBytes)
	}
	return data, nil
}

// save writes data as the job's checkpoint through the runtime's batcher,
// bounded by Options.Lease; the caller holds j.saving. A write that found
// the lease lost cancels the handler.
func (j *Job) save(data []byte) error {
	rt := j.run.rt
	ctx, cancel := context.WithTimeout(j.run.base, rt.opts.Lease)
	defer cancel()
	err := rt.checkpoints.complete(ctx, backend.CheckpointWrite{Lease: j.job.Lease, Data: data}, nil)
	switch {
	case errors.Is(err, backend.ErrLeaseLost):
		j.loseLease()
		return fmt.Errorf("worker: checkpoint: %w", err)
	case err != nil:
		rt.log.Warn("worker: checkpoint write failed", "kind", j.run.kind, "attempt", j.job.AttemptNumber(), "err", errText(err))
		return fmt.Errorf("worker: checkpoint: %w", err)
	}
	return nil
}

// flushLater writes the value CheckpointLater holds, if any: at a
// heartbeat, and before a final write that cannot carry it. A write that
// fails, other than for a lost lease, gives the value back unless a newer
// one came meanwhile.
func (j *Job) flushLater() {
	j.saving.Lock()
	defer j.saving.Unlock()
	j.mu.Lock()
	data := j.later
	j.later = nil
	j.mu.Unlock()
	if data == nil {
		return
	}
	if err := j.save(data); err != nil && !errors.Is(err, backend.ErrLeaseLost) {
		j.mu.Lock()
		if j.later == nil {
			j.later = data
		}
		j.mu.Unlock()
	}
}

// takeLater returns the value CheckpointLater holds, if any, for the
// run's completion to carry; the handler has returned.
func (j *Job) takeLater() []byte {
	j.mu.Lock()
	defer j.mu.Unlock()
	data := j.later
	j.later = nil
	return data
}

// LastCheckpoint decodes the job's last checkpoint into v (with
// encoding/json, as Unmarshal does) and reports whether there was one: the
// last one this run saved (with Checkpoint, or with CheckpointLater even
// if not written yet), or else the one the job held when this run was
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
