package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/worker"
)

// Following an upstream task.
const (
	// minTaskPoll and maxTaskPoll clamp the upstream's pollIntervalMs;
	// defaultTaskPoll is the interval when it suggests none.
	minTaskPoll     = 100 * time.Millisecond
	maxTaskPoll     = 30 * time.Second
	defaultTaskPoll = time.Second
	// taskRequestTimeout bounds each tasks/get, tasks/result and
	// tasks/update, besides the run's Options.TaskCallTimeout.
	taskRequestTimeout = 30 * time.Second
	// cancelTimeout bounds the tasks/cancel sent when the downstream task
	// is cancelled or the run gives up on the upstream task.
	cancelTimeout = 5 * time.Second
)

// Texts the downstream client reads about upstream tasks.
const (
	textTaskLost = "The upstream server no longer knows the task this call runs as (it expired, " +
		"or the upstream lost it); the call is not repeated."
	textTaskCancelled = "The upstream task of this call was cancelled by the upstream server."
	textNotRecorded   = "The gateway could not record the upstream task of this call and cancelled it; " +
		"the call is not repeated, since the tool is not marked safe to retry."
	textNoTaskCaller = "An earlier run of this call started an upstream task that this gateway cannot follow " +
		"(it no longer runs task tools); the call is not repeated."
	textBadCheckpoint = "The gateway cannot read what an earlier run of this call recorded; the call is not repeated."
	textNotRepeated   = " The call is not repeated, since the tool is not marked safe to retry."
)

// upstreamTaskState is the job checkpoint of a run that started an
// upstream task: the task's ID, which every later run follows instead of
// calling again, and for a 2025-11-25 task the session that created it,
// which a later run of another session resumes (servers bind such tasks
// to their session). An empty Task marks the last upstream task spent (it
// failed or timed out): the next run of a retry tool calls again. The task
// and session IDs are capabilities: never logged.
type upstreamTaskState struct {
	Task string `json:"upstreamTask,omitempty"`
	// Session and Version are the ID and revision of the 2025-era session
	// of Task; empty for a 2026-07-28 task.
	Session string `json:"upstreamSession,omitempty"`
	Version string `json:"upstreamVersion,omitempty"`
	// Settled are IDs of tasks of Session that the process creating Task
	// had settled then (uptask_sessions.go): a process that resumes the
	// session knows no run needs them.
	Settled []string `json:"upstreamSettled,omitempty"`
}

// hasTaskTools reports whether o may make any tool a task tool: a
// TaskTools pattern, or an Options.Tools entry that says task true. Only
// then does the gateway declare tasks upstream.
func (o Options) hasTaskTools() bool {
	if len(o.TaskTools) > 0 {
		return true
	}
	for _, ts := range o.Tools {
		if ts.Task != nil && *ts.Task {
			return true
		}
	}
	return false
}

// taskCaller is an upstream that runs a call as a task of its own where
// it offers tasks.
type taskCaller interface {
	// callTask calls the tool name as upstream.callTool does, asking for
	// a task where the upstream offers one for the tool. Without an
	// error exactly one of the inline result and the task is set.
	callTask(ctx context.Context, name string, args json.RawMessage, progress func(client.Progress)) (*mcp.CallToolResult, upstreamTask, error)
	// task is a handle on the upstream task of st, through a client of
	// its session (sends nothing but, for a session another client
	// created, the resumed session's GET stream); release ends the
	// run's use of it. An error says st cannot name a session.
	task(st upstreamTaskState) (t upstreamTask, release func(), err error)
	// close ends the connection; calls in flight fail. Idempotent.
	close() error
}

// upstreamTask is a handle on an upstream task; httpTask is one.
type upstreamTask interface {
	// ID is the task's ID: a capability, never logged.
	ID() string
	// Session is the ID and revision of the 2025-era session the task
	// belongs to, empty for a 2026-07-28 task. The ID is a capability.
	Session() (id, version string)
	// Get is tasks/get; client.ErrTaskNotFound for an unknown task.
	Get(ctx context.Context) (*mcp.DetailedTask, error)
	// Wait returns the outcome of a finished task (its result, or
	// *client.TaskFailedError, *client.TaskCancelledError).
	Wait(ctx context.Context) (*mcp.CallToolResult, error)
	// Cancel is tasks/cancel.
	Cancel(ctx context.Context) error
	// Answer is tasks/update with input responses.
	Answer(ctx context.Context, responses mcp.InputResponses) error
}

// runUpstreamTask runs a task tool's run through an upstream task where it
// can, and reports whether it did (handled). A run whose job holds the ID
// of an upstream task (a run after a crash, a lost lease, a shutdown, an
// input round) follows that task: no call is repeated, for retry tools and
// others alike. Otherwise a run of an upstream that can run tasks calls
// the tool asking for one, records the task's ID before it waits
// (job.Checkpoint) and follows it; an upstream that answers inline gives
// the run its result. Not handled: the run makes an inline call.
func (g *Gateway) runUpstreamTask(ctx context.Context, job *worker.Job, name string, retry bool) (res *mcp.CallToolResult, handled bool, err error) {
	var st upstreamTaskState
	found, err := job.LastCheckpoint(&st)
	switch {
	case err != nil:
		g.log.Warn("gateway: the checkpoint of a task does not decode", "tool", name)
		return nil, true, mcp.NewError(mcp.CodeInternalError, textBadCheckpoint)
	case found && st.Task != "" && g.tasks == nil:
		return nil, true, mcp.NewError(mcp.CodeInternalError, textNoTaskCaller)
	case found && st.Task != "":
		t, release, err := g.tasks.task(st)
		if errors.Is(err, errResumedBusy) {
			g.log.Warn("gateway: every resumed upstream session is in use; the next run follows the task", "tool", name)
			return nil, true, worker.Unavailable(fmt.Errorf("%w: %w", err, errFollowAgain))
		}
		if err != nil {
			g.log.Warn("gateway: the checkpoint of a task names no usable upstream session", "tool", name)
			return nil, true, mcp.NewError(mcp.CodeInternalError, textBadCheckpoint)
		}
		defer release()
		res, err := g.followTask(ctx, job, name, retry, t)
		g.settleTask(ctx, t, err)
		return res, true, err
	case g.tasks == nil, !retry && job.InterruptedRuns() > 0:
		// An inline call, or the inline path's refusal to call again
		// when a crash may have come after the upstream created a task
		// and before its ID was recorded.
		return nil, false, nil
	}
	cctx, cancel := context.WithTimeout(ctx, g.planOf(name).timeout)
	defer cancel()
	res, t, err := g.startTask(cctx, job, name)
	switch {
	case err != nil:
		res, err := g.taskCallFailure(ctx, cctx, name, retry, err)
		return res, true, err
	case t == nil:
		return res, true, nil // the upstream answered inline
	}
	if err := g.record(ctx, job, name, retry, t); err != nil {
		return nil, true, err
	}
	res, err = g.followTask(ctx, job, name, retry, t)
	g.settleTask(ctx, t, err)
	return res, true, err
}

// startTask makes the upstream call of a run that may become an upstream
// task, within ctx and an in-flight slot.
func (g *Gateway) startTask(ctx context.Context, job *worker.Job, name string) (*mcp.CallToolResult, upstreamTask, error) {
	if !g.isOffered(name) {
		return nil, nil, errToolGone
	}
	release, err := g.acquire(ctx)
	if err != nil {
		return nil, nil, &client.ConnectionError{Op: mcp.MethodToolsCall, Err: err}
	}
	defer release()
	args := job.Arguments()
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	return g.tasks.callTask(ctx, name, args, jobProgress(job))
}

// record saves the ID of t (and its session) as the job's checkpoint
// before the run waits on it. When it cannot, t is cancelled: a run after
// a crash would not find it.
func (g *Gateway) record(ctx context.Context, job *worker.Job, name string, retry bool, t upstreamTask) error {
	sid, version := t.Session()
	err := job.Checkpoint(upstreamTaskState{Task: t.ID(), Session: sid, Version: version, Settled: g.toldSettled(sid)})
	switch {
	case err == nil:
		return nil
	case errors.Is(err, worker.ErrNoCheckpoints):
		g.log.Warn("gateway: the store keeps no checkpoints; a run after a crash cannot follow the upstream task", "tool", name)
		return nil
	}
	g.cancelUpstream(t, name)
	if errors.Is(err, backend.ErrLeaseLost) {
		return context.Cause(ctx) // nothing is written
	}
	g.log.Warn("gateway: recording an upstream task failed; it was cancelled", "tool", name, "retry", retry)
	if retry {
		return fmt.Errorf("gateway: recording the upstream task: %w", err)
	}
	return mcp.NewError(mcp.CodeInternalError, textNotRecorded)
}

// followTask polls the upstream task t (tasks/get at its pollIntervalMs,
// clamped) within Options.TaskCallTimeout, reporting its status message
// to the job and relaying its input requests, until it finishes.
func (g *Gateway) followTask(ctx context.Context, job *worker.Job, name string, retry bool, t upstreamTask) (*mcp.CallToolResult, error) {
	fctx, cancel := context.WithTimeout(ctx, g.planOf(name).timeout)
	defer cancel()
	following(ctx, t.ID())
	if rt, ok := t.(routedTask); ok {
		defer rt.route(ctx)() // a stdio upstream's requests for t
	}
	last := ""
	answered := map[string]bool{}
	for {
		d, err := within(fctx, t.Get)
		if err != nil {
			return g.followFailure(ctx, fctx, job, name, retry, t, err)
		}
		if d.StatusMessage != "" && d.StatusMessage != last {
			last = d.StatusMessage
			_ = job.ReportStatus(progressText(last)) // valid: progressText made it so
		}
		switch {
		case d.Status.Terminal():
			return g.taskOutcome(ctx, fctx, job, name, retry, t, d)
		case d.Status == mcp.TaskInputRequired && len(d.InputRequests) == 0:
			// A 2025-11-25 task sends its requests on the stream of
			// tasks/result, where the client's handlers relay them
			// (relay.go); it answers once the task has finished.
			return g.waitOutcome(ctx, fctx, job, name, retry, t, t.Wait)
		case d.Status == mcp.TaskInputRequired:
			if err := g.relayInput(fctx, job, t, d, answered); err != nil {
				return nil, err
			}
		}
		if err := pause(fctx, taskPoll(d)); err != nil {
			return g.followFailure(ctx, fctx, job, name, retry, t, err)
		}
	}
}

// taskOutcome is the run's outcome for the finished upstream task d: its
// result (isError or not), or its failure mapped as an inline call's
// JSON-RPC error is.
func (g *Gateway) taskOutcome(ctx, fctx context.Context, job *worker.Job, name string, retry bool, t upstreamTask, d *mcp.DetailedTask) (*mcp.CallToolResult, error) {
	if d.Status == mcp.TaskCancelled {
		g.log.Warn("gateway: the upstream cancelled a task", "tool", name)
		return nil, mcp.NewError(mcp.CodeInternalError, textTaskCancelled)
	}
	// Under 2026-07-28 the outcome is in d; under 2025-11-25 it takes
	// tasks/result, which answers at once for a finished task.
	return g.waitOutcome(ctx, fctx, job, name, retry, t, func(ctx context.Context) (*mcp.CallToolResult, error) {
		return within(ctx, t.Wait)
	})
}

// waitOutcome is the run's outcome from wait, which returns the outcome of
// the upstream task t (its result, or the client's task errors).
func (g *Gateway) waitOutcome(ctx, fctx context.Context, job *worker.Job, name string, retry bool, t upstreamTask,
	wait func(context.Context) (*mcp.CallToolResult, error)) (*mcp.CallToolResult, error) {
	res, err := wait(fctx)
	var (
		failed    *client.TaskFailedError
		cancelled *client.TaskCancelledError
	)
	switch {
	case err == nil:
		return res, nil
	case errors.As(err, &cancelled):
		g.log.Warn("gateway: the upstream cancelled a task", "tool", name)
		return nil, mcp.NewError(mcp.CodeInternalError, textTaskCancelled)
	case errors.As(err, &failed):
		g.log.Warn("gateway: an upstream task failed", "tool", name, "category", string(catRPC), "retry", retry)
		if !retry {
			return nil, upstreamError(failed.Err)
		}
		return g.spent(job, "failed")
	}
	return g.followFailure(ctx, fctx, job, name, retry, t, err)
}

// followFailure is the run's outcome when following the upstream task
// failed with err. ctx is the run's context, fctx the follow's.
func (g *Gateway) followFailure(ctx, fctx context.Context, job *worker.Job, name string, retry bool, t upstreamTask, err error) (*mcp.CallToolResult, error) {
	var auth *client.AuthError
	switch {
	case ctx.Err() != nil:
		cause := context.Cause(ctx)
		if errors.Is(cause, worker.ErrCancelRequested) {
			g.cancelUpstream(t, name)
		}
		// A cancellation cancels the task; a shutdown releases the job
		// and a lost lease writes nothing: the next run follows t.
		return nil, cause
	case fctx.Err() != nil:
		g.log.Warn("gateway: an upstream task did not finish within TaskCallTimeout; cancelling it", "tool", name, "retry", retry)
		g.cancelUpstream(t, name)
		if !retry {
			return nil, mcp.NewError(mcp.CodeInternalError, fmt.Sprintf(
				"The upstream task did not finish within %v and was cancelled.%s", g.planOf(name).timeout, textNotRepeated))
		}
		return g.spent(job, "timeout")
	case errors.Is(err, client.ErrTaskNotFound):
		g.log.Warn("gateway: the upstream no longer knows a task", "tool", name)
		return nil, mcp.NewError(mcp.CodeInternalError, textTaskLost)
	case errors.As(err, &auth):
		g.log.Warn("gateway: following an upstream task failed", "tool", name, "category", string(catAuth))
		return nil, mcp.NewError(mcp.CodeInternalError, "The upstream server refused the gateway's credentials.")
	}
	cat := classify(fctx, err)
	g.log.Warn("gateway: following an upstream task failed; the next run follows it again", "tool", name, "category", string(cat))
	// Following again repeats no call: retried for every task tool.
	return nil, worker.Unavailable(fmt.Errorf("gateway: following the upstream task: %s: %w", cat, errFollowAgain))
}

// spent marks the job's upstream task spent, so that the next run of the
// retry tool calls again, and returns the error that retries the job.
func (g *Gateway) spent(job *worker.Job, what string) (*mcp.CallToolResult, error) {
	if err := job.Checkpoint(upstreamTaskState{}); err != nil && !errors.Is(err, worker.ErrNoCheckpoints) {
		return nil, fmt.Errorf("gateway: marking the upstream task spent: %w", err)
	}
	return nil, fmt.Errorf("gateway: upstream task %s", what)
}

// cancelUpstream sends tasks/cancel for t, best effort, within
// cancelTimeout.
func (g *Gateway) cancelUpstream(t upstreamTask, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	if err := t.Cancel(ctx); err != nil {
		g.log.Warn("gateway: cancelling an upstream task failed", "tool", name, "category", string(classify(ctx, err)))
	}
}

// relayInput relays the input requests of the upstream task t, which d
// shows input_required, as the job's input round (worker.Job.Ask, under
// keys derived from t and the request): while the client has not answered
// them all, the run ends waiting (worker.ErrInputPending) and the next run
// follows t again; once it has, the answers go to t (tasks/update) and the
// run follows on. answered holds the upstream keys this run has answered,
// so that t, still input_required at the next poll, is not answered twice.
// No call is repeated, so this holds for every task tool.
func (g *Gateway) relayInput(ctx context.Context, job *worker.Job, t upstreamTask, d *mcp.DetailedTask, answered map[string]bool) error {
	responses := mcp.InputResponses{}
	pending := false
	for key, req := range d.InputRequests {
		if answered[key] || req == nil {
			continue
		}
		ans, err := job.Ask(ctx, taskInputKey(t.ID(), key, req), req)
		switch {
		case errors.Is(err, worker.ErrInputPending):
			pending = true
		case err != nil:
			return err
		default:
			responses[key] = ans
		}
	}
	if pending {
		return worker.ErrInputPending
	}
	if len(responses) == 0 {
		return nil
	}
	if _, err := within(ctx, func(ctx context.Context) (struct{}, error) { return struct{}{}, t.Answer(ctx, responses) }); err != nil {
		return fmt.Errorf("gateway: answering the upstream task: %w", err)
	}
	for key := range responses {
		answered[key] = true
	}
	return nil
}

// taskInputKey is the input round key of the request key of upstream task
// id: another upstream task of the same job (a retry's) asks anew.
func taskInputKey(id, key string, req *mcp.InputRequest) string {
	return inputKey(req.Method, []byte(id+"\x00"+key+"\x00"+string(req.Params)))
}

// taskPoll is the interval before the next tasks/get of d: the upstream's
// suggestion, clamped.
func taskPoll(d *mcp.DetailedTask) time.Duration {
	switch {
	case d.PollIntervalMs == nil:
		return defaultTaskPoll
	case *d.PollIntervalMs >= maxTaskPoll.Milliseconds():
		return maxTaskPoll
	}
	return max(time.Duration(*d.PollIntervalMs)*time.Millisecond, minTaskPoll)
}

// within runs one upstream request fn within taskRequestTimeout.
func within[T any](ctx context.Context, fn func(context.Context) (T, error)) (T, error) {
	ctx, cancel := context.WithTimeout(ctx, taskRequestTimeout)
	defer cancel()
	return fn(ctx)
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
