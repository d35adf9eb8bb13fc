package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

// deployInput is the input of the MRTR test tools.
type deployInput struct {
	Env string `json:"env"`
	// Rounds is how many input_required rounds the tool asks for before it
	// completes (default 1).
	Rounds int `json:"rounds,omitempty"`
	// URL makes the tool ask for URL-mode instead of form-mode elicitation.
	URL bool `json:"url,omitempty"`
	// Count is an integer argument, only part of the request digest.
	Count int64 `json:"count,omitempty"`
}

// mrtrSeen is what one handler call saw.
type mrtrSeen struct {
	State     string // "" when RequestState() is nil
	Responses map[string]string
}

// mrtrTools records every call of the MRTR test tools.
type mrtrTools struct {
	mu   sync.Mutex
	seen []mrtrSeen
}

func (m *mrtrTools) calls() []mrtrSeen {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]mrtrSeen(nil), m.seen...)
}

// handler asks for one elicitation per round, keyed q<round>, with the
// application state "round-<n>", and completes after in.Rounds rounds with
// the states it saw.
func (m *mrtrTools) handler(tool string) server.ToolHandlerFor[deployInput, any] {
	return func(_ context.Context, req *server.Request, in deployInput) (*mcp.CallToolResult, any, error) {
		seen := mrtrSeen{State: string(req.RequestState())}
		for k, v := range req.InputResponses {
			if seen.Responses == nil {
				seen.Responses = map[string]string{}
			}
			seen.Responses[k] = string(v)
		}
		m.mu.Lock()
		m.seen = append(m.seen, seen)
		m.mu.Unlock()

		round := 0
		if s, ok := strings.CutPrefix(seen.State, "round-"); ok {
			round, _ = strconv.Atoi(s)
		}
		rounds := max(in.Rounds, 1)
		if round >= rounds {
			return &mcp.CallToolResult{Content: textContent(fmt.Sprintf("%s deployed %s after %d rounds", tool, in.Env, round))}, nil, nil
		}
		next := round + 1
		var ir *mcp.InputRequest
		if in.URL {
			ir = mcp.NewElicitURLRequest("Approve the deployment", "https://approve.example.com/"+in.Env)
		} else {
			ir = mcp.NewElicitFormRequest(fmt.Sprintf("Deploy to %s? (round %d)", in.Env, next), json.RawMessage(confirmSchema))
		}
		return nil, nil, server.InputRequired(mcp.InputRequests{"q" + strconv.Itoa(next): ir}, []byte("round-"+strconv.Itoa(next)))
	}
}

// newMRTRServer is newTestServer with DevAdmission, the MRTR tools "deploy"
// and "rollback", and a prompt also named "deploy".
func newMRTRServer(t *testing.T, mutate func(*server.Options)) (*server.Server, *mrtrTools) {
	t.Helper()
	tools := &mrtrTools{}
	srv := newTestServer(t, func(o *server.Options, ep *server.Endpoint) {
		o.Admission = server.DevAdmission()
		server.AddTool(ep, &mcp.Tool{Name: "deploy"}, tools.handler("deploy"))
		server.AddTool(ep, &mcp.Tool{Name: "rollback"}, tools.handler("rollback"))
		ep.AddPrompt(&mcp.Prompt{Name: "deploy"}, func(context.Context, *server.Request, map[string]string) (*mcp.GetPromptResult, error) {
			tools.mu.Lock()
			tools.seen = append(tools.seen, mrtrSeen{State: "prompt"})
			tools.mu.Unlock()
			return &mcp.GetPromptResult{}, nil
		})
		if mutate != nil {
			mutate(o)
		}
	})
	return srv, tools
}

const (
	capsNone    = `{}`
	capsForm    = `{"elicitation":{"form":{}}}`
	capsEmpty   = `{"elicitation":{}}`
	capsURL     = `{"elicitation":{"url":{}}}`
	capsFormURL = `{"elicitation":{"form":{},"url":{}}}`
	acceptOK    = `{"action":"accept","content":{"ok":true}}`
)

// mrtrRequest describes one tools/call (or prompts/get) of an MRTR flow.
type mrtrRequest struct {
	method    string // default tools/call
	tool      string // default deploy
	args      string // arguments JSON; default {"env":"prod"}
	caps      string // client capabilities; default capsForm
	state     *string
	responses string // inputResponses JSON, omitted when empty
	principal string // Bearer principal, anonymous when empty
}

func (m mrtrRequest) send(t *testing.T, h http.Handler) *mcptest.Response {
	t.Helper()
	method, tool, args, caps := m.method, m.tool, m.args, m.caps
	if method == "" {
		method = mcp.MethodToolsCall
	}
	if tool == "" {
		tool = "deploy"
	}
	if args == "" {
		args = `{"env":"prod"}`
	}
	if caps == "" {
		caps = capsForm
	}
	members := `"name":"` + tool + `","arguments":` + args
	if m.state != nil {
		members += `,"requestState":` + strconv.Quote(*m.state)
	}
	if m.responses != "" {
		members += `,"inputResponses":` + m.responses
	}
	body := `{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":{` + members +
		`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
	headers := map[string]string{"Mcp-Name": tool}
	if m.principal != "" {
		headers["Authorization"] = "Bearer " + m.principal
	}
	return do(t, h, rawPost(body, method, headers))
}

// inputRequired decodes an input_required result and returns its state.
func inputRequired(t *testing.T, res *mcptest.Response) (mcp.InputRequests, string) {
	t.Helper()
	var r mcp.InputRequiredResult
	if res.Status != http.StatusOK || res.Error != nil {
		t.Fatalf("got HTTP %d error %v, want an input_required result; body %s", res.Status, res.Error, res.Body)
	}
	if err := json.Unmarshal(res.Result, &r); err != nil || r.ResultType != mcp.ResultInputRequired || r.RequestState == "" {
		t.Fatalf("want an input_required result with a requestState (%v), got %s", err, res.Body)
	}
	return r.InputRequests, r.RequestState
}

const badStateBody = `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: invalid requestState"}}`

func serverInfoMeta(name string) string {
	return `"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"` + name + `","version":"1.0.0"}}`
}

func TestMRTRRoundTrip(t *testing.T) {
	srv, tools := newMRTRServer(t, nil)
	first := mrtrRequest{}.send(t, srv)
	_, state := inputRequired(t, first)
	want := `{"jsonrpc":"2.0","id":7,"result":{"resultType":"input_required","inputRequests":{"q1":{"method":"elicitation/create","params":{"mode":"form","message":"Deploy to prod? (round 1)","requestedSchema":` + confirmSchema + `}}},"requestState":"<masked>",` + serverInfoMeta("test") + `}}`
	if diff := cmp.Diff(want, string(maskState(first.Body))); diff != "" {
		t.Errorf("first response (-want +got):\n%s", diff)
	}

	retry := mrtrRequest{state: &state, responses: `{"q1":` + acceptOK + `}`}.send(t, srv)
	want = `{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"deploy deployed prod after 1 rounds"}],` + serverInfoMeta("test") + `}}`
	if diff := cmp.Diff(want, string(retry.Body)); diff != "" {
		t.Errorf("retry response (-want +got):\n%s", diff)
	}
	wantSeen := []mrtrSeen{
		{},
		{State: "round-1", Responses: map[string]string{"q1": acceptOK}},
	}
	if diff := cmp.Diff(wantSeen, tools.calls()); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
}

// TestMRTRRejectsForeignState replays a requestState issued to alice for
// deploy {"env":"prod"} in every way it must not open: each is -32602 before
// the handler runs.
func TestMRTRRejectsForeignState(t *testing.T) {
	srv, tools := newMRTRServer(t, nil)
	_, state := inputRequired(t, mrtrRequest{principal: "alice"}.send(t, srv))
	tampered := []byte(state)
	i := len(tampered) / 2
	if tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	str := func(s string) *string { return &s }
	responses := `{"q1":` + acceptOK + `}`
	tests := []struct {
		name string
		req  mrtrRequest
	}{
		{"tampered", mrtrRequest{principal: "alice", state: str(string(tampered)), responses: responses}},
		{"truncated", mrtrRequest{principal: "alice", state: str(state[:len(state)-4]), responses: responses}},
		{"not base64", mrtrRequest{principal: "alice", state: str("!!" + state), responses: responses}},
		{"empty", mrtrRequest{principal: "alice", state: str(""), responses: responses}},
		{"another principal", mrtrRequest{principal: "bob", state: &state, responses: responses}},
		{"anonymous", mrtrRequest{state: &state, responses: responses}},
		{"another tool", mrtrRequest{principal: "alice", tool: "rollback", state: &state, responses: responses}},
		{"another method", mrtrRequest{principal: "alice", method: mcp.MethodPromptsGet, args: `{}`, state: &state, responses: responses}},
		{"different arguments", mrtrRequest{principal: "alice", args: `{"env":"staging"}`, state: &state, responses: responses}},
		{"extra argument", mrtrRequest{principal: "alice", args: `{"env":"prod","rounds":1}`, state: &state, responses: responses}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(tools.calls())
			res := tt.req.send(t, srv)
			if res.Status != http.StatusOK {
				t.Errorf("HTTP %d, want 200", res.Status)
			}
			if diff := cmp.Diff(badStateBody, string(res.Body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if n := len(tools.calls()) - before; n != 0 {
				t.Errorf("the handler ran %d times", n)
			}
		})
	}
	// The genuine retry still works after all the failed attempts.
	before := len(tools.calls())
	res := mrtrRequest{principal: "alice", state: &state, responses: responses}.send(t, srv)
	if res.Error != nil || len(tools.calls()) != before+1 {
		t.Fatalf("genuine retry: error %v, handler calls %d; body %s", res.Error, len(tools.calls())-before, res.Body)
	}
}

// TestMRTRArgumentsReencoded: a client may re-encode the same arguments
// with another key order and spacing; the state still opens.
func TestMRTRArgumentsReencoded(t *testing.T) {
	srv, tools := newMRTRServer(t, nil)
	_, state := inputRequired(t, mrtrRequest{args: `{"env":"prod","count":3,"rounds":1}`}.send(t, srv))
	res := mrtrRequest{args: "{ \"rounds\" : 1 ,\n \"count\":3, \"env\":\"\\u0070rod\" }", state: &state, responses: `{"q1":` + acceptOK + `}`}.send(t, srv)
	if res.Error != nil {
		t.Fatalf("retry failed: %s", res.Body)
	}
	mustContain(t, res.Result, `deploy deployed prod after 1 rounds`)
	if got := tools.calls(); len(got) != 2 || got[1].State != "round-1" {
		t.Errorf("handler calls = %+v, want the retry to see round-1", got)
	}
}

// TestMRTRDigestKeepsLargeIntegers: two integers that differ only beyond
// float64 precision are different arguments, so a state issued for one must
// not open for the other.
func TestMRTRDigestKeepsLargeIntegers(t *testing.T) {
	srv, tools := newMRTRServer(t, nil)
	_, state := inputRequired(t, mrtrRequest{args: `{"env":"prod","count":9007199254740992}`}.send(t, srv))
	before := len(tools.calls())
	res := mrtrRequest{args: `{"env":"prod","count":9007199254740993}`, state: &state, responses: `{"q1":` + acceptOK + `}`}.send(t, srv)
	if diff := cmp.Diff(badStateBody, string(res.Body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if n := len(tools.calls()) - before; n != 0 {
		t.Errorf("the handler ran %d times", n)
	}
}

// TestMRTRStateExpires runs in a synctest bubble, whose fake clock the
// server's default clock follows: a state opens until its TTL has passed.
func TestMRTRStateExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const ttl = 5 * time.Minute
		srv, tools := newMRTRServer(t, func(o *server.Options) { o.RequestStateTTL = ttl })
		responses := `{"q1":` + acceptOK + `}`

		_, fresh := inputRequired(t, mrtrRequest{}.send(t, srv))
		time.Sleep(ttl - time.Millisecond)
		if res := (mrtrRequest{state: &fresh, responses: responses}).send(t, srv); res.Error != nil {
			t.Fatalf("retry just before the expiry failed: %s", res.Body)
		}

		_, stale := inputRequired(t, mrtrRequest{}.send(t, srv))
		time.Sleep(ttl + time.Millisecond)
		before := len(tools.calls())
		res := mrtrRequest{state: &stale, responses: responses}.send(t, srv)
		if diff := cmp.Diff(badStateBody, string(res.Body)); diff != "" {
			t.Errorf("expired state (-want +got):\n%s", diff)
		}
		if n := len(tools.calls()) - before; n != 0 {
			t.Errorf("the handler ran %d times for an expired state", n)
		}
	})
}

// TestMRTRElicitationCapabilities: a handler may only ask for the
// elicitation modes the request declared; otherwise the client gets HTTP 400
// with -32021 naming the missing mode. elicitation {} means form only.
func TestMRTRElicitationCapabilities(t *testing.T) {
	srv, tools := newMRTRServer(t, nil)
	missing := func(mode string) string {
		return `{"jsonrpc":"2.0","id":7,"error":{"code":-32021,"message":"Missing required client capability","data":{"requiredCapabilities":{"elicitation":{"` + mode + `":{}}}}}}`
	}
	tests := []struct {
		name     string
		caps     string
		url      bool
		wantBody string // "" means an input_required result
	}{
		{"form declared", capsForm, false, ""},
		{"empty elicitation counts as form", capsEmpty, false, ""},
		{"form and url declared, form asked", capsFormURL, false, ""},
		{"form and url declared, url asked", capsFormURL, true, ""},
		{"url declared, url asked", capsURL, true, ""},
		{"nothing declared, form asked", capsNone, false, missing("form")},
		{"nothing declared, url asked", capsNone, true, missing("url")},
		{"form declared, url asked", capsForm, true, missing("url")},
		{"empty elicitation, url asked", capsEmpty, true, missing("url")},
		{"url declared, form asked", capsURL, false, missing("form")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(tools.calls())
			args := `{"env":"prod"}`
			if tt.url {
				args = `{"env":"prod","url":true}`
			}
			res := mrtrRequest{caps: tt.caps, args: args}.send(t, srv)
			if n := len(tools.calls()) - before; n != 1 {
				t.Errorf("handler ran %d times, want 1", n)
			}
			if tt.wantBody == "" {
				reqs, _ := inputRequired(t, res)
				mode, err := reqs["q1"].ElicitMode()
				if wantMode := map[bool]string{false: mcp.ElicitModeForm, true: mcp.ElicitModeURL}[tt.url]; err != nil || mode != wantMode {
					t.Errorf("elicitation mode = %q (%v), want %q", mode, err, wantMode)
				}
				return
			}
			if res.Status != http.StatusBadRequest {
				t.Errorf("HTTP %d, want 400", res.Status)
			}
			if diff := cmp.Diff(tt.wantBody, string(res.Body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMRTRMultiRound runs a three-round flow: every round gets a new sealed
// state, the handler sees the application state of the round before and the
// answers of this round only.
func TestMRTRMultiRound(t *testing.T) {
	srv, tools := newMRTRServer(t, nil)
	args := `{"env":"prod","rounds":3}`
	res := mrtrRequest{args: args}.send(t, srv)
	states := map[string]bool{}
	for round := 1; round <= 3; round++ {
		reqs, state := inputRequired(t, res)
		key := "q" + strconv.Itoa(round)
		if _, ok := reqs[key]; !ok || len(reqs) != 1 {
			t.Fatalf("round %d: input requests %v, want only %s", round, reqs, key)
		}
		if states[state] {
			t.Fatalf("round %d reuses an earlier requestState", round)
		}
		states[state] = true
		answer := fmt.Sprintf(`{"action":"accept","content":{"ok":%t}}`, round%2 == 1)
		res = mrtrRequest{args: args, state: &state, responses: `{"` + key + `":` + answer + `}`}.send(t, srv)
	}
	if res.Error != nil {
		t.Fatalf("final round: %s", res.Body)
	}
	mustContain(t, res.Result, `"deploy deployed prod after 3 rounds"`)
	want := []mrtrSeen{
		{},
		{State: "round-1", Responses: map[string]string{"q1": `{"action":"accept","content":{"ok":true}}`}},
		{State: "round-2", Responses: map[string]string{"q2": `{"action":"accept","content":{"ok":false}}`}},
		{State: "round-3", Responses: map[string]string{"q3": `{"action":"accept","content":{"ok":true}}`}},
	}
	if diff := cmp.Diff(want, tools.calls()); diff != "" {
		t.Errorf("handler calls (-want +got):\n%s", diff)
	}
}

// TestMRTRRoundLimit: a request gets at most 10 input_required rounds; the
// handler's 11th request for input is refused with -32602.
func TestMRTRRoundLimit(t *testing.T) {
	srv, tools := newMRTRServer(t, nil)
	args := `{"env":"prod","rounds":100}`
	res := mrtrRequest{args: args}.send(t, srv)
	for round := 1; round <= 10; round++ {
		_, state := inputRequired(t, res)
		res = mrtrRequest{args: args, state: &state, responses: `{"q` + strconv.Itoa(round) + `":` + acceptOK + `}`}.send(t, srv)
	}
	want := `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: too many input rounds"}}`
	if diff := cmp.Diff(want, string(res.Body)); diff != "" || res.Status != http.StatusOK {
		t.Errorf("HTTP %d, 11th round (-want +got):\n%s", res.Status, diff)
	}
	if n := len(tools.calls()); n != 11 {
		t.Errorf("handler ran %d times, want 11", n)
	}
}
