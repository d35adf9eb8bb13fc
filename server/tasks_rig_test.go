package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/schemacheck"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// Fixtures of the Tasks tests. Every request uses JSON-RPC id 7 so that
// error bodies can be compared byte for byte.
const (
	taskCaps       = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	taskCanary     = "canary-5e1f"
	taskHandleID   = "tid-" + taskCanary
	taskServerMeta = `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"tasks","version":"1.0.0"}}`
	taskInternal   = `{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error"}}`
	taskNotFound   = `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params"}}`
	taskNoMethod   = `{"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found"}}`
	taskAck        = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete",` + taskServerMeta + `}}`
	taskNeedsTasks = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`
)

// taskEpoch is the injected clock's start; it renders as
// 2026-08-01T10:00:00.000Z.
var taskEpoch = time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)

type taskBuildIn struct {
	N float64 `json:"n"`
	B string  `json:"b,omitempty"`
}

type taskBuildOut struct {
	Sum int `json:"sum"`
}

// taskCalls counts the calls the Tasks tests assert exactly.
type taskCalls struct {
	Admit, Policy, Handler, Find, Update, Cancel, Sanitize int
}

type taskClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *taskClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *taskClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func (c *taskClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// taskObserver records the lifecycle as "start METHOD" and
// "finish METHOD OUTCOME".
type taskObserver struct {
	mu     sync.Mutex
	events []string
}

func (o *taskObserver) RequestStarted(_ context.Context, info server.RequestInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "start "+info.Method)
}

func (o *taskObserver) RequestFinished(_ context.Context, info server.RequestInfo, out server.Outcome, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, "finish "+info.Method+" "+string(out))
}

func (o *taskObserver) take() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	e := o.events
	o.events = nil
	return e
}

type taskLogBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *taskLogBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *taskLogBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// taskManager is a hand-written task.Manager that counts every call. With
// find (or the *Err fields) set it answers as scripted; otherwise it
// delegates to inner.
type taskManager struct {
	rig       *taskRig
	inner     task.Manager
	find      func(rc task.RequestContext) (task.Task, bool, error)
	updateErr error
	cancelErr error
	seen      []task.RequestContext
}

func (m *taskManager) FindTask(ctx context.Context, rc task.RequestContext) (task.Task, bool, error) {
	m.rig.mu.Lock()
	m.rig.calls.Find++
	m.seen = append(m.seen, rc)
	find, inner := m.find, m.inner
	m.rig.mu.Unlock()
	if find != nil {
		return find(rc)
	}
	if inner == nil {
		return task.Task{}, false, nil
	}
	return inner.FindTask(ctx, rc)
}

func (m *taskManager) UpdateTask(ctx context.Context, uc task.UpdateContext) error {
	m.rig.mu.Lock()
	m.rig.calls.Update++
	m.seen = append(m.seen, uc.RequestContext)
	err, inner := m.updateErr, m.inner
	m.rig.mu.Unlock()
	if err != nil || inner == nil {
		return err
	}
	return inner.UpdateTask(ctx, uc)
}

func (m *taskManager) RequestCancel(ctx context.Context, rc task.RequestContext) error {
	m.rig.mu.Lock()
	m.rig.calls.Cancel++
	m.seen = append(m.seen, rc)
	err, inner := m.cancelErr, m.inner
	m.rig.mu.Unlock()
	if err != nil || inner == nil {
		return err
	}
	return inner.RequestCancel(ctx, rc)
}

func (m *taskManager) EventPublisher() task.EventPublisher {
	m.rig.mu.Lock()
	inner := m.inner
	m.rig.mu.Unlock()
	if inner == nil {
		return nil
	}
	return inner.EventPublisher()
}

// taskRig is a server with one Tasks endpoint ("tasks" at /mcp) and counting
// admission, catalog policy, sanitizer and manager. Its "build" tool is a
// task-required typed tool declaring form and URL input.
type taskRig struct {
	srv   *server.Server
	mem   *memory.Manager
	mgr   *taskManager
	obs   *taskObserver
	clock *taskClock
	logs  *taskLogBuffer

	mu         sync.Mutex
	calls      taskCalls
	admit      server.AdmissionController
	create     func(cc *task.CreationContext) (task.Handle, error)
	intercept  server.Interceptor
	sanitize   server.ResultSanitizer // nil: pass-through
	sanitized  []server.SanitizeRequest
	hide       bool
	policyErr  error
	policySeen []string
	lastCC     *task.CreationContext
}

func taskEndpoint() *server.Endpoint {
	return server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "tasks", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
}

func newTaskRig(t *testing.T, mutate func(r *taskRig, o *server.Options, ep *server.Endpoint)) *taskRig {
	t.Helper()
	r := &taskRig{obs: &taskObserver{}, clock: &taskClock{now: taskEpoch}, logs: &taskLogBuffer{}}
	mem, err := memory.New(memory.Options{Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	r.mem = mem
	r.mgr = &taskManager{rig: r, inner: mem}
	r.admit = server.DevAdmission()
	r.create = r.createInMemory
	ep := taskEndpoint()
	server.AddTaskTool[taskBuildIn, taskBuildOut](ep, &mcp.Tool{Name: "build"}, r.buildHandler,
		server.WithTaskInput(task.InputElicitationURL, task.InputElicitationForm))
	opts := r.options(ep)
	if mutate != nil {
		mutate(r, &opts, ep)
	}
	if r.srv, err = server.New(opts); err != nil {
		t.Fatalf("server.New: %v", err)
	}
	return r
}

// options are the rig's server options for the given endpoints.
func (r *taskRig) options(eps ...*server.Endpoint) server.Options {
	return server.Options{
		Endpoints:       eps,
		TaskManager:     r.mgr,
		TaskLimits:      server.TaskLimits{CreateRate: server.NoLimit}, // rigs create tasks in bursts; tasklimits_test.go covers the limits
		Admission:       r,
		CatalogPolicy:   r,
		ResultSanitizer: r.sanitizeResult,
		Observer:        r.obs,
		Logger:          slog.New(slog.NewTextHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		Interceptor: func(ctx context.Context, req *server.Request, next server.Handler) (any, error) {
			r.mu.Lock()
			ic := r.intercept
			r.mu.Unlock()
			if ic != nil {
				return ic(ctx, req, next)
			}
			return next(ctx, req)
		},
	}
}

func (r *taskRig) Admit(ctx context.Context, req *server.AdmissionRequest) (server.Identity, error) {
	r.mu.Lock()
	r.calls.Admit++
	a := r.admit
	r.mu.Unlock()
	return a.Admit(ctx, req)
}

func (r *taskRig) ToolVisible(_ context.Context, id server.Identity, endpoint, tool string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls.Policy++
	r.policySeen = append(r.policySeen, id.Principal+"@"+id.Tenant+" "+endpoint+"/"+tool)
	return !r.hide, r.policyErr
}

func (r *taskRig) sanitizeResult(ctx context.Context, req *server.SanitizeRequest, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	r.mu.Lock()
	r.calls.Sanitize++
	c := *req
	c.Arguments = bytes.Clone(req.Arguments)
	r.sanitized = append(r.sanitized, c)
	s := r.sanitize
	r.mu.Unlock()
	if s == nil {
		return res, nil
	}
	return s(ctx, req, res)
}

func (r *taskRig) buildHandler(_ context.Context, _ *server.Request, _ taskBuildIn, cc *task.CreationContext) (task.Handle, error) {
	r.mu.Lock()
	r.calls.Handler++
	r.lastCC = cc
	create := r.create
	r.mu.Unlock()
	return create(cc)
}

func (r *taskRig) createInMemory(cc *task.CreationContext) (task.Handle, error) {
	tk, err := r.mem.Create(cc)
	return task.Handle{ID: tk.ID()}, err
}

func (r *taskRig) set(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn()
}

// takeCalls returns the counts since the last call and resets them.
func (r *taskRig) takeCalls() taskCalls {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = taskCalls{}
	return c
}

func (r *taskRig) do(t *testing.T, req *http.Request) *mcptest.Response {
	t.Helper()
	return do(t, r.srv, req)
}

// expect asserts the exact status and body, Cache-Control: no-store, that
// neither the body nor the log holds the canary or any of secrets, and the
// exact call counts since the last check.
func (r *taskRig) expect(t *testing.T, res *mcptest.Response, status int, body string, calls taskCalls, secrets ...string) {
	t.Helper()
	if res.Status != status {
		t.Errorf("HTTP %d, want %d", res.Status, status)
	}
	if diff := cmp.Diff(body, string(res.Body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if got := res.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	for _, s := range append([]string{taskCanary}, secrets...) {
		if s != "" && strings.Contains(string(res.Body), s) {
			t.Errorf("body leaks %q: %s", s, res.Body)
		}
		if s != "" && strings.Contains(r.logs.String(), s) {
			t.Errorf("log leaks %q:\n%s", s, r.logs.String())
		}
	}
	if diff := cmp.Diff(calls, r.takeCalls()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
}

// createTask creates a task through the "build" tool and resets the counts.
func (r *taskRig) createTask(t *testing.T, args string, hdr map[string]string) string {
	t.Helper()
	res := r.do(t, taskCallReq("build", args, taskCaps, hdr))
	var got struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if res.Status != 200 || json.Unmarshal(res.Result, &got) != nil || got.ResultType != "task" {
		t.Fatalf("create: HTTP %d %s", res.Status, res.Body)
	}
	r.takeCalls()
	r.obs.take()
	return got.TaskID
}

func taskMeta(caps string) string {
	return `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}`
}

// taskCallReq is a tools/call request with the raw arguments JSON.
func taskCallReq(tool, args, caps string, hdr map[string]string) *http.Request {
	h := map[string]string{"Mcp-Name": tool}
	maps.Copy(h, hdr)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `,"_meta":` + taskMeta(caps) + `}}`
	return rawPost(body, "tools/call", h)
}

// taskReq is a tasks/* request for id; extra holds further params members
// (",\"inputResponses\":{...}").
func taskReq(method, id, caps, extra string, hdr map[string]string) *http.Request {
	idJSON, _ := json.Marshal(id)
	h := map[string]string{"Mcp-Name": mcp.EncodeHeaderValue(id)}
	maps.Copy(h, hdr)
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{"taskId":` + string(idJSON) + extra + `,"_meta":` + taskMeta(caps) + `}}`
	return rawPost(body, method, h)
}

func taskMissingCaps(required string) string {
	return `{"jsonrpc":"2.0","id":7,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":` + required + `}}}`
}

// taskSub replaces $ID in a body template.
func taskSub(tmpl, id string) string { return strings.ReplaceAll(tmpl, "$ID", id) }

func taskValidate(t *testing.T, def string, result json.RawMessage) {
	t.Helper()
	if err := schemacheck.ValidateTasks(def, result); err != nil {
		t.Errorf("%s: %v\n%s", def, err, result)
	}
}

// taskSnap builds a snapshot, defaulting the times to taskEpoch.
func taskSnap(t *testing.T, p task.Params) task.Task {
	t.Helper()
	if p.CreatedAt.IsZero() {
		p.CreatedAt, p.LastUpdatedAt = taskEpoch, taskEpoch
	}
	tk, err := task.New(p)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func taskOrigin(t *testing.T, tool, args string) task.Origin {
	t.Helper()
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: "tasks", Operation: mcp.MethodToolsCall,
		Tool: tool, Arguments: json.RawMessage(args),
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}
