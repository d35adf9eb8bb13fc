package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// TestLegacyTaskCapability: the tasks capability goes to 2025-11-25
// sessions of clients that declared tasks, on endpoints that serve Tasks;
// never to other sessions, and never into server/discover.
func TestLegacyTaskCapability(t *testing.T) {
	r := newLTRig(t, nil)
	tests := []struct {
		version, caps string
		want          string // the capabilities' tasks member, "" for none
	}{
		{ltV11, ltTasksCaps, `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`},
		{ltV11, `{"tasks":{}}`, `{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}`},
		{ltV11, ltNoCaps, ""},
		{ltV06, ltTasksCaps, ""},
	}
	for _, tt := range tests {
		c := &legacyClient{t: t, url: r.url}
		rep := c.initialize(tt.version, tt.caps)
		statusOK(t, rep)
		var res struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		}
		if err := json.Unmarshal(rep.final(t).Result, &res); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, string(res.Capabilities["tasks"])); diff != "" {
			t.Errorf("%s %s: tasks capability (-want +got):\n%s", tt.version, tt.caps, diff)
		}
	}
	// The modern discovery of the same endpoint never names them.
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, r.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LatestProtocolVersion)
	req.Header.Set("Mcp-Method", "server/discover")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var disc struct {
		Result struct {
			Capabilities map[string]json.RawMessage `json:"capabilities"`
		} `json:"result"`
	}
	if err := json.NewDecoder(res.Body).Decode(&disc); err != nil {
		t.Fatal(err)
	}
	if _, ok := disc.Result.Capabilities["tasks"]; ok || disc.Result.Capabilities["extensions"] == nil {
		t.Errorf("server/discover capabilities = %v, want the extension and no legacy tasks", disc.Result.Capabilities)
	}
}

// TestLegacyTaskToolViews: tools/list of each kind of session.
func TestLegacyTaskToolViews(t *testing.T) {
	r := newLTRig(t, nil)
	tests := []struct {
		version, caps string
		want          map[string]string // tool → execution member ("-" for none)
	}{
		{ltV11, ltTasksCaps, map[string]string{
			"build": `{"taskSupport":"required"}`, "build.inline": `{"taskSupport":"required"}`,
			"opt": `{"taskSupport":"optional"}`, "plain": `{"taskSupport":"forbidden"}`,
		}},
		{ltV11, ltNoCaps, map[string]string{
			"build.inline": `{"taskSupport":"forbidden"}`, "opt": `{"taskSupport":"forbidden"}`, "plain": `{"taskSupport":"forbidden"}`,
		}},
		{ltV06, ltTasksCaps, map[string]string{"build.inline": "-", "opt": "-", "plain": "-"}},
	}
	for _, tt := range tests {
		c := r.client(tt.version, tt.caps, "")
		rep := c.request("tools/list", `{}`)
		statusOK(t, rep)
		var res struct {
			Tools []struct {
				Name      string          `json:"name"`
				Execution json.RawMessage `json:"execution"`
			} `json:"tools"`
		}
		if err := json.Unmarshal(rep.final(t).Result, &res); err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, tool := range res.Tools {
			got[tool.Name] = string(tool.Execution)
			if got[tool.Name] == "" {
				got[tool.Name] = "-"
			}
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.version, tt.caps, diff)
		}
	}
}

// TestLegacyTaskLifecycle: a task-augmented call creates the task in the
// manager; tasks/get and the notification show it in 2025-11-25 shape;
// tasks/result blocks until the worker completes it and returns the result
// tagged with the related task.
func TestLegacyTaskLifecycle(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV11, ltTasksCaps, "alice")
	_, events := openGetStream(t, c)

	rep := c.request("tools/call", `{"name":"build","arguments":{},"task":{"ttl":60000}}`)
	statusOK(t, rep)
	id := r.nextCreated()
	created := rep.final(t).Result
	mustValidate(t, "CreateTaskResult", created)
	var cr mcp.LegacyCreateTaskResult
	if err := json.Unmarshal(created, &cr); err != nil {
		t.Fatal(err)
	}
	if cr.Task.TaskID != id || cr.Task.Status != mcp.TaskWorking || cr.Task.TTL == nil || *cr.Task.TTL != 3_600_000 ||
		cr.Task.PollInterval == nil || *cr.Task.PollInterval != 1000 || strings.Contains(string(created), "resultType") {
		t.Errorf("CreateTaskResult = %s", created)
	}
	tk, err := r.mem.Find(id)
	if err != nil {
		t.Fatal(err)
	}
	if o := tk.Origin().Params(); o.ProtocolVersion != ltV11 || o.Tool != "build" {
		t.Errorf("origin: version %q tool %q", o.ProtocolVersion, o.Tool)
	}

	get := c.request("tasks/get", `{"taskId":"`+id+`"}`)
	statusOK(t, get)
	mustValidate(t, "GetTaskResult", get.final(t).Result)

	done := make(chan *legacyReply, 1)
	go func() { done <- c.clone().request("tasks/result", `{"taskId":"`+id+`"}`) }()
	if _, err := r.mem.Complete(id, ltResult(3), "built"); err != nil {
		t.Fatal(err)
	}
	res := <-done
	statusOK(t, res)
	want := `{"content":[{"type":"text","text":"{\"sum\":3}"}],"structuredContent":{"sum":3},` +
		`"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + id + `"}}}`
	if diff := cmp.Diff(want, string(res.final(t).Result)); diff != "" {
		t.Errorf("tasks/result (-want +got):\n%s", diff)
	}
	// The status notification arrives on the GET stream.
	timeout := time.After(10 * time.Second)
	for done := false; !done; {
		select {
		case m := <-events:
			if m.Method != mcp.NotificationTasksStatus {
				continue
			}
			mustValidate(t, "TaskStatusNotificationParams", m.Params)
			var lt mcp.LegacyTask
			json.Unmarshal(m.Params, &lt)
			done = lt.TaskID == id && lt.Status == mcp.TaskCompleted
		case <-timeout:
			t.Fatal("no notifications/tasks/status for the completed task")
		}
	}
}

// TestLegacyTaskCallRules: a task-required tool without params.task is
// -32601 for a client with tasks; for a client without tasks it is a
// clear refusal unless the tool waits inline; params.task from a client
// without tasks is ignored; an optional tool answers inline without it.
func TestLegacyTaskCallRules(t *testing.T) {
	r := newLTRig(t, nil)
	withTasks := r.client(ltV11, ltTasksCaps, "")
	without := r.client(ltV06, ltNoCaps, "")
	tests := []struct {
		c      *legacyClient
		params string
		want   string // the final message's result or error
	}{
		{withTasks, `{"name":"build","arguments":{}}`, `{"code":-32601,"message":"Method not found: this tool must be called as a task (params.task)"}`},
		{withTasks, `{"name":"opt","arguments":{}}`, `{"content":[{"type":"text","text":"inline"}]}`},
		{without, `{"name":"build","arguments":{}}`, `{"code":-32600,"message":"Invalid request: this tool runs only as a durable task; use a client with 2025-11-25 tasks (capability tasks) or the 2026-07-28 Tasks extension"}`},
		{without, `{"name":"build","arguments":{},"task":{}}`, `{"code":-32600,"message":"Invalid request: this tool runs only as a durable task; use a client with 2025-11-25 tasks (capability tasks) or the 2026-07-28 Tasks extension"}`},
		{without, `{"name":"opt","arguments":{},"task":{}}`, `{"content":[{"type":"text","text":"inline"}]}`},
		// A 2026 capability in a legacy request's _meta offers nothing.
		{without, `{"name":"opt","arguments":{},"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}`,
			`{"content":[{"type":"text","text":"inline"}]}`},
		// A tool that never runs as a task, called as one: -32601 for a
		// client with tasks; a client without tasks has params.task ignored.
		{withTasks, `{"name":"plain","arguments":{},"task":{}}`, `{"code":-32601,"message":"Method not found: this tool cannot be called as a task (its taskSupport is forbidden)"}`},
		{without, `{"name":"plain","arguments":{},"task":{}}`, `{"content":[{"type":"text","text":"plain"}]}`},
		{withTasks, `{"name":"nosuch","arguments":{},"task":{}}`, `{"code":-32602,"message":"Invalid params: unknown tool \"nosuch\""}`},
		{withTasks, `{"name":"build","arguments":{},"task":{"ttl":-1}}`, `{"code":-32602,"message":"Invalid params: task must be an object with an optional non-negative integer ttl"}`},
	}
	for _, tt := range tests {
		rep := tt.c.request("tools/call", tt.params)
		statusOK(t, rep)
		m := rep.final(t)
		got := string(m.Result)
		if m.Error != nil {
			b, _ := json.Marshal(m.Error)
			got = string(b)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.params, diff)
		}
	}
	select {
	case id := <-r.created:
		t.Errorf("a refused call created task %q", id)
	default:
	}
}

// TestLegacyTaskResultInput: while the task needs input, tasks/result asks
// the client with a real elicitation request tagged with the related task,
// stores the answer through the manager, and returns once the worker
// completes.
func TestLegacyTaskResultInput(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV11, ltTasksCaps, "")
	statusOK(t, c.request("tools/call", `{"name":"build","arguments":{},"task":{}}`))
	id := r.nextCreated()
	hints := r.hints(id)
	if _, err := r.mem.RequestInput(id, mcp.InputRequests{ltFormKey: mcp.NewElicitFormRequest("Approve?", json.RawMessage(ltForm))}, "waiting"); err != nil {
		t.Fatal(err)
	}
	asked := make(chan legacyMsg, 1)
	rc := c.clone()
	rc.answer = func(m legacyMsg) string {
		asked <- m
		return `{"action":"accept","content":{"ok":true}}`
	}
	done := make(chan *legacyReply, 1)
	go func() { done <- rc.request("tasks/result", `{"taskId":"`+id+`"}`) }()

	m := <-asked
	if m.Method != mcp.MethodElicitationCreate {
		t.Fatalf("asked %s", m.Method)
	}
	var p struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	}
	json.Unmarshal(m.Params, &p)
	if diff := cmp.Diff(`{"taskId":"`+id+`"}`, string(p.Meta[mcp.MetaRelatedTask])); diff != "" {
		t.Errorf("related-task (-want +got):\n%s", diff)
	}
	r.waitFor(id, hints, func(tk task.Task) bool { return tk.Status() == task.Working })
	answers, err := r.mem.TakeInputResponses(id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"action":"accept","content":{"ok":true}}`, string(answers[ltFormKey])); diff != "" {
		t.Errorf("stored answer (-want +got):\n%s", diff)
	}
	if _, err := r.mem.Complete(id, ltResult(1), ""); err != nil {
		t.Fatal(err)
	}
	res := <-done
	statusOK(t, res)
	if fm := res.final(t); fm.Error != nil || !strings.Contains(string(fm.Result), `"sum":1`) {
		t.Errorf("tasks/result = %s", res.body)
	}
}

// TestLegacyTaskTerminalOutcomes: tasks/get and tasks/result of each kind
// of terminal task, and tasks/cancel's rules.
func TestLegacyTaskTerminalOutcomes(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV11, ltTasksCaps, "")
	newTask := func() string {
		statusOK(t, c.request("tools/call", `{"name":"build","arguments":{},"task":{}}`))
		return r.nextCreated()
	}
	final := func(rep *legacyReply) string {
		m := rep.final(t)
		if m.Error != nil {
			b, _ := json.Marshal(m.Error)
			return "error " + string(b)
		}
		return string(m.Result)
	}
	status := func(id string) string {
		var lt mcp.LegacyTask
		json.Unmarshal(c.request("tasks/get", `{"taskId":"`+id+`"}`).final(t).Result, &lt)
		return string(lt.Status) + ": " + lt.StatusMessage
	}

	toolErr := newTask()
	r.mem.Complete(toolErr, &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "no disk"}}}, "")
	failed := newTask()
	r.mem.Fail(failed, mcp.NewError(-32603, "upstream down"), "")
	cancelled := newTask()
	r.mem.Cancel(cancelled, "")

	tests := []struct {
		id, status, result string
	}{
		{toolErr, "failed: The tool reported an error; tasks/result returns it.",
			`{"content":[{"type":"text","text":"no disk"}],"isError":true,"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + toolErr + `"}}}`},
		{failed, "failed: upstream down", `error {"code":-32603,"message":"upstream down"}`},
		{cancelled, "cancelled: ", `error {"code":-32800,"message":"Request cancelled: the task was cancelled"}`},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.status, status(tt.id)); diff != "" {
			t.Errorf("tasks/get (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(tt.result, final(c.request("tasks/result", `{"taskId":"`+tt.id+`"}`))); diff != "" {
			t.Errorf("tasks/result (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(`error {"code":-32602,"message":"Invalid params: cannot cancel a task in terminal status \"`+
			strings.SplitN(tt.status, ":", 2)[0]+`\""}`, final(c.request("tasks/cancel", `{"taskId":"`+tt.id+`"}`))); diff != "" {
			t.Errorf("tasks/cancel of a terminal task (-want +got):\n%s", diff)
		}
	}

	// Cancelling a working task records the intent; a worker that stops
	// at once makes the answer cancelled.
	working := newTask()
	hints := r.hints(working)
	go func() {
		r.waitFor(working, hints, func(task.Task) bool {
			req, _ := r.mem.CancelRequested(working)
			return req
		})
		r.mem.Cancel(working, "stopped")
	}()
	rep := c.request("tasks/cancel", `{"taskId":"`+working+`"}`)
	mustValidate(t, "CancelTaskResult", rep.final(t).Result)
	if diff := cmp.Diff("cancelled: stopped", status(working)); diff != "" {
		t.Errorf("after tasks/cancel (-want +got):\n%s", diff)
	}
}

// TestLegacyTaskAuthorizationNeutral: another identity's task gets the
// same bytes as an unknown one on every task method.
func TestLegacyTaskAuthorizationNeutral(t *testing.T) {
	r := newLTRig(t, nil)
	alice := r.client(ltV11, ltTasksCaps, "alice")
	bob := r.client(ltV11, ltTasksCaps, "bob")
	statusOK(t, alice.request("tools/call", `{"name":"build","arguments":{},"task":{}}`))
	id := r.nextCreated()
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/cancel"} {
		foreign := bob.request(method, `{"taskId":"`+id+`"}`)
		unknown := bob.request(method, `{"taskId":"no-such-task"}`)
		if diff := cmp.Diff(string(unknown.body), string(foreign.body)); diff != "" || foreign.status != unknown.status {
			t.Errorf("%s: foreign differs from unknown (-unknown +foreign):\n%s", method, diff)
		}
		if want := `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}`; strings.TrimSpace(string(foreign.body)) != want {
			t.Errorf("%s: body %s, want %s", method, foreign.body, want)
		}
	}
	if tk, _ := r.mem.Find(id); tk.Status() != task.Working {
		t.Errorf("status %s after bob's calls", tk.Status())
	}
	if req, _ := r.mem.CancelRequested(id); req {
		t.Error("bob's tasks/cancel reached alice's task")
	}
}

// TestLegacyTaskMethodsGated: the tasks methods do not exist for a session
// without tasks.
func TestLegacyTaskMethodsGated(t *testing.T) {
	r := newLTRig(t, nil)
	without := r.client(ltV11, ltNoCaps, "")
	for _, method := range []string{"tasks/get", "tasks/result", "tasks/list", "tasks/cancel"} {
		rep := without.request(method, `{"taskId":"x"}`)
		if m := rep.final(t); m.Error == nil || m.Error.Code != mcp.CodeMethodNotFound {
			t.Errorf("%s without tasks: %s", method, rep.body)
		}
	}
}

// ltNoLister hides the memory manager's task.Lister.
type ltNoLister struct{ task.Manager }

// TestLegacyTaskListWithoutLister: a manager that cannot list gets no
// tasks.list capability and tasks/list does not exist.
func TestLegacyTaskListWithoutLister(t *testing.T) {
	var r *ltRig
	r = newLTRig(t, func(o *server.Options) { o.TaskManager = ltNoLister{o.TaskManager} })
	c := &legacyClient{t: t, url: r.url}
	rep := c.initialize(ltV11, ltTasksCaps)
	if !strings.Contains(string(rep.final(t).Result), `"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}`) {
		t.Errorf("initialize = %s", rep.body)
	}
	if m := c.request("tasks/list", `{}`).final(t); m.Error == nil || m.Error.Code != mcp.CodeMethodNotFound {
		t.Errorf("tasks/list without a Lister: %+v", m)
	}
}

// TestLegacyTaskList: tasks/list pages through the caller's own tasks,
// newest first; another caller's cursor and a forged one are -32602.
func TestLegacyTaskList(t *testing.T) {
	r := newLTRigPaged(t, 2)
	alice := r.client(ltV11, ltTasksCaps, "alice")
	bob := r.client(ltV11, ltTasksCaps, "bob")
	var mine []string
	for range 3 {
		statusOK(t, alice.request("tools/call", `{"name":"build","arguments":{},"task":{}}`))
		mine = append([]string{r.nextCreated()}, mine...) // newest first
	}
	statusOK(t, bob.request("tools/call", `{"name":"build","arguments":{},"task":{}}`))
	bobs := r.nextCreated()

	var got []string
	cursor := ""
	pages := 0
	for ; ; pages++ {
		params := `{}`
		if cursor != "" {
			params = `{"cursor":` + jsonString(cursor) + `}`
		}
		rep := alice.request("tasks/list", params)
		statusOK(t, rep)
		mustValidate(t, "ListTasksResult", rep.final(t).Result)
		var page mcp.LegacyListTasksResult
		json.Unmarshal(rep.final(t).Result, &page)
		if len(page.Tasks) > 2 {
			t.Fatalf("page of %d tasks", len(page.Tasks))
		}
		for _, lt := range page.Tasks {
			got = append(got, lt.TaskID)
		}
		if cursor = page.NextCursor; cursor == "" || pages > 3 {
			break
		}
		if m := bob.request("tasks/list", `{"cursor":`+jsonString(cursor)+`}`).final(t); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
			t.Errorf("bob with alice's cursor: %+v", m)
		}
	}
	if pages != 1 {
		t.Errorf("%d pages after the first, want 1", pages)
	}
	// Creation times may tie within a millisecond; the order is then by ID.
	if diff := cmp.Diff(sortedCopy(mine), sortedCopy(got)); diff != "" || len(got) != 3 {
		t.Errorf("alice's listing (-want +got):\n%s", diff)
	}
	var page mcp.LegacyListTasksResult
	json.Unmarshal(bob.request("tasks/list", `{}`).final(t).Result, &page)
	if len(page.Tasks) != 1 || page.Tasks[0].TaskID != bobs {
		t.Errorf("bob's listing = %+v", page.Tasks)
	}
	if m := alice.request("tasks/list", `{"cursor":"forged"}`).final(t); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("forged cursor: %+v", m)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// TestLegacyTaskResultWrongAnswer: an answer that does not match the input
// request is not stored and ends tasks/result with -32602 naming the key.
func TestLegacyTaskResultWrongAnswer(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV11, ltTasksCaps, "")
	statusOK(t, c.request("tools/call", `{"name":"build","arguments":{},"task":{}}`))
	id := r.nextCreated()
	r.mem.RequestInput(id, mcp.InputRequests{ltFormKey: mcp.NewElicitFormRequest("Approve?", json.RawMessage(ltForm))}, "")
	c.answer = func(legacyMsg) string { return `{"action":"accept","content":{"ok":"yes"}}` }
	m := c.request("tasks/result", `{"taskId":"`+id+`"}`).final(t)
	if m.Error == nil || m.Error.Code != mcp.CodeInvalidParams || !strings.Contains(m.Error.Message, `the answer to input request "approve"`) {
		t.Errorf("tasks/result = %+v", m)
	}
	if tk, _ := r.mem.Find(id); tk.Status() != task.InputRequired {
		t.Errorf("status = %s", tk.Status())
	}
	if answers, _ := r.mem.TakeInputResponses(id); len(answers) != 0 {
		t.Errorf("stored %v", answers)
	}
}

// ltNoHints hides the memory manager's EventPublisher.
type ltNoHints struct{ task.Manager }

func (ltNoHints) EventPublisher() task.EventPublisher { return nil }

// TestLegacyTaskResultPolls: with a manager that publishes no hints,
// tasks/result still notices the end of the task by polling.
func TestLegacyTaskResultPolls(t *testing.T) {
	r := newLTRig(t, func(o *server.Options) { o.TaskManager = ltNoHints{o.TaskManager} })
	c := r.client(ltV11, ltTasksCaps, "")
	statusOK(t, c.request("tools/call", `{"name":"build","arguments":{},"task":{}}`))
	id := r.nextCreated()
	result, _ := ltStream(t, c, `{"jsonrpc":"2.0","id":9,"method":"tasks/result","params":{"taskId":"`+id+`"}}`)
	r.mem.Complete(id, ltResult(4), "")
	if m := next(t, result); !strings.Contains(string(m.Result), `"sum":4`) {
		t.Errorf("tasks/result = %s %+v", m.Result, m.Error)
	}
}
