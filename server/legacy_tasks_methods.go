package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// The 2025-11-25 task methods. Each runs only in a session that got the
// tasks capability (servesLegacyTasks); the session layer answers the others
// with -32601. Unknown, expired, malformed and other callers' task IDs get
// errTaskNotFound, byte for byte, as on the modern path.

// Bounds of the legacy task methods.
const (
	// legacyListLimit bounds a tasks/list page.
	legacyListLimit = 100
	// legacyCancelWait bounds how long tasks/cancel waits for the task to
	// reach a terminal state after recording the intent: cancellation is
	// cooperative (the worker stops), so the answer may still say working.
	legacyCancelWait = 2 * time.Second
	// legacyMaxAsks bounds the input requests one tasks/result or inline
	// wait sends over its lifetime.
	legacyMaxAsks = 64
)

// errTaskCancelled is what tasks/result answers for a cancelled task: the
// underlying request has no result.
var errTaskCancelled = newProtocolError(http.StatusOK, mcp.NewError(mcp.CodeRequestCancelled, "Request cancelled: the task was cancelled"))

// errNoLister is tasks/list on a manager that cannot list.
var errNoLister = errMethodNotFound

// legacyGetTask runs tasks/get: the task in its 2025-11-25 shape.
func (ep *Endpoint) legacyGetTask(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	return c.managerCall(ctx, func(ctx context.Context) (any, error) {
		t, err := c.findOwn(ctx, c.params.TaskID)
		if err != nil {
			return nil, err
		}
		lt := legacyTask(t)
		return &lt, nil
	})
}

// findOwn reads a task for this request; not found and a snapshot of
// another ID are task.ErrNotFound.
func (c *call) findOwn(ctx context.Context, id string) (task.Task, error) {
	t, found, err := c.srv.opts.TaskManager.FindTask(ctx, c.requestContext(id))
	switch {
	case err != nil:
		return task.Task{}, err
	case !found || t.ID() != id:
		return task.Task{}, task.ErrNotFound
	}
	return t, nil
}

// legacyCancelTask runs tasks/cancel. A terminal task is refused with
// -32602 (2025-11-25 requires it); otherwise the durable cancel intent is
// recorded, the task is given legacyCancelWait to end, and its latest state
// is returned.
func (ep *Endpoint) legacyCancelTask(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	return c.managerCall(ctx, func(ctx context.Context) (any, error) {
		id := c.params.TaskID
		t, err := c.findOwn(ctx, id)
		if err != nil {
			return nil, err
		}
		if t.Status().Terminal() {
			return nil, invalidParams(fmt.Sprintf("Invalid params: cannot cancel a task in terminal status %q", legacyTask(t).Status))
		}
		w := c.srv.watchTask(id)
		defer w.stop()
		if err := c.srv.opts.TaskManager.RequestCancel(ctx, c.requestContext(id)); err != nil {
			return nil, err
		}
		wctx, cancel := context.WithTimeout(ctx, legacyCancelWait)
		defer cancel()
		last, err := c.awaitTask(wctx, w, c.requestContext(id), legacyCancelWait, func(t task.Task) (bool, error) {
			return t.Status().Terminal(), nil
		})
		switch {
		case errors.Is(err, errWaitEnded) && ctx.Err() != nil:
			return nil, errDeadline
		case errors.Is(err, errWaitEnded):
			if last.IsZero() {
				last = t
			}
		case err != nil:
			return nil, err
		}
		lt := legacyTask(last)
		return &lt, nil
	})
}

// legacyListTasks runs tasks/list: one page of the caller's own tasks, as
// the manager's task.Lister returns them. Without a Lister the method does
// not exist (the capability does not declare it either).
func (ep *Endpoint) legacyListTasks(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	lister, ok := c.srv.opts.TaskManager.(task.Lister)
	if !ok {
		return nil, OutcomeProtocolError, errNoLister
	}
	cursor := ""
	if c.params.Cursor != nil {
		cursor = *c.params.Cursor
		if cursor == "" || len(cursor) > 1024 {
			return nil, OutcomeProtocolError, errBadCursor
		}
	}
	res, err := c.runBounded(ctx, func(ctx context.Context) (any, error) {
		page, err := lister.ListTasks(ctx, task.ListQuery{
			Request: c.requestContext(""), Cursor: cursor, Limit: min(ep.opts.PageSize, legacyListLimit),
		})
		if err != nil {
			return nil, err
		}
		out := &mcp.LegacyListTasksResult{Tasks: make([]mcp.LegacyTask, 0, len(page.Tasks)), NextCursor: page.NextCursor}
		for _, t := range page.Tasks {
			out.Tasks = append(out.Tasks, legacyTask(t))
		}
		return out, nil
	})
	switch {
	case err == nil:
		return res, OutcomeComplete, nil
	case errors.Is(err, task.ErrBadCursor):
		return nil, OutcomeProtocolError, errBadCursor
	case errors.Is(err, errDeadline):
		return nil, OutcomeTimeout, errDeadline
	case errors.Is(err, errQueueFull):
		return nil, OutcomeBusy, errQueueFull
	}
	c.srv.logger.Error("task listing failed", "endpoint", ep.opts.Name, "err", c.redactErr(err))
	return nil, OutcomeInternalError, storeFailure(err)
}

// clientAsker sends one server-to-client request (method and params) on
// the stream of the request being served and returns the client's result,
// or an error when the client answered with one, the stream ended or ctx
// ended. The legacy session layer provides it.
type clientAsker func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// taskInputRelay sends a task's outstanding input requests to the client as
// real requests, each key once, and stores the answers with
// Manager.UpdateTask. The requests are tagged with the related-task _meta
// key when the client knows the task (tasks/result), and sent as stored
// when it does not (an inline wait for a client without tasks, which never
// saw the task ID). Its goroutines belong to the waiting request: wait ends
// them.
type taskInputRelay struct {
	c       *call
	ask     clientAsker
	related bool // tag requests with the related-task _meta key
	rc      task.RequestContext
	ctx     context.Context
	wake    func() // wakes the wait, to end it at once with err
	wg      sync.WaitGroup
	mu      sync.Mutex
	sent    map[string]bool
	err     error // the first answer that could not be stored
}

func newTaskInputRelay(ctx context.Context, c *call, ask clientAsker, related bool, rc task.RequestContext, w *taskWatch) *taskInputRelay {
	wake := func() {
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return &taskInputRelay{c: c, ask: ask, related: related, rc: rc, ctx: ctx, wake: wake, sent: map[string]bool{}}
}

// relay sends the requests of t not sent yet. It fails when the session's
// client did not declare what a request needs (nothing is sent then), when
// a stored request is not one the origin declared, or when too many
// requests were sent.
func (r *taskInputRelay) relay(t task.Task) error {
	reqs := t.InputRequests()
	if err := r.c.srv.validator.InputRequests(t.Origin(), reqs); err != nil {
		r.c.srv.logger.Error("a stored task input request is invalid for its origin", "endpoint", r.c.ep.opts.Name)
		return errInternal
	}
	if missing := missingCapabilitiesOf(r.c.params.Meta.ClientCapabilities, inputCapabilities(reqs)); missing != nil {
		return newProtocolError(http.StatusOK, mcp.NewError(mcp.CodeInvalidRequest,
			"Invalid request: the task needs input this session's client did not declare ("+capabilityNames(missing)+")"))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	for _, key := range slices.Sorted(maps.Keys(reqs)) {
		if r.sent[key] {
			continue
		}
		if len(r.sent) >= legacyMaxAsks {
			return errInternal
		}
		r.sent[key] = true
		req := reqs[key]
		params := req.Params
		if r.related {
			var err error
			if params, err = relatedParams(req.Params, t.ID()); err != nil {
				return errInternal
			}
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.answer(key, req, params)
		}()
	}
	return nil
}

// answer asks one question and stores the answer. An answer that cannot
// be stored ends the wait with an error that says why: the client answered
// with an error, the answer does not match the request (task.CheckAnswer)
// or is too large, or the manager failed. A key is asked once per wait;
// the task stays input_required and a new tasks/result (or retried call)
// asks again.
func (r *taskInputRelay) answer(key string, req *mcp.InputRequest, params json.RawMessage) {
	raw, err := r.ask(r.ctx, req.Method, params)
	if r.ctx.Err() != nil {
		return // the wait is over
	}
	var pe *protocolError
	switch {
	case errors.As(err, &pe):
		r.fail(pe)
		return
	case err != nil:
		r.fail(errInternal)
		return
	case len(raw) > r.c.srv.taskLimits.answerBytes:
		r.fail(invalidParams(fmt.Sprintf("Invalid params: the answer to input request %q exceeds %d bytes", key, r.c.srv.taskLimits.answerBytes)))
		return
	}
	if err := task.CheckAnswer(req, raw); err != nil {
		r.fail(invalidParams(fmt.Sprintf("Invalid params: the answer to input request %q: %v", key, err)))
		return
	}
	ctx, cancel := context.WithTimeout(r.ctx, r.c.srv.opts.RequestTimeout)
	defer cancel()
	err = r.c.srv.opts.TaskManager.UpdateTask(ctx, task.UpdateContext{
		RequestContext: r.rc, Responses: mcp.InputResponses{key: raw},
	})
	switch {
	case err == nil || r.ctx.Err() != nil:
	case errors.Is(err, task.ErrNotFound):
		r.fail(errTaskNotFound)
	default:
		r.c.srv.logger.Error("storing a task input answer failed", "endpoint", r.c.ep.opts.Name, "err", r.c.redactErr(err))
		r.fail(storeFailure(err))
	}
}

// fail records the first error of the relay and wakes the wait, which
// then ends with it.
func (r *taskInputRelay) fail(pe *protocolError) {
	r.mu.Lock()
	if r.err == nil {
		r.err = pe
	}
	r.mu.Unlock()
	r.wake()
}

// wait waits for every question in flight; ctx must have ended or every
// question been answered.
func (r *taskInputRelay) wait() { r.wg.Wait() }

// relatedParams adds the related-task _meta key to a request's params.
func relatedParams(params json.RawMessage, taskID string) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if len(params) > 0 {
		if err := json.Unmarshal(params, &m); err != nil {
			return nil, err
		}
	}
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := m["_meta"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &meta); err != nil {
			return nil, err
		}
	}
	rel, err := json.Marshal(mcp.RelatedTaskMeta{TaskID: taskID})
	if err != nil {
		return nil, err
	}
	meta[mcp.MetaRelatedTask] = rel
	if m["_meta"], err = json.Marshal(meta); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// capabilityNames names the members of a missing-capabilities object.
func capabilityNames(c *mcp.ClientCapabilities) string {
	var names []string
	if e := c.Elicitation; e != nil {
		if e.Form != nil {
			names = append(names, "elicitation")
		}
		if e.URL != nil {
			names = append(names, "elicitation.url")
		}
	}
	if c.Sampling != nil {
		names = append(names, "sampling")
	}
	if c.Roots != nil {
		names = append(names, "roots")
	}
	if len(names) == 0 {
		return "input"
	}
	out := names[0]
	for _, n := range names[1:] {
		out += ", " + n
	}
	return out
}

// failure returns the error that ends the wait, or nil.
func (r *taskInputRelay) failure() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		return nil
	}
	return r.err
}
