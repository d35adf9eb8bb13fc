package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/task/memory"
)

// tlMeta is the _meta of a request that declares the Tasks extension.
const tlMeta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}},"elicitation":{"form":{}}}}`

type tlIn struct {
	N int `json:"n"`
}

// tlServer serves, on loopback, an endpoint with a task-required tool
// "create", an optional tool "maybe" that answers inline unless asked for
// a task, and an inline tool "echo", over a memory manager, with
// development identities.
func tlServer(t *testing.T, limits server.TaskLimits) (*httptest.Server, *memory.Manager) {
	t.Helper()
	m, err := memory.New(memory.Options{Capacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "limits", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	create := func(_ context.Context, _ *server.Request, _ tlIn, cc *task.CreationContext) (task.Handle, error) {
		tk, err := m.Create(cc)
		return task.Handle{ID: tk.ID()}, err
	}
	server.AddTaskTool[tlIn, any](ep, &mcp.Tool{Name: "create"}, create, server.WithTaskInput(task.InputElicitationForm))
	ep.AddRawTaskTool(&mcp.Tool{Name: "maybe", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *server.Request) (*mcp.CallToolResult, *task.Handle, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "inline"}}}, nil, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *server.Request, in EchoInput) (*mcp.CallToolResult, EchoOutput, error) {
		return nil, EchoOutput{Echo: in.Text}, nil
	})
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep}, TaskManager: m, Admission: server.DevAdmission(), TaskLimits: limits,
	})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return hs, m
}

// tlPost sends one JSON-RPC request over HTTP as the Bearer name who
// (anonymous when empty). name is the Mcp-Name header value, if any.
func tlPost(t *testing.T, hs *httptest.Server, who, method, name, params string) *mcptest.Response {
	t.Helper()
	if who != "" {
		who = "Bearer " + who
	}
	return tlPostAuth(t, hs, who, method, name, params)
}

// tlPostAuth is tlPost with the Authorization header value auth.
func tlPostAuth(t *testing.T, hs *httptest.Server, auth, method, name, params string) *mcptest.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":` + params + `}`
	req, err := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", mcp.LatestProtocolVersion)
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	res, err := mcptest.ParseResponse(resp.StatusCode, resp.Header, b)
	if err != nil {
		t.Fatalf("parse response: %v (%s)", err, b)
	}
	return res
}

// tlCall calls tool with args as who, declaring the Tasks extension.
func tlCall(t *testing.T, hs *httptest.Server, who, tool, args string) *mcptest.Response {
	t.Helper()
	return tlPost(t, hs, who, mcp.MethodToolsCall, tool, `{"name":"`+tool+`","arguments":`+args+`,"_meta":`+tlMeta+`}`)
}

// tlOutcome summarizes a response: the HTTP status, the JSON-RPC error
// message or the result type, and Retry-After.
func tlOutcome(res *mcptest.Response) string {
	s := http.StatusText(res.Status)
	if res.Error != nil {
		s += " " + res.Error.Message
	} else {
		var r struct {
			ResultType string `json:"resultType"`
		}
		json.Unmarshal(res.Result, &r)
		s += " " + r.ResultType
	}
	if ra := res.Header.Get("Retry-After"); ra != "" {
		s += " Retry-After " + ra
	}
	return s
}

func TestTaskCreationRate(t *testing.T) {
	// One token per 1000 s: the bucket does not refill during the test.
	hs, _ := tlServer(t, server.TaskLimits{CreateRate: 0.001, CreateBurst: 2, MaxActive: server.NoLimit})
	steps := []struct {
		who, tool, args, want string
	}{
		{"alice", "create", `{"n":1}`, "OK task"},
		{"alice", "create", `{"n":"bad"}`, "OK complete"}, // invalid arguments spend no token (a tool error)
		{"alice", "create", `{"n":2}`, "OK task"},
		{"alice", "create", `{"n":3}`, "Too Many Requests Rate limit exceeded Retry-After 1000"},
		{"alice", "maybe", `{}`, "Too Many Requests Rate limit exceeded Retry-After 1000"}, // may create a task
		{"alice", "echo", `{"text":"hi"}`, "OK complete"},                                  // inline tools are not charged
		{"bob", "create", `{"n":1}`, "OK task"},                                            // another rate key
		{"", "create", `{"n":1}`, "OK task"},                                               // anonymous is its own key
	}
	for i, s := range steps {
		if got := tlOutcome(tlCall(t, hs, s.who, s.tool, s.args)); got != s.want {
			t.Errorf("step %d: %s calls %s(%s): %s, want %s", i, s.who, s.tool, s.args, got, s.want)
		}
	}
}

func TestTaskActiveLimit(t *testing.T) {
	hs, m := tlServer(t, server.TaskLimits{CreateRate: server.NoLimit, MaxActive: 2})
	var ids []string
	for i := range 2 {
		res := tlCall(t, hs, "alice", "create", `{"n":1}`)
		h, err := res.TaskHandle()
		if err != nil {
			t.Fatalf("create %d: %s", i, tlOutcome(res))
		}
		ids = append(ids, h.TaskID)
	}
	const full = "Too Many Requests Too many active tasks Retry-After 5"
	if got := tlOutcome(tlCall(t, hs, "alice", "create", `{"n":1}`)); got != full {
		t.Fatalf("third task: %s, want %s", got, full)
	}
	if got := tlOutcome(tlCall(t, hs, "alice", "maybe", `{}`)); got != full {
		t.Fatalf("optional tool at the limit: %s, want %s", got, full)
	}
	if got := tlOutcome(tlCall(t, hs, "bob", "create", `{"n":1}`)); got != "OK task" {
		t.Fatalf("another principal: %s", got)
	}
	// A task waiting for input still counts; a terminal one does not.
	if _, err := m.RequestInput(ids[0], mcp.InputRequests{"k": mcp.NewElicitFormRequest("ok?", json.RawMessage(`{"type":"object","properties":{}}`))}, ""); err != nil {
		t.Fatal(err)
	}
	if got := tlOutcome(tlCall(t, hs, "alice", "create", `{"n":1}`)); got != full {
		t.Fatalf("with a task waiting for input: %s, want %s", got, full)
	}
	if _, err := m.Complete(ids[1], &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, ""); err != nil {
		t.Fatal(err)
	}
	if got := tlOutcome(tlCall(t, hs, "alice", "create", `{"n":1}`)); got != "OK task" {
		t.Fatalf("after a task completed: %s", got)
	}
}

// TestTaskLimitsDefaults: without TaskLimits a caller gets the default
// burst of creations, then 429 (as soon as calls outpace the default rate,
// which refills while the test runs).
func TestTaskLimitsDefaults(t *testing.T) {
	hs, _ := tlServer(t, server.TaskLimits{MaxActive: server.NoLimit})
	for i := range server.DefaultTaskCreateBurst {
		if got := tlOutcome(tlCall(t, hs, "alice", "maybe", `{}`)); got != "OK complete" {
			t.Fatalf("call %d: %s", i, got)
		}
	}
	for i := range server.DefaultTaskCreateBurst {
		res := tlCall(t, hs, "alice", "maybe", `{}`)
		if res.Status == http.StatusTooManyRequests && res.Header.Get("Retry-After") == "1" {
			return
		}
		if res.Status != http.StatusOK {
			t.Fatalf("call %d after the burst: %s", i, tlOutcome(res))
		}
	}
	t.Fatalf("%d calls after the burst were not limited", server.DefaultTaskCreateBurst)
}

func TestTaskLimitsValidated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limits server.TaskLimits
		ok     bool
	}{
		{"zero", server.TaskLimits{}, true},
		{"no limits", server.TaskLimits{CreateRate: server.NoLimit, MaxActive: server.NoLimit}, true},
		{"negative rate", server.TaskLimits{CreateRate: -2}, false},
		{"NaN rate", server.TaskLimits{CreateRate: math.NaN()}, false},
		{"infinite rate", server.TaskLimits{CreateRate: math.Inf(1)}, false},
		{"negative burst", server.TaskLimits{CreateBurst: -1}, false},
		{"negative active", server.TaskLimits{MaxActive: -5}, false},
		{"negative answer bytes", server.TaskLimits{MaxAnswerBytes: -1}, false},
	} {
		ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "v", Version: "1"})
		_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskLimits: tc.limits})
		if (err == nil) != tc.ok {
			t.Errorf("%s: New error %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// A trusted importer gets no creation rate and a higher cap on its tasks
// in flight (docs/server.md, "Task limits").
func ExampleTaskLimits() {
	m, _ := memory.New(memory.Options{})
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "import", Version: "1.0.0",
		TaskProtocolVersions: []string{mcp.LatestProtocolVersion},
	})
	_, err := server.New(server.Options{
		Endpoints:   []*server.Endpoint{ep},
		TaskManager: m,
		TaskLimits:  server.TaskLimits{CreateRate: server.NoLimit, MaxActive: 10_000},
	})
	fmt.Println(err)
	// Output: <nil>
}

// TestTaskLimitsJoined: New reports the problems of TaskLimits joined with
// those of the other options, each naming its field, as for every other
// option.
func TestTaskLimitsJoined(t *testing.T) {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "v", Version: "1"})
	_, err := server.New(server.Options{
		Endpoints:    []*server.Endpoint{ep},
		HandlerQueue: -1,
		TaskLimits:   server.TaskLimits{CreateRate: -2, CreateBurst: -1, MaxAnswerBytes: -1},
	})
	if err == nil {
		t.Fatal("New accepted negative options")
	}
	want := []string{
		"server: Options.HandlerQueue must not be negative (zero means the default), got -1",
		"server: TaskLimits.CreateRate -2 must be positive or NoLimit",
		"server: TaskLimits.CreateBurst must not be negative (zero means the default), got -1",
		"server: TaskLimits.MaxAnswerBytes must not be negative (zero means the default), got -1",
	}
	if diff := cmp.Diff(want, strings.Split(err.Error(), "\n")); diff != "" {
		t.Errorf("New error lines (-want +got):\n%s", diff)
	}
}
