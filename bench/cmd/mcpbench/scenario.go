package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Scenarios: the request every target of a run answers.
const (
	// scenarioToolsCall is an inline tools/call of test_simple_text.
	scenarioToolsCall = "tools-call"
	// scenarioTasksGet is tasks/get of a completed task.
	scenarioTasksGet = "tasks-get"
	// scenarioLegacyToolsCall is the tools/call of test_simple_text a
	// 2025-11-25 client sends inside its session, side by side with the
	// modern request.
	scenarioLegacyToolsCall = "legacy-tools-call"
	// scenarioGatewayCall is the tools-call request sent to the gosdk
	// server directly and through a taskwire gateway in front of it.
	scenarioGatewayCall = "gateway-call"
)

// scenario is one benchmark workload.
type scenario struct {
	Name        string
	Description string
	// DefaultTargets is the default of -targets.
	DefaultTargets string
	// Supported are the targets that can serve the scenario.
	Supported []string
	// Ratios are the pairs of targets whose req/s ratio is reported.
	Ratios [][2]string
	// Goals evaluates taskwire's throughput goals for the scenario.
	Goals func([]targetResult) []goal
}

// allScenarios returns every scenario; the first is the default.
func allScenarios() []scenario {
	return []scenario{
		{
			Name:           scenarioToolsCall,
			Description:    "inline tools/call of test_simple_text",
			DefaultTargets: defaultTargetList,
			Supported:      []string{"taskwire", "gosdk", "gosdk-legacy", "bare"},
			Ratios: [][2]string{
				{"taskwire", "gosdk"}, {"taskwire", "gosdk-legacy"}, {"taskwire", "bare"},
				{"bare", "gosdk"}, {"bare", "gosdk-legacy"},
			},
			Goals: evalGoals,
		},
		{
			Name: scenarioTasksGet,
			Description: "tasks/get of a completed task (created before load with slow_compute {\"seconds\":0}; " +
				"taskwire: the fixture's development task manager, store/memory)",
			DefaultTargets: "taskwire,bare",
			Supported:      []string{"taskwire", "bare"},
			Ratios:         [][2]string{{"taskwire", "bare"}},
			Goals:          evalTasksGetGoals,
		},
		{
			Name: scenarioLegacyToolsCall,
			Description: "tools/call of test_simple_text: " + legacyProtocolVersion + " inside a session (taskwire-legacy, " +
				"gosdk-stateful) and 2026-07-28 (taskwire, bare)",
			DefaultTargets: "taskwire-legacy,taskwire,gosdk-stateful,bare",
			Supported:      []string{"taskwire-legacy", "taskwire", "gosdk-stateful", "bare", "gosdk", "gosdk-legacy"},
			Ratios: [][2]string{
				{"taskwire-legacy", "taskwire"}, {"taskwire-legacy", "gosdk-stateful"}, {"taskwire", "bare"},
				{"taskwire-legacy", "bare"}, {"bare", "gosdk-stateful"},
			},
			Goals: evalLegacyGoals,
		},
		{
			Name: scenarioGatewayCall,
			Description: "inline tools/call of test_simple_text on the gosdk server, directly (gosdk) and through " +
				"taskwire's gateway passing it through (gateway)",
			DefaultTargets: "gateway,gosdk",
			Supported:      []string{"gateway", "gosdk"},
			Ratios:         [][2]string{{"gateway", "gosdk"}},
			Goals:          func([]targetResult) []goal { return nil },
		},
	}
}

// evalLegacyGoals evaluates the legacy-tools-call goals: the session-bound
// legacy call at least 70% of the modern call and at least 5x go-sdk's
// stateful server on the same request, and the modern call still at least
// 70% of bare (the tools-call goal, which the era classifier must not
// erode).
func evalLegacyGoals(results []targetResult) []goal {
	spec := []struct {
		desc string
		a, b string
		min  float64
		pct  bool
	}{
		{"taskwire-legacy >= 0.7x taskwire (modern)", "taskwire-legacy", "taskwire", 0.7, false},
		{"taskwire-legacy >= 5x gosdk-stateful", "taskwire-legacy", "gosdk-stateful", 5, false},
		{"taskwire (modern) >= 70% of bare", "taskwire", "bare", 0.7, true},
	}
	goals := make([]goal, len(spec))
	for i, g := range spec {
		goals[i] = goal{Desc: g.desc, Value: "n/a"}
		if r, ok := ratio(results, g.a, g.b); ok {
			v := fmt.Sprintf("%.2fx", r)
			if g.pct {
				v = fmt.Sprintf("%.1f%%", 100*r)
			}
			goals[i] = goal{Desc: g.desc, Value: v, Known: true, Met: r >= g.min}
		}
	}
	return goals
}

// lookupScenario returns the scenario called name.
func lookupScenario(name string) (scenario, error) {
	var names []string
	for _, s := range allScenarios() {
		if s.Name == name {
			return s, nil
		}
		names = append(names, s.Name)
	}
	return scenario{}, usageError{fmt.Sprintf("unknown scenario %q (known: %s)", name, strings.Join(names, ", "))}
}

// checkTargets rejects targets that cannot serve the scenario.
func (s scenario) checkTargets(targets []target) error {
	for _, t := range targets {
		if !slices.Contains(s.Supported, t.Name) {
			return usageError{fmt.Sprintf("target %s cannot serve scenario %s (supported: %s)",
				t.Name, s.Name, strings.Join(s.Supported, ", "))}
		}
	}
	return nil
}

// evalTasksGetGoals evaluates the tasks/get goal: taskwire at least 70% of
// the bare handler.
func evalTasksGetGoals(results []targetResult) []goal {
	g := goal{Desc: "taskwire tasks/get >= 70% of bare", Value: "n/a"}
	if r, ok := ratio(results, "taskwire", "bare"); ok {
		g = goal{Desc: g.Desc, Value: fmt.Sprintf("%.1f%%", 100*r), Known: true, Met: r >= 0.70}
	}
	return []goal{g}
}

// tasksCapabilities declares the Tasks extension.
const tasksCapabilities = `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`

// slowComputeText is the text result of slow_compute {"seconds":0}.
const slowComputeText = `Computed "" in 0s.`

// requestMeta is the per-request _meta of a 2026-07-28 client with the
// given capabilities.
func requestMeta(capabilities string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"` + protocolVersion + `",` +
		`"io.modelcontextprotocol/clientCapabilities":` + capabilities + `,` +
		`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"}}`
}

// postRequest is a 2026-07-28 POST with the mirrored Mcp-Method and
// Mcp-Name headers.
func postRequest(method, name, body string) request {
	return request{
		Method: "POST",
		Path:   endpointPath,
		Headers: []header{
			{"Content-Type", "application/json"},
			{"Accept", "application/json, text/event-stream"},
			{mcp.HeaderProtocolVersion, protocolVersion},
			{mcp.HeaderMethod, method},
			{mcp.HeaderName, mcp.EncodeHeaderValue(name)},
		},
		Body: body,
	}
}

// slowComputeRequest is the tools/call that creates the benchmark's task:
// slow_compute {"seconds":0} from a client that declares Tasks.
func slowComputeRequest() request {
	return postRequest("tools/call", "slow_compute",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow_compute","arguments":{"seconds":0},`+
			requestMeta(tasksCapabilities)+`}}`)
}

// tasksGetRequest is tasks/get of taskID from a client that declares Tasks.
func tasksGetRequest(taskID string) request {
	id, _ := json.Marshal(taskID)
	return postRequest("tasks/get", taskID,
		`{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":`+string(id)+`,`+
			requestMeta(tasksCapabilities)+`}}`)
}

// tasksGetExpectation is the expectation of the tasks-get scenario: the
// completed task taskID with the slow_compute result.
func tasksGetExpectation(taskID string) expectation {
	id, _ := json.Marshal(taskID)
	text, _ := json.Marshal(slowComputeText)
	return expectation{
		What: "completed task",
		Check: func(status int, contentType string, body []byte) error {
			return checkTasksGetResponse(status, contentType, body, taskID)
		},
		Contains: []string{
			`"taskId":` + string(id),
			`"status":"completed"`,
			string(text[1 : len(text)-1]),
		},
	}
}

// tasksGetResponse is the subset of a tasks/get response that verification
// looks at.
type tasksGetResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  *struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
		Status     string `json:"status"`
		Result     *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	} `json:"result"`
	Error json.RawMessage `json:"error"`
}

// checkTasksGetResponse validates one HTTP response to tasks/get of taskID:
// HTTP 200, application/json, JSON-RPC id 1 without error, resultType
// complete, the task ID, status completed, and the slow_compute result.
func checkTasksGetResponse(status int, contentType string, body []byte, taskID string) error {
	resp, err := decodeTasksGet(status, contentType, body)
	if err != nil {
		return err
	}
	r := resp.Result
	switch {
	case r.TaskID != taskID:
		return fmt.Errorf("taskId %q, want %q", r.TaskID, taskID)
	case r.Status != "completed":
		return fmt.Errorf("status %q, want \"completed\"", r.Status)
	case r.Result == nil:
		return fmt.Errorf("completed task without a result")
	case r.Result.IsError:
		return fmt.Errorf("task result has isError: true")
	case len(r.Result.Content) != 1 || r.Result.Content[0].Type != "text" || r.Result.Content[0].Text != slowComputeText:
		return fmt.Errorf("task result content %+v, want one text block %q", r.Result.Content, slowComputeText)
	}
	return nil
}

// decodeTasksGet decodes a successful tasks/get response.
func decodeTasksGet(status int, contentType string, body []byte) (*tasksGetResponse, error) {
	if status != http.StatusOK {
		return nil, fmt.Errorf("HTTP status %d, want 200", status)
	}
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != "application/json" {
		return nil, fmt.Errorf("Content-Type %q, want application/json", contentType)
	}
	var resp tasksGetResponse
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("decode JSON-RPC response: %w", err)
	}
	switch {
	case resp.JSONRPC != "2.0":
		return nil, fmt.Errorf("jsonrpc %q, want \"2.0\"", resp.JSONRPC)
	case !bytes.Equal(bytes.TrimSpace(resp.ID), []byte("1")):
		return nil, fmt.Errorf("id %s, want 1", resp.ID)
	case len(resp.Error) > 0 && !bytes.Equal(resp.Error, []byte("null")):
		return nil, fmt.Errorf("JSON-RPC error %s", resp.Error)
	case resp.Result == nil:
		return nil, fmt.Errorf("no result")
	case resp.Result.ResultType != "complete":
		return nil, fmt.Errorf("resultType %q, want \"complete\"", resp.Result.ResultType)
	}
	return &resp, nil
}

// createCompletedTask creates the tasks-get scenario's task on the taskwire
// server at baseURL: it calls slow_compute {"seconds":0} with the Tasks
// capability, then polls tasks/get until the task has completed, and
// returns its ID.
func createCompletedTask(ctx context.Context, client *http.Client, baseURL string) (string, error) {
	status, contentType, body, err := send(ctx, client, baseURL, slowComputeRequest())
	if err != nil {
		return "", fmt.Errorf("create task: %w", err)
	}
	if status != http.StatusOK {
		return "", fmt.Errorf("create task: HTTP status %d; body: %s", status, truncate(body, 512))
	}
	if mt, _, err := mime.ParseMediaType(contentType); err != nil || mt != "application/json" {
		return "", fmt.Errorf("create task: Content-Type %q, want application/json", contentType)
	}
	var created struct {
		Result *struct {
			ResultType string `json:"resultType"`
			TaskID     string `json:"taskId"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &created); err != nil || created.Result == nil ||
		created.Result.ResultType != "task" || created.Result.TaskID == "" {
		return "", fmt.Errorf("create task: want a result with resultType \"task\" and a taskId; body: %s", truncate(body, 512))
	}
	id := created.Result.TaskID
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		status, contentType, body, err := send(ctx, client, baseURL, tasksGetRequest(id))
		if err != nil {
			return "", fmt.Errorf("poll task: %w", err)
		}
		resp, err := decodeTasksGet(status, contentType, body)
		if err != nil {
			return "", fmt.Errorf("poll task: %w; body: %s", err, truncate(body, 512))
		}
		switch resp.Result.Status {
		case "completed":
			return id, nil
		case "working":
		default:
			return "", fmt.Errorf("poll task: status %q, want working, then completed", resp.Result.Status)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("poll task: not completed after 10s: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// randomTaskID returns a random UUID-shaped task ID, for a tasks-get run
// without a taskwire target.
func randomTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// sameShape reports why two JSON documents differ in shape (member names,
// array lengths, value kinds) or in size, or returns nil.
func sameShape(a, b []byte) error {
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		return fmt.Errorf("first document: %w", err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		return fmt.Errorf("second document: %w", err)
	}
	if err := shapeDiff("$", va, vb); err != nil {
		return err
	}
	if len(a) != len(b) {
		return fmt.Errorf("sizes differ: %d and %d bytes", len(a), len(b))
	}
	return nil
}

func shapeDiff(path string, a, b any) error {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: object vs %T", path, b)
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok {
				return fmt.Errorf("%s.%s: missing from the second document", path, k)
			}
			if err := shapeDiff(path+"."+k, av, bv); err != nil {
				return err
			}
		}
		for k := range bm {
			if _, ok := a[k]; !ok {
				return fmt.Errorf("%s.%s: missing from the first document", path, k)
			}
		}
	case []any:
		bs, ok := b.([]any)
		if !ok || len(bs) != len(a) {
			return fmt.Errorf("%s: arrays differ in length or kind", path)
		}
		for i := range a {
			if err := shapeDiff(fmt.Sprintf("%s[%d]", path, i), a[i], bs[i]); err != nil {
				return err
			}
		}
	default:
		if fmt.Sprintf("%T", a) != fmt.Sprintf("%T", b) {
			return fmt.Errorf("%s: %T vs %T", path, a, b)
		}
	}
	return nil
}
