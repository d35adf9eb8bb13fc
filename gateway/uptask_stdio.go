package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/internal/mcpstdio"
	"github.com/taskwire/taskwire/mcp"
)

// Upstream tasks over stdio. A stdio upstream is a taskCaller of its own
// (there is one session per process, no second client): when the running
// process negotiated 2025-11-25, advertises tasks.requests.tools.call and
// lists the tool with execution.taskSupport "optional" or "required", a
// task tool's run asks for a task (params.task) and follows it with the
// code every upstream task goes through (uptask.go): tasks/get at the
// upstream's pollInterval, tasks/result for its outcome and, on its
// stream, its input requests, tasks/cancel. Otherwise the call is made
// inline. The process session is implicit: the checkpoint names the task
// alone, and a run after a restart of the process (or of the gateway)
// asks whichever process runs now; one that answers it does not know the
// task (an upstream without a durable task store) is a lost task.
//
// stdio ties no server request to a call: a request carrying the
// related-task _meta key is routed to the run that follows that task
// (stdioRoutes), whatever else is in flight.

// stdioRoutes maps the upstream tasks the runs of this process follow to
// the runs' contexts, which carry what relay needs (relayKey).
type stdioRoutes struct {
	mu sync.Mutex
	m  map[string]*stdioRoute // by task ID: a capability, never logged
}

// stdioRoute is one run's claim on the requests of a task.
type stdioRoute struct{ ctx context.Context }

// add routes the requests of the task id to ctx until the returned
// function is called. A later claim on the same task (a new run) takes
// over; ending an older one leaves it in place.
func (r *stdioRoutes) add(id string, ctx context.Context) (remove func()) {
	rt := &stdioRoute{ctx: ctx}
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]*stdioRoute{}
	}
	r.m[id] = rt
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if r.m[id] == rt {
			delete(r.m, id)
		}
		r.mu.Unlock()
	}
}

// of returns the context of the run that follows the task id, or nil.
func (r *stdioRoutes) of(id string) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if rt := r.m[id]; rt != nil {
		return rt.ctx
	}
	return nil
}

// routedTask is an upstream task whose server requests reach the gateway
// outside the requests of the task itself (stdio): route sends them to
// the run of ctx while it follows the task.
type routedTask interface {
	route(ctx context.Context) (remove func())
}

// relatedTask is the task ID of the related-task _meta key of a server
// request's params; empty when it carries none.
func relatedTask(params json.RawMessage) string {
	var p struct {
		Meta struct {
			Related *mcp.RelatedTaskMeta `json:"io.modelcontextprotocol/related-task"`
		} `json:"_meta"`
	}
	if json.Unmarshal(params, &p) != nil || p.Meta.Related == nil {
		return ""
	}
	return p.Meta.Related.TaskID
}

// stdioCallParams are the params of a task-augmented tools/call.
type stdioCallParams struct {
	mcp.CallToolParams
	Task *mcp.TaskMetadata `json:"task,omitempty"`
}

// offersTask reports whether the process of c runs the tool name as a
// 2025-11-25 task: it negotiated 2025-11-25, advertises task-augmented
// tools/call, and its latest listing gives the tool a taskSupport that
// allows one. required reports "required".
func (u *stdioUpstream) offersTask(c *mcpstdio.Conn, name string) (offered, required bool) {
	init := c.Initialized()
	caps := init.Capabilities
	if !u.declaresTasks || init.ProtocolVersion != mcp.ProtocolVersion20251125 || caps == nil || caps.Tasks == nil ||
		caps.Tasks.Requests == nil || caps.Tasks.Requests.Tools == nil || caps.Tasks.Requests.Tools.Call == nil {
		return false, false
	}
	u.emu.Lock()
	support := u.exec[name]
	u.emu.Unlock()
	return support == mcp.TaskSupportOptional || support == mcp.TaskSupportRequired, support == mcp.TaskSupportRequired
}

// callTask calls the tool name, asking for a task where the running
// process offers one for it (offersTask); otherwise it is callTool.
func (u *stdioUpstream) callTask(ctx context.Context, name string, args json.RawMessage, progress func(client.Progress)) (*mcp.CallToolResult, upstreamTask, error) {
	res, id, err := u.toolsCall(ctx, name, args, progress, true)
	switch {
	case err != nil:
		return nil, nil, err
	case id != "":
		return nil, &stdioTask{u: u, id: id}, nil
	}
	return res, nil, nil
}

// task is a handle on the task of st on whichever process runs when it
// is used: the stdio session is implicit, so st names no session.
func (u *stdioUpstream) task(st upstreamTaskState) (upstreamTask, func(), error) {
	return &stdioTask{u: u, id: st.Task}, func() {}, nil
}

// decodeCall decodes the answer to a tools/call that may have asked for a
// task: a CreateTaskResult (the task's ID) or an inline result.
func decodeCall(raw json.RawMessage) (*mcp.CallToolResult, string, error) {
	var probe struct {
		Task *mcp.LegacyTask `json:"task"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, "", &client.ProtocolError{Method: mcp.MethodToolsCall, Reason: "a malformed result", Err: err}
	}
	if probe.Task != nil {
		if probe.Task.TaskID == "" {
			return nil, "", &client.ProtocolError{Method: mcp.MethodToolsCall, Reason: "a task without taskId"}
		}
		return nil, probe.Task.TaskID, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, "", &client.ProtocolError{Method: mcp.MethodToolsCall, Reason: "a malformed result", Err: err}
	}
	return &res, "", nil
}

// stdioTask is a 2025-11-25 task of a stdio upstream.
type stdioTask struct {
	u  *stdioUpstream
	id string
}

func (t *stdioTask) ID() string { return t.id }

// Session is empty: the process's session is implicit, and a later run
// asks whichever process runs then.
func (t *stdioTask) Session() (string, string) { return "", "" }

func (t *stdioTask) route(ctx context.Context) func() { return t.u.routes.add(t.id, ctx) }

func (t *stdioTask) Get(ctx context.Context) (*mcp.DetailedTask, error) {
	var lt mcp.LegacyTask
	if err := t.u.requestInto(ctx, mcp.MethodTasksGet, &mcp.LegacyTaskParams{TaskID: t.id}, &lt); err != nil {
		return nil, taskNotFound(err)
	}
	if lt.TaskID != t.id {
		return nil, &client.ProtocolError{Method: mcp.MethodTasksGet, Reason: "the upstream answered for another task"}
	}
	return &mcp.DetailedTask{TaskInfo: mcp.TaskInfo{
		TaskID: lt.TaskID, Status: lt.Status, StatusMessage: lt.StatusMessage,
		CreatedAt: lt.CreatedAt, LastUpdatedAt: lt.LastUpdatedAt, TTLMs: lt.TTL, PollIntervalMs: lt.PollInterval,
	}}, nil
}

// Wait is the blocking tasks/result: the task's result, or, for the
// JSON-RPC error of a task that failed or was cancelled, the client
// package's task errors (as client.Task.Wait returns them).
func (t *stdioTask) Wait(ctx context.Context) (*mcp.CallToolResult, error) {
	var res mcp.CallToolResult
	err := t.u.requestInto(ctx, mcp.MethodTasksResult, &mcp.LegacyTaskParams{TaskID: t.id}, &res)
	var rpc *client.RPCError
	switch {
	case err == nil:
		return &res, nil
	case !errors.As(err, &rpc):
		return nil, err
	}
	d, gerr := t.Get(ctx)
	switch {
	case gerr != nil:
		return nil, gerr
	case d.Status == mcp.TaskCancelled:
		return nil, &client.TaskCancelledError{TaskID: t.id, StatusMessage: d.StatusMessage}
	}
	return nil, &client.TaskFailedError{TaskID: t.id, StatusMessage: d.StatusMessage, Err: rpc}
}

func (t *stdioTask) Cancel(ctx context.Context) error {
	var out json.RawMessage
	return taskNotFound(t.u.requestInto(ctx, mcp.MethodTasksCancel, &mcp.LegacyTaskParams{TaskID: t.id}, &out))
}

// Answer is not part of 2025-11-25: its input is answered on the stream
// of tasks/result (relay.go).
func (t *stdioTask) Answer(context.Context, mcp.InputResponses) error { return client.ErrUnsupported }

// taskNotFound maps the -32602 an upstream answers for a task it does not
// know to client.ErrTaskNotFound, as the client does over HTTP.
func taskNotFound(err error) error {
	var rpc *client.RPCError
	if errors.As(err, &rpc) && rpc.Code == mcp.CodeInvalidParams {
		return fmt.Errorf("%w: %w", client.ErrTaskNotFound, err)
	}
	return err
}
