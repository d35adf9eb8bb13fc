package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Task is a handle on a task the server runs. A handle holds only the ID
// and what the client last saw, so Client.Task rebuilds one from a saved
// ID in another process, later. Methods are safe for concurrent use.
type Task struct {
	c  *Client
	id string

	mu       sync.Mutex
	last     *mcp.DetailedTask
	answered map[string]bool
}

// Task returns a handle on the task with the given ID, for example one
// saved from CallResult.Task.ID. It sends nothing; an unknown ID surfaces
// as ErrTaskNotFound from the handle's methods.
func (c *Client) Task(id string) *Task { return &Task{c: c, id: id, answered: map[string]bool{}} }

// ID returns the task ID. It is a capability: whoever has it may read and
// control the task, so keep it out of logs.
func (t *Task) ID() string { return t.id }

func (t *Task) remember(d *mcp.DetailedTask) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = d
}

func (t *Task) lastSeen() *mcp.DetailedTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// taskHeader is the Mcp-Name header of tasks/* requests.
func (t *Task) params() (*mcp.TaskParams, map[string][]string) {
	return &mcp.TaskParams{TaskID: t.id}, nameHeader(t.id)
}

// notFound maps the -32602 a server answers for an unknown task.
func notFound(err error) error {
	var rpc *RPCError
	if errors.As(err, &rpc) && rpc.Code == mcp.CodeInvalidParams {
		return fmt.Errorf("%w: %w", ErrTaskNotFound, err)
	}
	return err
}

// Get returns the task's current state (tasks/get): status, message, the
// pending input requests, and the result or error of a finished task. It
// fails with ErrTaskNotFound for an unknown or expired task.
func (t *Task) Get(ctx context.Context) (*mcp.DetailedTask, error) {
	e, _, err := t.c.ensure(ctx)
	if err != nil {
		return nil, err
	}
	var d *mcp.DetailedTask
	if e == eraLegacy {
		raw, err := t.c.request(ctx, mcp.MethodTasksGet, &mcp.LegacyTaskParams{TaskID: t.id}, nil)
		if err != nil {
			return nil, notFound(err)
		}
		var lt mcp.LegacyTask
		if err := decodeResult(mcp.MethodTasksGet, raw, &lt); err != nil {
			return nil, err
		}
		d = fromLegacy(&lt)
	} else {
		p, h := t.params()
		raw, err := t.c.request(ctx, mcp.MethodTasksGet, p, h)
		if err != nil {
			return nil, notFound(err)
		}
		var res mcp.GetTaskResult
		if err := decodeResult(mcp.MethodTasksGet, raw, &res); err != nil {
			return nil, err
		}
		d = &res.DetailedTask
	}
	if d.TaskID != t.id {
		return nil, protoErr(mcp.MethodTasksGet, "the server answered for another task", nil)
	}
	t.remember(d)
	return d, nil
}

// fromLegacy maps a 2025-11-25 task to the 2026 shape.
func fromLegacy(lt *mcp.LegacyTask) *mcp.DetailedTask {
	return &mcp.DetailedTask{TaskInfo: mcp.TaskInfo{
		TaskID: lt.TaskID, Status: lt.Status, StatusMessage: lt.StatusMessage,
		CreatedAt: lt.CreatedAt, LastUpdatedAt: lt.LastUpdatedAt, TTLMs: lt.TTL, PollIntervalMs: lt.PollInterval,
	}}
}

// Answer sends answers to some or all of the task's input requests
// (tasks/update). Every key is answered once: a key this handle answered
// before fails with ErrAlreadyAnswered before anything is sent. The server
// acknowledges eventually; the task may show input_required for a while.
// In a 2025-era session input is answered through Options.Handlers and
// Answer fails with ErrUnsupported.
func (t *Task) Answer(ctx context.Context, responses mcp.InputResponses) error {
	if len(responses) == 0 {
		return errors.New("client: Answer needs at least one response")
	}
	e, _, err := t.c.ensure(ctx)
	if err != nil {
		return err
	}
	if e == eraLegacy {
		return ErrUnsupported
	}
	t.mu.Lock()
	for k := range responses {
		if t.answered[k] {
			t.mu.Unlock()
			return fmt.Errorf("%w: %q", ErrAlreadyAnswered, k)
		}
	}
	for k := range responses {
		t.answered[k] = true
	}
	t.mu.Unlock()
	p := &mcp.UpdateTaskParams{TaskID: t.id, InputResponses: responses}
	_, err = t.c.request(ctx, mcp.MethodTasksUpdate, p, nameHeader(t.id))
	if err != nil {
		t.mu.Lock()
		for k := range responses {
			delete(t.answered, k)
		}
		t.mu.Unlock()
		return notFound(err)
	}
	return nil
}

// Cancel asks the server to cancel the task (tasks/cancel). Cancellation is
// cooperative: the task may still complete or fail. Cancelling a finished
// task succeeds. It fails with ErrTaskNotFound for an unknown task.
func (t *Task) Cancel(ctx context.Context) error {
	e, _, err := t.c.ensure(ctx)
	if err != nil {
		return err
	}
	if e == eraLegacy {
		_, err = t.c.request(ctx, mcp.MethodTasksCancel, &mcp.LegacyTaskParams{TaskID: t.id}, nil)
	} else {
		p, h := t.params()
		_, err = t.c.request(ctx, mcp.MethodTasksCancel, p, h)
	}
	return notFound(err)
}

// outcome turns a terminal task into Wait's result.
func outcome(d *mcp.DetailedTask) (*mcp.CallToolResult, error) {
	switch d.Status {
	case mcp.TaskCompleted:
		var res mcp.CallToolResult
		if len(d.Result) == 0 {
			return nil, protoErr(mcp.MethodTasksGet, "completed task without result", nil)
		}
		if err := json.Unmarshal(d.Result, &res); err != nil {
			return nil, protoErr(mcp.MethodTasksGet, "malformed task result", err)
		}
		return &res, nil
	case mcp.TaskFailed:
		e := &RPCError{Code: mcp.CodeInternalError, Message: "task failed without an error", Method: mcp.MethodTasksGet}
		if d.Error != nil {
			e = rpcError(mcp.MethodTasksGet, 200, d.Error)
		}
		return nil, &TaskFailedError{TaskID: d.TaskID, StatusMessage: d.StatusMessage, Err: e}
	case mcp.TaskCancelled:
		return nil, &TaskCancelledError{TaskID: d.TaskID, StatusMessage: d.StatusMessage}
	}
	return nil, protoErr(mcp.MethodTasksGet, "task is not finished", nil)
}

// pollInterval is the latest suggestion of the server, clamped.
func (t *Task) pollInterval(d *mcp.DetailedTask) time.Duration {
	iv := DefaultPollInterval
	if d != nil && d.PollIntervalMs != nil {
		iv = time.Duration(*d.PollIntervalMs) * time.Millisecond
	}
	return min(max(iv, t.c.opts.MinPollInterval), t.c.opts.MaxPollInterval)
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C:
		return nil
	}
}
