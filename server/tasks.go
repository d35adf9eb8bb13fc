package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/taskwire/taskwire/internal/logtext"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// taskMode says whether a tool may or must answer with a task.
type taskMode int

const (
	taskNever    taskMode = iota
	taskOptional          // the handler decides per call
	taskRequired          // every call creates a task; needs the Tasks capability
)

// tasksCapability is the client capability a task-required tool needs.
var tasksCapability = &mcp.ClientCapabilities{Extensions: map[string]mcp.Object{mcp.ExtensionTasks: {}}}

// TaskToolHandlerFor handles calls of a task-required typed tool. It receives
// the validated input and a creation context, and must return the handle of
// a task that is already durably readable through the server's task.Manager
// with cc.Origin stored unchanged. The eventual result of the task must
// satisfy Out's output schema (see task.ValidateResult).
type TaskToolHandlerFor[In, Out any] func(ctx context.Context, req *Request, in In, cc *task.CreationContext) (task.Handle, error)

// RawTaskToolHandler handles a tool that may answer inline or with a task.
// req.TaskCreation() is non-nil only when a task may be created; the handler
// returns either a result or, with that context, a task handle.
type RawTaskToolHandler func(ctx context.Context, req *Request) (*mcp.CallToolResult, *task.Handle, error)

// WithTaskInput declares the kinds of input (task.InputElicitationForm,
// task.InputElicitationURL, task.InputSampling, task.InputRoots) the tool's
// tasks may request while they run. The declaration is stored in each task's
// origin; a stored input request of an undeclared kind is never delivered.
func WithTaskInput(kinds ...string) ToolOption {
	return func(t *toolEntry) { t.inputKinds = append(t.inputKinds, kinds...) }
}

// AddTaskTool registers a task-required typed tool: every call creates a
// task. A client that does not declare the Tasks extension receives HTTP 400
// with -32021 before rate limiting and the handler. In is the input type;
// Out is the eventual result type, whose schema becomes the output schema.
// The endpoint must serve Tasks (see EndpointOptions.TaskProtocolVersions and
// Options.TaskManager), or New fails.
func AddTaskTool[In, Out any](ep *Endpoint, t *mcp.Tool, h TaskToolHandlerFor[In, Out], opts ...ToolOption) {
	tt, err := inferSchemas[In, Out](t)
	if err != nil {
		ep.fail(err)
		return
	}
	ep.addTool(&tt, taskToolFunc(h), append(opts, taskRequiredOption(&tt)))
}

// taskToolFunc is the internal form of a task-required tool's handler.
func taskToolFunc[In, Out any](h TaskToolHandlerFor[In, Out]) toolFunc {
	return func(ctx context.Context, req *Request) (any, error) {
		var in In
		if err := unmarshalArgs(req.Arguments, &in); err != nil {
			return toolInputError(err), nil
		}
		if req.taskCreation == nil {
			return nil, errInternal // unreachable: the capability is required
		}
		return h(ctx, req, in, req.taskCreation)
	}
}

// taskRequiredOption makes an entry of the definition tt task-required.
func taskRequiredOption(tt *mcp.Tool) ToolOption {
	return func(e *toolEntry) {
		e.mode = taskRequired
		e.mirror = len(tt.OutputSchema) > 0
		e.required = mergeCapabilities(e.required, tasksCapability)
	}
}

// AddRawTaskTool registers a tool that may answer inline or create a task,
// per call; see RawTaskToolHandler. t.InputSchema is required.
func (ep *Endpoint) AddRawTaskTool(t *mcp.Tool, h RawTaskToolHandler, opts ...ToolOption) {
	tt := *t
	if len(tt.InputSchema) == 0 {
		ep.fail(fmt.Errorf("tool %q: a raw tool needs an input schema", t.Name))
		return
	}
	fn := func(ctx context.Context, req *Request) (any, error) {
		res, handle, err := h(ctx, req)
		switch {
		case err != nil:
			return nil, err
		case handle != nil:
			return *handle, nil
		case res == nil:
			return nil, nil
		}
		return res, nil
	}
	ep.addTool(&tt, fn, append(opts, func(e *toolEntry) { e.mode = taskOptional }))
}

// TaskCreation returns the creation context when this call may create a
// task: the tool is task-capable, the endpoint serves Tasks for the request's
// protocol version, and the request declared the Tasks extension. Otherwise
// it returns nil and the handler must answer inline.
func (r *Request) TaskCreation() *task.CreationContext { return r.taskCreation }

// CreatedTask returns the handle of t, the snapshot of the task this call
// has just created as the server's task.Manager returned it once the task
// was durably stored (for example backend.Enqueuer.Enqueue's result), and
// lets the server answer the call from t: a handler that returns the handle
// spares the call the read-back with Manager.FindTask that verifies any
// other handle. The server still checks that t has the handle's ID and the
// call's origin (task.Origin.SameCall); when it does not, the server reads
// the task back as for any handle. Call it from the handler, before it
// returns; the last call wins.
func (r *Request) CreatedTask(t task.Task) task.Handle {
	r.created = &t
	return task.Handle{ID: t.ID()}
}

func mergeCapabilities(a, b *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	if a == nil {
		return b
	}
	m := *a
	m.Extensions = map[string]mcp.Object{}
	for k, v := range a.Extensions {
		m.Extensions[k] = v
	}
	for k, v := range b.Extensions {
		m.Extensions[k] = v
	}
	return &m
}

// servesTasks reports whether the endpoint serves the Tasks extension for a
// request of the given protocol version.
func (ep *Endpoint) servesTasks(version string) bool {
	return ep.tasks && slices.Contains(ep.opts.TaskProtocolVersions, version)
}

// servesTasksFor reports whether a call may be offered a creation context:
// the endpoint serves Tasks for the request's version, or the call is one
// of a legacy session that the tasks layer lets create tasks (it then adds
// the Tasks extension to the call's capabilities, see withTaskCreation).
func (c *call) servesTasksFor(version string) bool {
	if c.legacy != nil {
		return c.ep.tasks
	}
	return c.ep.servesTasks(version)
}

// hasTaskTools reports whether a tool of the endpoint can create tasks.
func (ep *Endpoint) hasTaskTools() bool {
	return slices.ContainsFunc(ep.tools, func(t *toolEntry) bool { return t.mode != taskNever })
}

// buildTasks validates the endpoint's Tasks configuration against the server.
func (ep *Endpoint) buildTasks(s *Server) error {
	if ep.opts.TaskProtocolVersions == nil && s.opts.TaskManager != nil && ep.hasTaskTools() &&
		slices.Contains(ep.modernVersions, mcp.LatestProtocolVersion) {
		// Task tools and a task manager: Tasks are meant to be served.
		ep.opts.TaskProtocolVersions = []string{mcp.LatestProtocolVersion}
	}
	versions := ep.opts.TaskProtocolVersions
	for _, v := range versions {
		if !slices.Contains(ep.modernVersions, v) {
			return fmt.Errorf("task protocol version %q is not one of the endpoint's protocol versions", v)
		}
	}
	if len(versions) > 0 && s.opts.TaskManager == nil {
		return errors.New("the endpoint declares Tasks (EndpointOptions.TaskProtocolVersions) but the server has no task manager: set Options.TaskManager")
	}
	ep.tasks = len(versions) > 0
	for _, t := range ep.tools {
		if err := ep.checkTaskEntry(t); err != nil {
			return err
		}
	}
	return nil
}

// checkTaskEntry reports a tool that can create tasks on an endpoint that
// serves none, and task options that do not apply to t.
func (ep *Endpoint) checkTaskEntry(t *toolEntry) error {
	if t.mode != taskNever && !ep.tasks {
		return fmt.Errorf("tool %q can create tasks but the endpoint does not serve Tasks: "+
			"set EndpointOptions.TaskProtocolVersions, for example to []string{mcp.LatestProtocolVersion}", t.tool.Name)
	}
	if t.waitInline && t.mode != taskRequired {
		return fmt.Errorf("tool %q: WithWaitInline applies only to task-required tools (AddTaskTool)", t.tool.Name)
	}
	for _, k := range t.inputKinds {
		switch k {
		case task.InputElicitationForm, task.InputElicitationURL, task.InputSampling, task.InputRoots:
		default:
			return fmt.Errorf("tool %q: unknown task input kind %q", t.tool.Name, k)
		}
	}
	return nil
}

// requestContext is the task.RequestContext of this call.
func (c *call) requestContext(taskID string) task.RequestContext {
	return task.RequestContext{
		TaskID:          taskID,
		Endpoint:        c.ep.opts.Name,
		Principal:       c.id.Principal,
		Tenant:          c.id.Tenant,
		ProtocolVersion: c.params.Meta.ProtocolVersion,
		Capabilities:    c.params.Meta.ClientCapabilities,
	}
}

// creationContext returns the creation context for a call of t, or nil when
// the call may not create a task. A call that may is charged the task
// limits first.
func (c *call) creationContext(ctx context.Context, t *toolEntry) (*task.CreationContext, *protocolError) {
	meta := c.params.Meta
	if t.mode == taskNever || !c.servesTasksFor(meta.ProtocolVersion) || !meta.ClientCapabilities.HasExtension(mcp.ExtensionTasks) {
		return nil, nil
	}
	args := c.params.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion:  meta.ProtocolVersion,
		Endpoint:         c.ep.opts.Name,
		Operation:        mcp.MethodToolsCall,
		Tool:             t.tool.Name,
		Arguments:        args,
		InputKinds:       t.inputKinds,
		OutputSchema:     t.tool.OutputSchema,
		MirrorStructured: t.mirror,
	})
	if err != nil {
		// The arguments passed every transport limit but not the origin's.
		return nil, invalidParams("Invalid params: arguments cannot be stored with a task")
	}
	if perr := c.chargeTaskCreation(); perr != nil {
		return nil, perr
	}
	return &task.CreationContext{Request: c.requestContext(""), Origin: o, Trace: c.traceContext()}, nil
}

// verifyHandle checks a task handle before it is sent: the call must have
// offered a creation context, and the task — the snapshot the handler
// passed to Request.CreatedTask, or else what the manager finds for this
// request — must have the same ID and an origin of the same call
// (task.Origin.SameCall: an idempotent retry may spell the arguments of the
// task it is given differently). Any failure is the fixed internal error;
// nothing about the handle is echoed.
func (c *call) verifyHandle(ctx context.Context, rq *Request, h task.Handle) (any, Outcome, *protocolError) {
	cc := rq.taskCreation
	if cc == nil {
		c.srv.logger.Error("a tool returned a task handle without a creation context", "endpoint", c.ep.opts.Name)
		return nil, OutcomeInternalError, errInternal
	}
	if task.ValidID(h.ID) != nil {
		c.srv.logger.Error("a tool returned an invalid task handle", "endpoint", c.ep.opts.Name)
		return nil, OutcomeInternalError, errInternal
	}
	if t := rq.created; t != nil && t.ID() == h.ID && t.Origin().SameCall(cc.Origin) {
		c.createdTask = h.ID
		return &mcp.CreateTaskResult{TaskInfo: t.Info()}, OutcomeTask, nil
	}
	res, err := c.runUnderDeadline(ctx, func(ctx context.Context) (any, error) {
		t, found, err := c.findCreated(ctx, h.ID)
		switch {
		case err != nil:
			return nil, err
		case !found || t.ID() != h.ID || !t.Origin().SameCall(cc.Origin):
			return nil, errUnverifiedHandle
		}
		return &mcp.CreateTaskResult{TaskInfo: t.Info()}, nil
	})
	if err != nil {
		if errors.Is(err, errDeadline) {
			return nil, OutcomeTimeout, errDeadline
		}
		c.srv.logger.Error("a task handle could not be verified", "endpoint", c.ep.opts.Name, "err", c.redactErr(err, h.ID))
		return nil, OutcomeInternalError, errInternal
	}
	c.createdTask = h.ID
	return res, OutcomeTask, nil
}

// Verification of a new task's handle tries the manager up to
// verifyAttempts times, pausing verifyPause, then twice as long, between
// tries.
const (
	verifyAttempts = 4
	verifyPause    = 50 * time.Millisecond
)

// findCreated looks up a task the handler says it created. The task is
// usually committed and running already, so a manager error is taken as
// transient and the lookup retried, within ctx, with a short doubling
// pause: a client told -32603 would believe that no task exists. An answer
// (found or not) is never retried.
func (c *call) findCreated(ctx context.Context, id string) (task.Task, bool, error) {
	pause := verifyPause
	for try := 1; ; try++ {
		t, found, err := c.srv.opts.TaskManager.FindTask(ctx, c.requestContext(id))
		if err == nil || try == verifyAttempts || ctx.Err() != nil {
			return t, found, err
		}
		timer := time.NewTimer(pause)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return t, found, err
		}
		pause *= 2
	}
}

var errUnverifiedHandle = errors.New("the manager did not confirm the task with the same ID and call")

// redactErr renders an error of a store or another application seam for
// the log: its text, bounded, so that the operator sees the cause (a
// PostgreSQL error's SQLSTATE included), with each non-empty secret (a
// task ID, a session ID, a credential) replaced by a placeholder.
func redactErr(err error, secrets ...string) string {
	return logtext.Scrubbed(err, "", nil, secrets...)
}

// redactErr is the package redactErr for an error met while serving c:
// the request's task ID, its tool arguments and extra are scrubbed.
func (c *call) redactErr(err error, extra ...string) string {
	if c.params == nil {
		return redactErr(err, extra...)
	}
	return logtext.Scrubbed(err, c.params.TaskID, c.params.Arguments, extra...)
}

// errTaskNotFound is the one answer for unknown, expired, malformed and
// unauthorized task IDs: byte-identical bodies, no ID echoed.
var errTaskNotFound = newProtocolError(http.StatusOK, mcp.InvalidParams("Invalid params"))

// taskGate is the namespace gate of tasks/*: a request without the Tasks
// extension fails before admission, with zero manager calls.
func (ep *Endpoint) taskGate(method string, p *rawParams) *protocolError {
	meta := p.Meta
	switch method {
	case mcp.MethodSubscriptionsListen:
		_, perr := ep.listenFilter(p)
		return perr
	case mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
		if !meta.ClientCapabilities.HasExtension(mcp.ExtensionTasks) {
			return missingCapabilities(tasksCapability)
		}
	}
	return nil
}

// managerCall runs a manager call bounded like a handler and maps ErrNotFound
// to the neutral -32602.
func (c *call) managerCall(ctx context.Context, fn func(ctx context.Context) (any, error)) (any, Outcome, *protocolError) {
	if task.ValidID(c.params.TaskID) != nil {
		return nil, OutcomeProtocolError, errTaskNotFound
	}
	res, err := c.runBounded(ctx, fn)
	switch {
	case err == nil:
		return res, OutcomeComplete, nil
	case errors.Is(err, task.ErrNotFound):
		return nil, OutcomeProtocolError, errTaskNotFound
	case errors.Is(err, errDeadline):
		return nil, OutcomeTimeout, errDeadline
	case errors.Is(err, errQueueFull):
		return nil, OutcomeBusy, errQueueFull
	}
	var pe *protocolError
	if errors.As(err, &pe) {
		return nil, outcomeOf(pe), pe
	}
	c.srv.logger.Error("task manager call failed", "endpoint", c.ep.opts.Name, "method", methodLabel(c.req.Method), "err", c.redactErr(err))
	return nil, OutcomeInternalError, storeFailure(err)
}

// updateTask runs tasks/update. Every answer must fit the answer size
// limit, and every answer to an outstanding input request must match it
// (see task.CheckAnswer), or the request fails with -32602 and nothing is
// stored; answers to other keys are left to the manager, which ignores
// them. Keys are never reused, so checking against a snapshot read before
// the update is exact.
func (ep *Endpoint) updateTask(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	return c.managerCall(ctx, func(ctx context.Context) (any, error) {
		rc := c.requestContext(c.params.TaskID)
		if len(c.params.InputResponses) > 0 {
			if perr := c.checkAnswerSizes(); perr != nil {
				return nil, perr
			}
			t, found, err := c.srv.opts.TaskManager.FindTask(ctx, rc)
			switch {
			case err != nil:
				return nil, err
			case !found || t.ID() != c.params.TaskID:
				return nil, task.ErrNotFound
			}
			if perr := checkAnswers(t.InputRequests(), c.params.InputResponses); perr != nil {
				return nil, perr
			}
		}
		err := c.srv.opts.TaskManager.UpdateTask(ctx, task.UpdateContext{RequestContext: rc, Responses: c.params.InputResponses})
		return &mcp.EmptyResult{}, err
	})
}

// checkAnswerSizes applies TaskLimits.MaxAnswerBytes to every answer of
// the request. The message names no key: keys are the client's here.
func (c *call) checkAnswerSizes() *protocolError {
	limit := c.srv.taskLimits.answerBytes
	for _, raw := range c.params.InputResponses {
		if len(raw) > limit {
			return invalidParams(fmt.Sprintf("Invalid params: an input response exceeds %d bytes", limit))
		}
	}
	return nil
}

// checkAnswers checks each answer to an outstanding request, in key order
// so that the first failure reported is stable. The message names the key,
// which the server chose, and what the form requires, never the answer.
func checkAnswers(outstanding mcp.InputRequests, answers mcp.InputResponses) *protocolError {
	for _, key := range slices.Sorted(maps.Keys(answers)) {
		req, ok := outstanding[key]
		if !ok {
			continue
		}
		if err := task.CheckAnswer(req, answers[key]); err != nil {
			return invalidParams(fmt.Sprintf("Invalid params: inputResponses[%q]: %v", key, err))
		}
	}
	return nil
}

func (ep *Endpoint) cancelTask(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	return c.managerCall(ctx, func(ctx context.Context) (any, error) {
		err := c.srv.opts.TaskManager.RequestCancel(ctx, c.requestContext(c.params.TaskID))
		return &mcp.EmptyResult{}, err
	})
}

func (ep *Endpoint) getTask(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	return c.managerCall(ctx, func(ctx context.Context) (any, error) {
		t, found, err := c.srv.opts.TaskManager.FindTask(ctx, c.requestContext(c.params.TaskID))
		if err != nil {
			return nil, err
		}
		if !found {
			return nil, task.ErrNotFound
		}
		if t.ID() != c.params.TaskID {
			return nil, errUnverifiedHandle
		}
		d, perr := c.detail(ctx, t)
		if perr != nil {
			return nil, perr
		}
		if b, ok := c.ep.appendTaskResult(nil, &d); ok {
			return json.RawMessage(b), nil // limits are checked when it is written
		}
		return &mcp.GetTaskResult{DetailedTask: d}, nil
	})
}

// detail renders a snapshot for delivery to this request (tasks/get and
// notifications): input requests must be declared by the origin and
// supported by the request's capabilities; a completed result passes the
// catalog policy, the sanitizer (with this request's identity and the
// origin's tool name and arguments), the origin's output contract and the
// limits. Any failure leaves the stored task untouched.
func (c *call) detail(ctx context.Context, t task.Task) (mcp.DetailedTask, *protocolError) {
	d := mcp.DetailedTask{TaskInfo: t.Info()}
	o := t.Origin()
	switch t.Status() {
	case task.InputRequired:
		reqs := t.InputRequests()
		if err := c.srv.validator.InputRequests(o, reqs); err != nil {
			c.srv.logger.Error("a stored task input request is invalid for its origin", "endpoint", c.ep.opts.Name)
			return d, errInternal
		}
		if missing := missingCapabilitiesOf(c.params.Meta.ClientCapabilities, inputCapabilities(reqs)); missing != nil {
			return d, missingCapabilities(missing)
		}
		d.InputRequests = reqs
	case task.Completed:
		res, perr := c.deliverResult(ctx, o, t.Result())
		if perr != nil {
			return d, perr
		}
		b, ok := mcp.AppendToolResult(nil, res, nil)
		if !ok {
			var err error
			if b, err = jsonMarshal(res); err != nil {
				return d, errInternal
			}
		}
		d.Result = b
	case task.Failed:
		d.Error = t.Error()
	}
	return d, nil
}

// deliverResult runs the completed-result path of a stored task.
func (c *call) deliverResult(ctx context.Context, o task.Origin, res *mcp.CallToolResult) (*mcp.CallToolResult, *protocolError) {
	if !c.ep.hadTaskTool(o.Tool()) || o.Endpoint() != c.ep.opts.Name {
		c.srv.logger.Warn("a completed task's tool is not registered here", "endpoint", c.ep.opts.Name)
		return nil, errInternal
	}
	if p := c.srv.opts.CatalogPolicy; p != nil {
		visible, err := p.ToolVisible(ctx, c.id, c.ep.opts.Name, o.Tool())
		if err != nil || !visible {
			return nil, errInternal
		}
	}
	if s := c.srv.opts.ResultSanitizer; s != nil {
		out, err := s(ctx, &SanitizeRequest{Identity: c.id, Endpoint: c.ep.opts.Name, ToolName: o.Tool(), Arguments: o.Params().Arguments}, res)
		if err != nil || out == nil {
			return nil, errInternal
		}
		res = out
	}
	out, err := c.srv.validator.Result(o, res)
	if err != nil {
		c.srv.logger.Error("a completed task's result fails its origin's output contract", "endpoint", c.ep.opts.Name)
		return nil, errInternal
	}
	if out.ResultType == "" {
		c := *out
		c.ResultType = mcp.ResultComplete
		out = &c
	}
	return out, nil
}
