package server

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// legacyTaskHooks returns the hooks through which the 2025-11-25 tasks and
// waiting inline serve legacy sessions (see legacyHooks). It runs before
// buildTasks, so every hook reads the endpoint's Tasks configuration when
// it is called, not now.
func (ep *Endpoint) legacyTaskHooks(*Server) (legacyHooks, error) {
	gated := func(f methodFunc) methodFunc {
		return func(ctx context.Context, c *call) (any, Outcome, *protocolError) {
			if c.legacy == nil || !ep.sessionHasTasks(c.legacy) {
				return nil, OutcomeProtocolError, errMethodNotFound
			}
			return f(ctx, c)
		}
	}
	return legacyHooks{
		capabilities: func(version string, client *mcp.LegacyClientCapabilities, caps *mcp.LegacyServerCapabilities) {
			caps.Tasks = ep.legacyTasksCapability(version, client)
		},
		toolView: func(lc *legacyCall, t *toolEntry) (*mcp.ToolExecution, bool) {
			v := t.legacyView(ep.sessionHasTasks(lc))
			return v.execution, !v.hidden
		},
		callTool: ep.legacyTaskCallTool,
		methods: map[string]methodFunc{
			mcp.MethodTasksGet:    gated(ep.legacyGetTask),
			mcp.MethodTasksResult: gated(ep.legacyTaskResult),
			mcp.MethodTasksList:   gated(ep.legacyListTasks),
			mcp.MethodTasksCancel: gated(ep.legacyCancelTask),
		},
	}, nil
}

// sessionHasTasks reports whether the session of lc gets the 2025-11-25
// tasks.
func (ep *Endpoint) sessionHasTasks(lc *legacyCall) bool {
	return ep.servesLegacyTasks(lc.version(), lc.session.legacyCaps)
}

// withTaskCreation makes the call one that may create a task: the legacy
// session's request capabilities gain the Tasks extension, which the
// task-required tool's capability check and creationContext look for.
func (c *call) withTaskCreation() {
	m := *c.params.Meta
	caps := mcp.ClientCapabilities{}
	if m.ClientCapabilities != nil {
		caps = *m.ClientCapabilities
	}
	caps.Extensions = maps.Clone(caps.Extensions)
	if caps.Extensions == nil {
		caps.Extensions = map[string]mcp.Object{}
	}
	caps.Extensions[mcp.ExtensionTasks] = mcp.Object{}
	m.ClientCapabilities = &caps
	c.params.Meta = &m
}

// errTaskRequired is a task-required tool called without params.task by a
// client that has tasks (2025-11-25 requires -32601).
var errTaskRequired = newProtocolError(http.StatusOK, mcp.NewError(mcp.CodeMethodNotFound,
	"Method not found: this tool must be called as a task (params.task)"))

// errNeedsTaskClient is a task-required tool that does not wait inline,
// called by a legacy client without tasks.
var errNeedsTaskClient = newProtocolError(http.StatusOK, mcp.NewError(mcp.CodeInvalidRequest,
	"Invalid request: this tool runs only as a durable task; use a client with 2025-11-25 tasks "+
		"(capability tasks) or the 2026-07-28 Tasks extension"))

// legacyTaskCallTool runs tools/call of a task-capable tool in a legacy
// session (core's legacyCallTool has checked that the caller may see it):
//
//   - with tasks and params.task: the task is created through the tool's
//     handler, exactly as a modern call creates it, and the answer is a
//     2025-11-25 CreateTaskResult;
//   - with tasks, without params.task: a task-required tool is -32601; an
//     optional one answers inline;
//   - without tasks: an optional tool answers inline, a task-required tool
//     waits inline when it opted in (WithWaitInline) and is refused
//     otherwise. A params.task is ignored, as the spec requires of a
//     receiver that did not declare the capability.
func (ep *Endpoint) legacyTaskCallTool(ctx context.Context, lc *legacyCall, t *toolEntry) (any, Outcome, *protocolError) {
	c := lc.c
	hasTasks := ep.sessionHasTasks(lc)
	augmented, perr := taskParam(c.req.Params)
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	switch {
	case hasTasks && augmented:
		return ep.createLegacyTask(ctx, lc)
	case t.mode == taskOptional:
		return ep.callTool(ctx, c)
	case hasTasks:
		return nil, OutcomeProtocolError, errTaskRequired
	case t.waitInline:
		return ep.waitInline(ctx, lc)
	}
	return nil, OutcomeProtocolError, errNeedsTaskClient
}

// errTaskForbidden is a tool that never runs as a task, called with
// params.task by a client that has tasks (2025-11-25: SHOULD be -32601).
var errTaskForbidden = newProtocolError(http.StatusOK, mcp.NewError(mcp.CodeMethodNotFound,
	"Method not found: this tool cannot be called as a task (its taskSupport is forbidden)"))

// refuseForbiddenTask returns errTaskForbidden when the session has tasks
// and the call carries params.task, and nil otherwise: a client without
// tasks has its params.task ignored.
func (ep *Endpoint) refuseForbiddenTask(lc *legacyCall) *protocolError {
	if !ep.sessionHasTasks(lc) {
		return nil
	}
	augmented, perr := taskParam(lc.c.req.Params)
	if perr != nil {
		return perr
	}
	if augmented {
		return errTaskForbidden
	}
	return nil
}

// taskParam reports whether tools/call params carry a "task" member, which
// must be a TaskMetadata object. Its ttl is a request the server may
// override: the task's lifetime is the manager's (the tool's enqueue
// options), so it is not used.
func taskParam(params json.RawMessage) (bool, *protocolError) {
	if len(params) == 0 {
		return false, nil
	}
	var raw json.RawMessage
	err := mcp.EachMember(params, func(name, value []byte) error {
		if string(name) == "task" {
			raw = value
		}
		return nil
	})
	if err != nil || raw == nil {
		return false, nil // malformed params were refused before
	}
	var m mcp.TaskMetadata
	if err := json.Unmarshal(raw, &m); err != nil {
		return false, invalidParams("Invalid params: task must be an object with an optional non-negative integer ttl")
	}
	return true, nil
}

// createLegacyTask creates the task of a task-augmented tools/call and
// answers with the 2025-11-25 CreateTaskResult. Status changes of the task
// are then sent on the session's GET stream (notifications/tasks/status).
func (ep *Endpoint) createLegacyTask(ctx context.Context, lc *legacyCall) (any, Outcome, *protocolError) {
	c := lc.c
	c.withTaskCreation()
	res, outcome, perr := ep.callTool(ctx, c)
	created, ok := res.(*mcp.CreateTaskResult)
	if perr != nil || !ok {
		return res, outcome, perr // an inline answer (optional tool, tool error) or an error
	}
	lt := legacyTaskFromInfo(created.TaskInfo)
	if lt.Status == task.Completed {
		// An idempotent retry may return a finished task: its result
		// decides whether 2025-11-25 calls it failed.
		if t, err := c.findOwn(ctx, lt.TaskID); err == nil {
			lt = legacyTask(t)
		}
	}
	ep.followStatus(lc, lt)
	return &mcp.LegacyCreateTaskResult{Task: lt}, outcome, nil
}

// legacyTaskFromInfo renders a creation snapshot as a 2025-11-25 Task.
func legacyTaskFromInfo(info mcp.TaskInfo) mcp.LegacyTask {
	return mcp.LegacyTask{
		TaskID: info.TaskID, Status: info.Status, StatusMessage: info.StatusMessage,
		CreatedAt: info.CreatedAt, LastUpdatedAt: info.LastUpdatedAt,
		TTL: info.TTLMs, PollInterval: info.PollIntervalMs, Meta: info.Meta,
	}
}

// legacyTaskResult runs tasks/result in a session with tasks.
func (ep *Endpoint) legacyTaskResult(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	wctx, stop, perr := c.waitContext()
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	defer stop()
	return ep.legacyTaskResultFor(wctx, c, c.srv.inlineTaskWait(), c.legacy.asker())
}

// waitContext is the context of a long wait: it ends when the client
// leaves, when the request is cancelled (notifications/cancelled, DELETE
// of the session) and when the server closes, but not at the request
// deadline, which bounds handlers (Options.InlineTaskWait bounds the
// wait). It takes one of the node's Options.MaxTaskWaits slots, and
// refuses with 503 busy when they, or the caller's quarter of them, are
// taken. stop releases the context and the slot.
func (c *call) waitContext() (ctx context.Context, stop func(), perr *protocolError) {
	release, ok := c.srv.legacy.tasks.waits.acquire(c.id.Tenant+"\x00"+c.id.Principal, c.srv.maxTaskWaits())
	if !ok {
		return nil, nil, errTooManyWaits
	}
	ctx, cancel := context.WithCancel(c.r.Context())
	unhook := context.AfterFunc(c.srv.legacy.tasks.closing(), cancel)
	return ctx, func() { unhook(); cancel(); release() }, nil
}

// asker adapts the legacy call's server-to-client requests.
func (lc *legacyCall) asker() clientAsker {
	return func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
		res, perr := lc.request(ctx, method, params)
		if perr != nil {
			return nil, perr
		}
		return res, nil
	}
}
