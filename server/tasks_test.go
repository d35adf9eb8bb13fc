package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

func TestTaskEndpointBuild(t *testing.T) {
	mem, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// plain serves Tasks under no revision: an empty list, since nil is
	// defaulted for an endpoint with task tools (see defaults_test.go).
	plain := func() *server.Endpoint {
		return server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "plain", Version: "1.0.0", TaskProtocolVersions: []string{}})
	}
	handle := func(context.Context, *server.Request, taskBuildIn, *task.CreationContext) (task.Handle, error) {
		return task.Handle{}, nil
	}
	raw := func(context.Context, *server.Request) (*mcp.CallToolResult, *task.Handle, error) {
		return nil, nil, nil
	}
	schema := json.RawMessage(`{"type":"object"}`)
	tests := []struct {
		name, want string
		opts       func() server.Options
	}{
		{"Tasks declared without a manager", "no task manager: set Options.TaskManager", func() server.Options {
			return server.Options{Endpoints: []*server.Endpoint{taskEndpoint()}}
		}},
		{"task-required tool on an endpoint without Tasks", "does not serve Tasks: set EndpointOptions.TaskProtocolVersions", func() server.Options {
			ep := plain()
			server.AddTaskTool[taskBuildIn, taskBuildOut](ep, &mcp.Tool{Name: "build"}, handle)
			return server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: mem}
		}},
		{"raw task tool on an endpoint without Tasks", "does not serve Tasks: set EndpointOptions.TaskProtocolVersions", func() server.Options {
			ep := plain()
			ep.AddRawTaskTool(&mcp.Tool{Name: "maybe", InputSchema: schema}, raw)
			return server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: mem}
		}},
		{"task-required tool without a manager", "no task manager", func() server.Options {
			ep := taskEndpoint()
			server.AddTaskTool[taskBuildIn, taskBuildOut](ep, &mcp.Tool{Name: "build"}, handle)
			return server.Options{Endpoints: []*server.Endpoint{ep}}
		}},
		{"task version the endpoint does not accept", "not one of the endpoint's protocol versions", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "t", Version: "1", TaskProtocolVersions: []string{"2025-11-25"}})
			return server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: mem}
		}},
		{"unknown task input kind", "unknown task input kind", func() server.Options {
			ep := taskEndpoint()
			server.AddTaskTool[taskBuildIn, taskBuildOut](ep, &mcp.Tool{Name: "build"}, handle, server.WithTaskInput("telepathy"))
			return server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: mem}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := server.New(tt.opts())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestTaskSharedManagerEnablesOnlyItsEndpoint: a sibling endpoint of the same
// server (and manager) neither advertises nor serves Tasks.
func TestTaskSharedManagerEnablesOnlyItsEndpoint(t *testing.T) {
	var sawCreation []bool
	r := newTaskRig(t, func(r *taskRig, o *server.Options, _ *server.Endpoint) {
		plain := server.NewEndpoint(server.EndpointOptions{Path: "/plain", Name: "plain", Version: "1.0.0"})
		plain.AddRawTool(&mcp.Tool{Name: "probe", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *server.Request) (*mcp.CallToolResult, error) {
				sawCreation = append(sawCreation, req.TaskCreation() != nil)
				return &mcp.CallToolResult{}, nil
			})
		o.Endpoints = append(o.Endpoints, plain)
	})
	at := func(path string, req *http.Request) *http.Request { req.URL.Path = path; return req }
	capsOf := func(path string) string {
		res := r.do(t, at(path, rawPost(`{"jsonrpc":"2.0","id":7,"method":"server/discover","params":{"_meta":`+taskMeta(taskCaps)+`}}`, "server/discover", nil)))
		var d struct {
			Capabilities json.RawMessage `json:"capabilities"`
		}
		if err := json.Unmarshal(res.Result, &d); err != nil {
			t.Fatalf("%s: %v (%s)", path, err, res.Body)
		}
		return string(d.Capabilities)
	}
	if diff := cmp.Diff(`{"logging":{},"tools":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`, capsOf("/mcp")); diff != "" {
		t.Errorf("/mcp capabilities (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(`{"logging":{},"tools":{}}`, capsOf("/plain")); diff != "" {
		t.Errorf("/plain capabilities (-want +got):\n%s", diff)
	}
	r.takeCalls()
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		res := r.do(t, at("/plain", taskReq(m, taskHandleID, taskCaps, "", nil)))
		r.expect(t, res, 404, taskNoMethod, taskCalls{}, taskHandleID)
	}
	res := r.do(t, at("/plain", taskCallReq("probe", `{}`, taskCaps, nil)))
	if res.Status != 200 || res.Error != nil {
		t.Fatalf("probe: HTTP %d %s", res.Status, res.Body)
	}
	if diff := cmp.Diff([]bool{false}, sawCreation); diff != "" {
		t.Errorf("creation context offered on the sibling endpoint (-want +got):\n%s", diff)
	}
}

// TestTaskRequiredToolPreflight: without the Tasks extension a task-required
// tool fails after admission with every missing capability, before the
// request limiter, the interceptor and the handler.
func TestTaskRequiredToolPreflight(t *testing.T) {
	r := newTaskRig(t, func(r *taskRig, o *server.Options, ep *server.Endpoint) {
		o.RequestLimiter = newBucket(t, server.TokenBucketOptions{Rate: 0.001, Burst: 1, Now: r.clock.Now})
		server.AddTaskTool[taskBuildIn, taskBuildOut](ep, &mcp.Tool{Name: "deploy"}, r.buildHandler,
			server.WithRequiredCapabilities(&mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{URL: mcp.Object{}}}))
	})
	intercepted := 0
	r.set(func() {
		r.intercept = func(ctx context.Context, req *server.Request, next server.Handler) (any, error) {
			intercepted++
			return next(ctx, req)
		}
	})
	args := `{"n":1,"b":"` + taskCanary + `"}`
	tests := []struct{ caps, missing string }{
		{`{}`, `{"elicitation":{"url":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{`{"elicitation":{"form":{}}}`, `{"elicitation":{"url":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`},
		{taskCaps, `{"elicitation":{"url":{}}}`},
		{`{"elicitation":{"url":{}}}`, taskNeedsTasks},
	}
	for _, tt := range tests {
		res := r.do(t, taskCallReq("deploy", args, tt.caps, nil))
		r.expect(t, res, 400, taskMissingCaps(tt.missing), taskCalls{Admit: 1, Policy: 1})
		if diff := cmp.Diff([]string{"start tools/call", "finish tools/call protocol_error"}, r.obs.take()); diff != "" {
			t.Errorf("caps %s: lifecycle (-want +got):\n%s", tt.caps, diff)
		}
	}
	if intercepted != 0 {
		t.Errorf("interceptor ran %d times before the capability check passed", intercepted)
	}
	// No token was consumed: the one token of the bucket admits this call.
	full := `{"elicitation":{"url":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	res := r.do(t, taskCallReq("deploy", args, full, nil))
	if res.Status != 200 || !strings.Contains(string(res.Result), `"resultType":"task"`) {
		t.Fatalf("capable call: HTTP %d %s", res.Status, res.Body)
	}
	if diff := cmp.Diff(taskCalls{Admit: 1, Policy: 1, Handler: 1, Find: 1}, r.takeCalls()); diff != "" {
		t.Errorf("capable call counts (-want +got):\n%s", diff)
	}
	res = r.do(t, taskCallReq("deploy", args, full, nil))
	if res.Status != http.StatusTooManyRequests {
		t.Fatalf("the limiter is not live: HTTP %d", res.Status)
	}
}

// TestTaskToolListsInferredOutputSchema: the eventual output schema of a
// task-required tool is inferred from Out and listed.
func TestTaskToolListsInferredOutputSchema(t *testing.T) {
	r := newTaskRig(t, nil)
	res := r.do(t, rawPost(`{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":`+taskMeta(`{}`)+`}}`, "tools/list", nil))
	var list struct {
		Tools []json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(res.Result, &list); err != nil || len(list.Tools) != 1 {
		t.Fatalf("tools/list: %v %s", err, res.Body)
	}
	want := `{"name":"build",` +
		`"inputSchema":{"type":"object","properties":{"n":{"type":"number"},"b":{"type":"string"}},"required":["n"],"additionalProperties":false},` +
		`"outputSchema":{"type":"object","properties":{"sum":{"type":"integer"}},"required":["sum"],"additionalProperties":false}}`
	if diff := cmp.Diff(want, string(list.Tools[0])); diff != "" {
		t.Errorf("listed tool (-want +got):\n%s", diff)
	}
}

// TestTaskCreation: the flat CreateTaskResult, verified through FindTask,
// never with the result and never through the sanitizer.
func TestTaskCreation(t *testing.T) {
	r := newTaskRig(t, nil)
	args := `{ "n" : 2.50, "b":"\u00e9` + taskCanary + `" }`
	res := r.do(t, taskCallReq("build", args, `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`, nil))
	id := r.mgr.seen[0].TaskID
	want := `{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"$ID","status":"working",` +
		`"createdAt":"2026-08-01T10:00:00.000Z","lastUpdatedAt":"2026-08-01T10:00:00.000Z","ttlMs":3600000,"pollIntervalMs":1000,` + taskServerMeta + `}}`
	r.expect(t, res, 200, taskSub(want, id), taskCalls{Admit: 1, Policy: 1, Handler: 1, Find: 1})
	taskValidate(t, "CreateTaskResult", res.Result)
	if diff := cmp.Diff([]string{"start tools/call", "finish tools/call task"}, r.obs.take()); diff != "" {
		t.Errorf("lifecycle (-want +got):\n%s", diff)
	}

	// The creation context and the verification lookup describe this request.
	wantRC := task.RequestContext{
		Endpoint: "tasks", Tenant: server.AnonymousTenant, ProtocolVersion: mcp.LatestProtocolVersion,
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{}, Extensions: map[string]mcp.Object{mcp.ExtensionTasks: {}}},
	}
	if diff := cmp.Diff(wantRC, r.lastCC.Request); diff != "" {
		t.Errorf("creation request context (-want +got):\n%s", diff)
	}
	wantRC.TaskID = id
	if diff := cmp.Diff(wantRC, r.mgr.seen[0]); diff != "" {
		t.Errorf("verification request context (-want +got):\n%s", diff)
	}
	o := r.lastCC.Origin.Params()
	if o.Tool != "build" || o.Endpoint != "tasks" || o.Operation != "tools/call" || string(o.Arguments) != args ||
		!o.MirrorStructured || len(o.OutputSchema) == 0 || !slices.Equal(o.InputKinds, []string{"elicitation.form", "elicitation.url"}) {
		t.Errorf("origin params = %+v", o)
	}
	if s := r.lastCC.Origin.String(); strings.Contains(s, taskCanary) {
		t.Errorf("origin String leaks the arguments: %s", s)
	}

	// A handler whose task is already complete still answers with the
	// snapshot only: no result member, no sanitizer.
	r.set(func() {
		r.create = func(cc *task.CreationContext) (task.Handle, error) {
			h, err := r.createInMemory(cc)
			if err != nil {
				return h, err
			}
			r.clock.Advance(5 * time.Second)
			_, err = r.mem.Complete(h.ID, &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"sum":3}`)}, "done")
			return h, err
		}
	})
	res = r.do(t, taskCallReq("build", `{"n":1}`, taskCaps, nil))
	id = r.mgr.seen[1].TaskID
	want = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"task","taskId":"$ID","status":"completed","statusMessage":"done",` +
		`"createdAt":"2026-08-01T10:00:00.000Z","lastUpdatedAt":"2026-08-01T10:00:05.000Z","ttlMs":3600000,"pollIntervalMs":1000,` + taskServerMeta + `}}`
	r.expect(t, res, 200, taskSub(want, id), taskCalls{Admit: 1, Policy: 1, Handler: 1, Find: 1})
	taskValidate(t, "CreateTaskResult", res.Result)
}

// TestTaskCreationFailsClosed: every broken durability answer is the fixed
// internal error after exactly one lookup (a manager error after a few),
// without echoing the handle.
func TestTaskCreationFailsClosed(t *testing.T) {
	r := newTaskRig(t, nil)
	r.set(func() { r.mgr.inner = nil })
	other := taskOrigin(t, "build", `{"n":2}`)
	tests := []struct {
		name   string
		handle string
		find   func(rc task.RequestContext) (task.Task, bool, error)
		finds  int
	}{
		{"not found", taskHandleID, func(task.RequestContext) (task.Task, bool, error) { return task.Task{}, false, nil }, 1},
		{"storage error", taskHandleID, func(rc task.RequestContext) (task.Task, bool, error) {
			return task.Task{}, false, fmt.Errorf("row %s unreadable", rc.TaskID)
		}, 4}, // retried: it may be transient
		{"wrong ID", taskHandleID, func(task.RequestContext) (task.Task, bool, error) {
			return taskSnap(t, task.Params{ID: "tid-other", Origin: r.lastCC.Origin, Status: task.Working}), true, nil
		}, 1},
		{"different origin", taskHandleID, func(rc task.RequestContext) (task.Task, bool, error) {
			return taskSnap(t, task.Params{ID: rc.TaskID, Origin: other, Status: task.Working}), true, nil
		}, 1},
		{"found false with a snapshot", taskHandleID, func(rc task.RequestContext) (task.Task, bool, error) {
			return taskSnap(t, task.Params{ID: rc.TaskID, Origin: r.lastCC.Origin, Status: task.Working}), false, nil
		}, 1},
		{"panic", taskHandleID, func(task.RequestContext) (task.Task, bool, error) { panic("scripted manager failure") }, 1},
		{"empty handle", "", nil, 0},
		{"malformed handle", "tid " + taskCanary, nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.set(func() {
				r.create = func(*task.CreationContext) (task.Handle, error) { return task.Handle{ID: tt.handle}, nil }
				r.mgr.find = tt.find
			})
			res := r.do(t, taskCallReq("build", `{"n":1,"b":"`+taskCanary+`"}`, taskCaps, nil))
			r.expect(t, res, 200, taskInternal, taskCalls{Admit: 1, Policy: 1, Handler: 1, Find: tt.finds}, "tid-other")
			if diff := cmp.Diff([]string{"start tools/call", "finish tools/call internal_error"}, r.obs.take()); diff != "" {
				t.Errorf("lifecycle (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTaskHandleWithoutCreationContext: a handle from a call that was not
// offered a creation context is a contract failure; the manager is never
// read and the next inline call is unaffected.
func TestTaskHandleWithoutCreationContext(t *testing.T) {
	var maybeSaw []bool
	r := newTaskRig(t, func(r *taskRig, _ *server.Options, ep *server.Endpoint) {
		ep.AddRawTaskTool(&mcp.Tool{Name: "maybe", InputSchema: json.RawMessage(`{"type":"object"}`)},
			func(_ context.Context, req *server.Request) (*mcp.CallToolResult, *task.Handle, error) {
				r.set(func() { r.calls.Handler++ })
				maybeSaw = append(maybeSaw, req.TaskCreation() != nil)
				if strings.Contains(string(req.Arguments), "inline") {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "inline"}}}, nil, nil
				}
				if cc := req.TaskCreation(); cc != nil {
					h, err := r.createInMemory(cc)
					return nil, &h, err
				}
				return nil, &task.Handle{ID: taskHandleID}, nil
			})
		server.AddTool(ep, &mcp.Tool{Name: "plain"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			r.set(func() { r.calls.Handler++ })
			return nil, nil, nil
		})
	})
	handleInterceptor := func(context.Context, *server.Request, server.Handler) (any, error) {
		return task.Handle{ID: taskHandleID}, nil
	}
	tests := []struct {
		name      string
		tool      string
		caps      string
		intercept server.Interceptor
		handler   int
	}{
		{"optional tool without the Tasks capability", "maybe", `{}`, nil, 1},
		{"interceptor on a tool that cannot create tasks", "plain", taskCaps, handleInterceptor, 0},
		{"interceptor without the Tasks capability", "maybe", `{}`, handleInterceptor, 0},
		{"interceptor on a plain tool without the capability", "plain", `{}`, handleInterceptor, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.set(func() { r.intercept = tt.intercept })
			res := r.do(t, taskCallReq(tt.tool, `{"x":"`+taskCanary+`"}`, tt.caps, nil))
			r.expect(t, res, 200, taskInternal, taskCalls{Admit: 1, Policy: 1, Handler: tt.handler}, taskHandleID)
		})
	}
	r.set(func() { r.intercept = nil })
	// The next inline call recovers; with the capability the same tool may
	// create a task.
	res := r.do(t, taskCallReq("maybe", `{"inline":true}`, `{}`, nil))
	r.expect(t, res, 200, `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"inline"}],`+taskServerMeta+`}}`,
		taskCalls{Admit: 1, Policy: 1, Handler: 1, Sanitize: 1})
	res = r.do(t, taskCallReq("maybe", `{}`, taskCaps, nil))
	if !strings.Contains(string(res.Result), `"resultType":"task"`) {
		t.Fatalf("capable optional call: %s", res.Body)
	}
	if diff := cmp.Diff(taskCalls{Admit: 1, Policy: 1, Handler: 1, Find: 1}, r.takeCalls()); diff != "" {
		t.Errorf("capable optional call counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]bool{false, false, true}, maybeSaw); diff != "" {
		t.Errorf("creation context offered (-want +got):\n%s", diff)
	}
}

// TestTaskInterceptorValidatesArgumentsFirst: typed arguments are validated
// before a task can be created, also when an interceptor creates it.
func TestTaskInterceptorValidatesArgumentsFirst(t *testing.T) {
	r := newTaskRig(t, nil)
	bad := `{"n":"x"}`
	invalid := `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text",` +
		`"text":"Invalid arguments: validating root: validating /properties/n: type: x has type \"string\", want \"number\""}],` +
		`"isError":true,` + taskServerMeta + `}}`
	// The input error is an inline tool result: it passes the sanitizer.
	res := r.do(t, taskCallReq("build", bad, taskCaps, nil))
	r.expect(t, res, 200, invalid, taskCalls{Admit: 1, Policy: 1, Sanitize: 1})

	creates := 0
	r.set(func() {
		r.intercept = func(ctx context.Context, req *server.Request, next server.Handler) (any, error) {
			if cc := req.TaskCreation(); cc != nil {
				creates++
				return r.createInMemory(cc)
			}
			return next(ctx, req)
		}
	})
	res = r.do(t, taskCallReq("build", `{"n":1}`, taskCaps, nil))
	if !strings.Contains(string(res.Result), `"resultType":"task"`) {
		t.Fatalf("interceptor-created task: %s", res.Body)
	}
	if diff := cmp.Diff(taskCalls{Admit: 1, Policy: 1, Find: 1}, r.takeCalls()); diff != "" {
		t.Errorf("interceptor-created task counts (-want +got):\n%s", diff)
	}

	creates = 0
	res = r.do(t, taskCallReq("build", bad, taskCaps, nil))
	if creates != 0 || strings.Contains(string(res.Result), `"resultType":"task"`) {
		t.Fatalf("the interceptor created a task from arguments that fail the input schema: %s", res.Body)
	}
	r.expect(t, res, 200, invalid, taskCalls{Admit: 1, Policy: 1, Sanitize: 1})
}

// TestTasksNamespaceGate: tasks/* without the extension fails before
// admission with zero manager calls; removed methods are unknown.
func TestTasksNamespaceGate(t *testing.T) {
	r := newTaskRig(t, nil)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		res := r.do(t, taskReq(m, taskHandleID, `{"elicitation":{}}`, `,"inputResponses":{}`, nil))
		r.expect(t, res, 400, taskMissingCaps(taskNeedsTasks), taskCalls{}, taskHandleID)
	}
	for _, m := range []string{"tasks/list", "tasks/result"} {
		for _, caps := range []string{`{}`, taskCaps} {
			body := `{"jsonrpc":"2.0","id":7,"method":"` + m + `","params":{"taskId":"` + taskHandleID + `","_meta":` + taskMeta(caps) + `}}`
			res := r.do(t, rawPost(body, m, map[string]string{"Mcp-Name": taskHandleID}))
			r.expect(t, res, 404, taskNoMethod, taskCalls{}, taskHandleID)
		}
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		res := r.do(t, taskReq(m, taskHandleID, taskCaps, "", map[string]string{"Mcp-Name": "tid-else"}))
		r.expect(t, res, 400, `{"jsonrpc":"2.0","id":7,"error":{"code":-32020,"message":"Header mismatch: Mcp-Name does not match the request"}}`, taskCalls{}, taskHandleID)
	}
	if got := r.obs.take(); len(got) != 0 {
		t.Errorf("gated requests reached the lifecycle: %v", got)
	}
}

// TestTaskLookupIsNeutral: unknown, other-tenant and malformed IDs give
// byte-identical -32602 bodies on every tasks/* method.
func TestTaskLookupIsNeutral(t *testing.T) {
	r := newTaskRig(t, nil)
	alice := map[string]string{"Authorization": "Bearer alice"}
	bob := map[string]string{"Authorization": "Bearer bob"}
	id := r.createTask(t, `{"n":1}`, alice)
	ids := []struct {
		name    string
		id      string
		hdr     map[string]string
		lookups int
	}{
		{"unknown", "00000000-0000-4000-8000-" + taskCanary, alice, 1},
		{"other tenant", id, bob, 1},
		{"anonymous", id, nil, 1},
		{"too long", strings.Repeat("a", 129) + taskCanary, alice, 0},
		{"space", "tid " + taskCanary, alice, 0},
		{"non-ASCII", "tâche-" + taskCanary, alice, 0},
		{"sentinel", "=?base64?" + taskCanary, alice, 0},
	}
	methods := []struct {
		method, extra string
		count         func(n int) taskCalls
	}{
		{"tasks/get", "", func(n int) taskCalls { return taskCalls{Admit: 1, Find: n} }},
		{"tasks/update", `,"inputResponses":{"k":{"action":"accept"}}`, func(n int) taskCalls { return taskCalls{Admit: 1, Find: n} }},
		{"tasks/cancel", "", func(n int) taskCalls { return taskCalls{Admit: 1, Cancel: n} }},
	}
	for _, m := range methods {
		for _, tt := range ids {
			t.Run(m.method+"/"+tt.name, func(t *testing.T) {
				res := r.do(t, taskReq(m.method, tt.id, taskCaps, m.extra, tt.hdr))
				r.expect(t, res, 200, taskNotFound, m.count(tt.lookups), tt.id, id)
				if diff := cmp.Diff([]string{"start " + m.method, "finish " + m.method + " protocol_error"}, r.obs.take()); diff != "" {
					t.Errorf("lifecycle (-want +got):\n%s", diff)
				}
			})
		}
	}
	if c, err := r.mem.CancelRequested(id); err != nil || c {
		t.Errorf("another tenant's cancel was recorded: %v %v", c, err)
	}
	res := r.do(t, taskReq("tasks/get", id, taskCaps, "", alice))
	if res.Status != 200 || !strings.Contains(string(res.Result), `"status":"working"`) {
		t.Errorf("owner's poll after the probes: HTTP %d %s", res.Status, res.Body)
	}
}

// TestTaskLifecycleObserved: one start and one finish per admitted tasks/*
// request, with the method and outcome; acks are empty results.
func TestTaskLifecycleObserved(t *testing.T) {
	r := newTaskRig(t, nil)
	id := r.createTask(t, `{"n":1}`, nil)
	res := r.do(t, taskReq("tasks/get", id, taskCaps, "", nil))
	if res.Status != 200 {
		t.Fatalf("get: %s", res.Body)
	}
	r.takeCalls()
	res = r.do(t, taskReq("tasks/update", id, taskCaps, `,"inputResponses":{"nope":{"action":"accept"}}`, nil))
	r.expect(t, res, 200, taskAck, taskCalls{Admit: 1, Find: 1, Update: 1}, id)
	taskValidate(t, "UpdateTaskResult", res.Result)
	res = r.do(t, taskReq("tasks/cancel", id, taskCaps, "", nil))
	r.expect(t, res, 200, taskAck, taskCalls{Admit: 1, Cancel: 1}, id)
	taskValidate(t, "CancelTaskResult", res.Result)
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		r.do(t, taskReq(m, taskHandleID, taskCaps, "", nil))
	}
	r.do(t, taskReq("tasks/get", id, `{}`, "", nil)) // gated: not admitted
	// The manager's error reaches the log (the operator needs the cause)
	// with the task ID scrubbed, and the client only as -32603.
	r.set(func() { r.mgr.updateErr = errors.New("storage down for " + id) })
	res = r.do(t, taskReq("tasks/update", id, taskCaps, "", nil))
	r.expect(t, res, 200, taskInternal, taskCalls{Admit: 4, Find: 1, Update: 2, Cancel: 1}, id)
	if !strings.Contains(r.logs.String(), `err="storage down for <task>"`) {
		t.Errorf("the manager's error is not logged, scrubbed:\n%s", r.logs.String())
	}
	want := []string{
		"start tasks/get", "finish tasks/get complete",
		"start tasks/update", "finish tasks/update complete",
		"start tasks/cancel", "finish tasks/cancel complete",
		"start tasks/get", "finish tasks/get protocol_error",
		"start tasks/update", "finish tasks/update protocol_error",
		"start tasks/cancel", "finish tasks/cancel protocol_error",
		"start tasks/update", "finish tasks/update internal_error",
	}
	if diff := cmp.Diff(want, r.obs.take()); diff != "" {
		t.Errorf("lifecycle (-want +got):\n%s", diff)
	}
	if c, _ := r.mem.CancelRequested(id); !c {
		t.Error("tasks/cancel did not record cancellation intent")
	}
}

// TestTaskManagerFailuresFailClosed: a scripted manager's wrong answers on
// tasks/* are the fixed internal error; not-found (also wrapped) is the
// neutral -32602. Nothing names the task.
func TestTaskManagerFailuresFailClosed(t *testing.T) {
	r := newTaskRig(t, nil)
	o := taskOrigin(t, "build", `{"n":1}`)
	storage := errors.New("storage down for " + taskHandleID)
	tests := []struct {
		name, method string
		script       func(m *taskManager)
		status       int
		body         string
		calls        taskCalls
	}{
		{"get: wrong ID", "tasks/get", func(m *taskManager) {
			m.find = func(task.RequestContext) (task.Task, bool, error) {
				return taskSnap(t, task.Params{ID: "tid-other", Origin: o, Status: task.Working}), true, nil
			}
		}, 200, taskInternal, taskCalls{Admit: 1, Find: 1}},
		{"get: storage error", "tasks/get", func(m *taskManager) {
			m.find = func(task.RequestContext) (task.Task, bool, error) { return task.Task{}, false, storage }
		}, 200, taskInternal, taskCalls{Admit: 1, Find: 1}},
		{"get: panic", "tasks/get", func(m *taskManager) {
			m.find = func(task.RequestContext) (task.Task, bool, error) { panic("scripted manager failure") }
		}, 200, taskInternal, taskCalls{Admit: 1, Find: 1}},
		{"get: not found", "tasks/get", func(m *taskManager) {
			m.find = func(task.RequestContext) (task.Task, bool, error) { return task.Task{}, false, nil }
		}, 200, taskNotFound, taskCalls{Admit: 1, Find: 1}},
		{"update: storage error", "tasks/update", func(m *taskManager) { m.updateErr = storage }, 200, taskInternal, taskCalls{Admit: 1, Update: 1}},
		{"update: wrapped not found", "tasks/update", func(m *taskManager) {
			m.updateErr = fmt.Errorf("lookup %s: %w", taskHandleID, task.ErrNotFound)
		}, 200, taskNotFound, taskCalls{Admit: 1, Update: 1}},
		{"cancel: storage error", "tasks/cancel", func(m *taskManager) { m.cancelErr = storage }, 200, taskInternal, taskCalls{Admit: 1, Cancel: 1}},
		{"cancel: not found", "tasks/cancel", func(m *taskManager) { m.cancelErr = task.ErrNotFound }, 200, taskNotFound, taskCalls{Admit: 1, Cancel: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r.set(func() {
				r.mgr.inner, r.mgr.find, r.mgr.updateErr, r.mgr.cancelErr = nil, nil, nil, nil
				tt.script(r.mgr)
			})
			res := r.do(t, taskReq(tt.method, taskHandleID, taskCaps, "", nil))
			r.expect(t, res, tt.status, tt.body, tt.calls, taskHandleID, "tid-other")
			if got := r.mgr.seen[len(r.mgr.seen)-1]; got.TaskID != taskHandleID || got.Endpoint != "tasks" || got.Tenant != server.AnonymousTenant {
				t.Errorf("manager request context = %+v", got)
			}
		})
	}
}
