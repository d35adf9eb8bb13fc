package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"unicode/utf8"
)

// MaxStepNameBytes bounds the names of Step.
const MaxStepNameBytes = 128

// stepsMember is the member of the checkpoint object under which Step
// keeps its results.
const stepsMember = "taskwire.steps"

// ErrNotSteps is Step's error when the job's checkpoint was saved by
// Job.Checkpoint rather than by Step: a handler uses one or the other.
var ErrNotSteps = errors.New("worker: step: the job's checkpoint was not saved by Step")

// Step runs a named step of a job once: the first run of the job that
// reaches it runs fn, saves fn's result (encoded with encoding/json) in
// the job's checkpoint and returns it; every later run of the same job
// (after a crash, a lost lease, a retry, a shutdown or an input round)
// returns the saved result without calling fn. A handler written as a
// sequence of steps thus resumes after the last step that finished:
//
//	rows, err := worker.Step(ctx, job, "extract", func(ctx context.Context) ([]Row, error) { return extract(ctx, in) })
//	...
//	url, err := worker.Step(ctx, job, "upload", func(ctx context.Context) (string, error) { return upload(ctx, rows) })
//
// Names identify steps within the job: a loop gives each round its own
// name ("page-10"). A step whose fn fails saves nothing and returns fn's
// error, so the next run calls fn again; fn's side effects must be safe to
// repeat until Step has returned, since a crash between them and the save
// repeats them.
//
// The results share the job's one checkpoint (see Job.Checkpoint, whose
// fencing, batching and bound apply): a handler that uses Step does not
// call Job.Checkpoint, and Step fails with ErrNotSteps on a checkpoint
// saved that way. All of a job's step results together are bounded by
// backend.MaxCheckpointBytes; a result that would pass it fails with an
// error wrapping backend.ErrInvalidCheckpoint, saving nothing. A saved
// result that no longer decodes into T (the handler changed) fails with
// the decoding error. Step may be called from several goroutines of one
// run; their saves do not overwrite each other.
func Step[T any](ctx context.Context, job *Job, name string, fn func(ctx context.Context) (T, error)) (T, error) {
	var zero T
	if name == "" || len(name) > MaxStepNameBytes || !utf8.ValidString(name) {
		return zero, fmt.Errorf("worker: step: the name must be 1 to %d bytes of UTF-8", MaxStepNameBytes)
	}
	job.steps.Lock()
	done, err := job.savedSteps()
	job.steps.Unlock()
	if err != nil {
		return zero, err
	}
	if raw, ok := done[name]; ok {
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return zero, fmt.Errorf("worker: step %q: the saved result does not decode: %w", name, err)
		}
		return v, nil
	}
	v, err := fn(ctx)
	if err != nil {
		return zero, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return zero, fmt.Errorf("worker: step %q: %w", name, err)
	}
	job.steps.Lock()
	defer job.steps.Unlock()
	done, err = job.savedSteps() // another goroutine's step may have been saved since
	if err != nil {
		return zero, err
	}
	done = maps.Clone(done)
	if done == nil {
		done = map[string]json.RawMessage{}
	}
	done[name] = raw
	if err := job.Checkpoint(map[string]any{stepsMember: done}); err != nil {
		return zero, fmt.Errorf("worker: step %q: %w", name, err)
	}
	return v, nil
}

// savedSteps returns the step results of the job's checkpoint: none for a
// job without one. The caller holds job.steps.
func (j *Job) savedSteps() (map[string]json.RawMessage, error) {
	var envelope map[string]map[string]json.RawMessage
	found, err := j.LastCheckpoint(&envelope)
	switch {
	case !found:
		return nil, nil
	case err != nil:
		return nil, ErrNotSteps
	}
	steps, ok := envelope[stepsMember]
	if !ok || len(envelope) != 1 {
		return nil, ErrNotSteps
	}
	return steps, nil
}
