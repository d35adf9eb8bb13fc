package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// addInputTools registers tools that ask for sampling, roots and two
// answers at once, each written once in the 2026 style.
func addInputTools(ep *server.Endpoint) {
	server.AddTool(ep, &mcp.Tool{Name: "sample"},
		func(_ context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			if req.RequestState() == nil {
				return nil, nil, server.InputRequired(mcp.InputRequests{
					"s": {Method: mcp.MethodSamplingCreateMessage, Params: json.RawMessage(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}`)},
				}, []byte("s"))
			}
			var res mcp.CreateMessageResult
			if err := json.Unmarshal(req.InputResponses["s"], &res); err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: textContent("model " + res.Model)}, nil, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "roots"},
		func(_ context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			if req.RequestState() == nil {
				return nil, nil, server.InputRequired(mcp.InputRequests{"r": {Method: mcp.MethodRootsList}}, []byte("r"))
			}
			var res mcp.ListRootsResult
			if err := json.Unmarshal(req.InputResponses["r"], &res); err != nil || len(res.Roots) == 0 {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: textContent("root " + res.Roots[0].URI)}, nil, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "two-rounds"},
		func(_ context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			switch req.Round() {
			case 0:
				return nil, nil, server.InputRequired(mcp.InputRequests{
					"a": mcp.NewElicitFormRequest("first?", json.RawMessage(confirmSchema)),
					"b": {Method: mcp.MethodRootsList},
				}, []byte("1"))
			case 1:
				if len(req.InputResponses) != 2 {
					return nil, nil, mcp.NewError(mcp.CodeInvalidParams, "want two answers")
				}
				return nil, nil, server.InputRequired(mcp.InputRequests{"c": mcp.NewElicitFormRequest("second?", json.RawMessage(confirmSchema))}, []byte("2"))
			}
			return &mcp.CallToolResult{Content: textContent("rounds done " + string(req.RequestState()))}, nil, nil
		})
}

// answerAll answers every kind of server-to-client request.
func answerAll(m legacyMsg) string {
	switch m.Method {
	case mcp.MethodElicitationCreate:
		return `{"action":"accept","content":{"ok":true}}`
	case mcp.MethodSamplingCreateMessage:
		return `{"role":"assistant","content":{"type":"text","text":"yo"},"model":"tiny"}`
	case mcp.MethodRootsList:
		return `{"roots":[{"uri":"file:///work","name":"work"}]}`
	}
	return ""
}

func TestLegacyServerToClientRequests(t *testing.T) {
	srv := newLegacyCatalog(t, func(_ *server.Options, ep *server.Endpoint) { addInputTools(ep) })
	const all = `{"elicitation":{},"sampling":{},"roots":{}}`
	tests := []struct {
		name, tool, want string
		methods          []string
	}{
		{"elicitation", "confirm", "deleted db", []string{mcp.MethodElicitationCreate}},
		{"sampling", "sample", "model tiny", []string{mcp.MethodSamplingCreateMessage}},
		{"roots", "roots", "root file:///work", []string{mcp.MethodRootsList}},
		{"two rounds, three requests", "two-rounds", "rounds done 2", []string{mcp.MethodElicitationCreate, mcp.MethodRootsList, mcp.MethodElicitationCreate}},
	}
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		for _, tt := range tests {
			t.Run(version+"/"+tt.name, func(t *testing.T) {
				c := newLegacyRig(t, srv)
				c.mustInitialize(version, all)
				var seen []string
				c.answer = func(m legacyMsg) string {
					seen = append(seen, m.Method)
					var id string
					if err := json.Unmarshal(m.ID, &id); err != nil || !strings.HasPrefix(id, "tw.n1.") {
						t.Errorf("server request id %s does not name the node", m.ID)
					}
					return answerAll(m)
				}
				args := `{}`
				if tt.tool == "confirm" {
					args = `{"target":"db"}`
				}
				rep := c.request("tools/call", `{"name":"`+tt.tool+`","arguments":`+args+`}`)
				m := rep.final(t)
				if m.Error != nil || !strings.Contains(string(m.Result), tt.want) {
					t.Fatalf("result %s, want %q (body %s)", m.Result, tt.want, rep.body)
				}
				if strings.Join(seen, " ") != strings.Join(tt.methods, " ") {
					t.Errorf("server requests %v, want %v", seen, tt.methods)
				}
			})
		}
	}
	t.Run("client without the capability", func(t *testing.T) {
		c := newLegacyRig(t, srv)
		c.mustInitialize("2025-11-25", `{"roots":{}}`)
		c.answer = func(m legacyMsg) string { t.Errorf("unexpected server request %s", m.Method); return "" }
		rep := c.request("tools/call", `{"name":"sample","arguments":{}}`)
		if m := rep.final(t); m.Error == nil || m.Error.Code != mcp.CodeMissingRequiredClientCapability || !strings.Contains(string(m.Error.Data), "sampling") {
			t.Errorf("status %d body %s, want -32021 naming sampling", rep.status, rep.body)
		}
	})
	t.Run("client answers with an error", func(t *testing.T) {
		c := newLegacyRig(t, srv)
		c.mustInitialize("2025-11-25", all)
		c.answer = func(m legacyMsg) string {
			ack := c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"error":{"code":-1,"message":"user said no"}}`)
			if ack.status != http.StatusAccepted {
				t.Errorf("error answer: %d", ack.status)
			}
			return ""
		}
		rep := c.request("tools/call", `{"name":"roots","arguments":{}}`)
		if m := rep.final(t); m.Error == nil || m.Error.Code != -1 || strings.Contains(m.Error.Message, "user said no") {
			t.Errorf("body %s, want the client's code without its message", rep.body)
		}
	})
	t.Run("answers from elsewhere change nothing", func(t *testing.T) {
		c := newLegacyRig(t, srv)
		c.mustInitialize("2025-11-25", all)
		thief := c.clone()
		thief.initialize("2025-11-25", all) // another session of the same principal
		c.answer = func(m legacyMsg) string {
			wrong := thief.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[]}}`)
			if wrong.status != http.StatusBadRequest {
				t.Errorf("answer from another session: %d, want 400", wrong.status)
			}
			ok := answerAll(m)
			first := c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + ok + `}`)
			again := c.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + ok + `}`)
			if first.status != http.StatusAccepted || again.status != http.StatusBadRequest || again.final(t).Error == nil {
				t.Errorf("first answer %d, repeated answer %d %s", first.status, again.status, again.body)
			}
			return ""
		}
		rep := c.request("tools/call", `{"name":"roots","arguments":{}}`)
		if m := rep.final(t); m.Error != nil || !strings.Contains(string(m.Result), "file:///work") {
			t.Errorf("body %s", rep.body)
		}
	})
}

func TestLegacyCancellation(t *testing.T) {
	started := make(chan struct{})
	ended := make(chan error, 1)
	srv := newLegacyCatalog(t, func(_ *server.Options, ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "block"},
			func(ctx context.Context, _ *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
				close(started)
				<-ctx.Done()
				ended <- ctx.Err()
				return nil, nil, ctx.Err()
			})
	})
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{}`)
	done := make(chan *legacyReply, 1)
	go func() {
		done <- c.send(`{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"block","arguments":{}}}`)
	}()
	<-started
	// A cancellation naming another request, or from another principal,
	// changes nothing; then the real one ends the call.
	other := c.clone()
	other.auth = "Bearer mallory"
	if rep := other.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-1"}}`); rep.status != http.StatusNotFound {
		t.Errorf("foreign cancellation: %d, want 404", rep.status)
	}
	if rep := c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-2"}}`); rep.status != http.StatusAccepted {
		t.Errorf("cancellation of an unknown request: %d, want 202", rep.status)
	}
	if rep := c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"call-1","reason":"user"}}`); rep.status != http.StatusAccepted {
		t.Errorf("cancellation: %d, want 202", rep.status)
	}
	if err := <-ended; err != context.Canceled {
		t.Errorf("handler context ended with %v, want Canceled", err)
	}
	if rep := <-done; len(rep.msgs) != 0 {
		t.Errorf("a canceled request was answered: %s", rep.body)
	}
}

func TestLegacyProgressAndLogging(t *testing.T) {
	srv := newLegacyCatalog(t, func(_ *server.Options, ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "chatty"},
			func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
				if req.Meta.ClientInfo == nil || req.Meta.ClientInfo.Name != "legacy-test" || req.Meta.ProtocolVersion != "2025-11-25" {
					return nil, nil, mcp.NewError(mcp.CodeInvalidParams, "session view missing")
				}
				req.Log(ctx, mcp.LevelDebug, "t", "debug line")
				req.Log(ctx, mcp.LevelWarning, "t", "warning line")
				return &mcp.CallToolResult{Content: textContent("ok")}, nil, nil
			})
	})
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{}`)
	rep := c.request("tools/call", `{"name":"progress","arguments":{},"_meta":{"progressToken":"p1"}}`)
	var progress []string
	for _, m := range rep.msgs[:len(rep.msgs)-1] {
		if m.Method == mcp.NotificationProgress {
			progress = append(progress, string(m.Params))
		}
	}
	if len(progress) != 2 || !strings.Contains(progress[0], `"progressToken":"p1"`) || rep.final(t).Error != nil {
		t.Errorf("progress notifications %v, body %s", progress, rep.body)
	}
	logs := func() []string {
		rep := c.request("tools/call", `{"name":"chatty","arguments":{}}`)
		var out []string
		for _, m := range rep.msgs {
			if m.Method == mcp.NotificationMessage {
				out = append(out, string(m.Params))
			}
		}
		return out
	}
	if got := logs(); len(got) != 2 {
		t.Errorf("logs before logging/setLevel: %v, want all", got)
	}
	if rep := c.request("logging/setLevel", `{"level":"warning"}`); rep.final(t).Error != nil {
		t.Fatalf("setLevel: %s", rep.body)
	}
	if got := logs(); len(got) != 1 || !strings.Contains(got[0], "warning line") {
		t.Errorf("logs at warning: %v", got)
	}
	if rep := c.request("logging/setLevel", `{"level":"loud"}`); rep.final(t).Error == nil || rep.final(t).Error.Code != mcp.CodeInvalidParams {
		t.Errorf("unknown level: %s", rep.body)
	}
	// The level belongs to the session.
	d := c.clone()
	d.mustInitialize("2025-11-25", `{}`)
	c, d = d, c
	if got := logs(); len(got) != 2 {
		t.Errorf("another session inherited the level: %v", got)
	}
}

// getStream opens the session's GET stream and returns its events.
func openGetStream(t *testing.T, c *legacyClient) (*http.Response, <-chan legacyMsg) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.url, nil)
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("Mcp-Session-Id", c.sid)
	if c.auth != "" {
		r.Header.Set("Authorization", c.auth)
	}
	res, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Cleanup(func() { cancel(); res.Body.Close() })
		events := make(chan legacyMsg)
		close(events)
		return res, events
	}
	events, wait := sseMessages(res)
	t.Cleanup(func() { cancel(); wait() })
	return res, events
}

func TestLegacyGetStreamAndSubscriptions(t *testing.T) {
	srv := newLegacyCatalog(t, nil)
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{}`)
	res, events := openGetStream(t, c)
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if second, _ := openGetStream(t, c); second.StatusCode != http.StatusConflict {
		t.Errorf("second GET stream: %d, want 409", second.StatusCode)
	}
	foreign := c.clone()
	foreign.auth = "Bearer mallory"
	if r, _ := openGetStream(t, foreign); r.StatusCode != http.StatusNotFound {
		t.Errorf("GET of another principal's session: %d, want 404", r.StatusCode)
	}
	if rep := c.request("resources/subscribe", `{"uri":"file:///readme.md"}`); rep.final(t).Error != nil {
		t.Fatalf("subscribe: %s", rep.body)
	}
	srv.NotifyResourceUpdated("file:///other.md")
	srv.NotifyResourceUpdated("file:///readme.md")
	m := <-events
	if m.Method != mcp.NotificationResourcesUpdated || !strings.Contains(string(m.Params), "file:///readme.md") {
		t.Errorf("GET stream event %+v", m)
	}
	srv.NotifyListChanged("other-endpoint", server.ListTools)
	srv.NotifyListChanged("catalog", server.ListTools)
	if m := <-events; m.Method != mcp.NotificationToolsListChanged {
		t.Errorf("GET stream event %+v, want tools/list_changed", m)
	}
	if rep := c.request("resources/unsubscribe", `{"uri":"file:///readme.md"}`); rep.final(t).Error != nil {
		t.Fatalf("unsubscribe: %s", rep.body)
	}
	srv.NotifyResourceUpdated("file:///readme.md")
	// DELETE ends the stream; nothing else arrived on it.
	r, _ := http.NewRequest(http.MethodDelete, c.url, nil)
	r.Header.Set("Mcp-Session-Id", c.sid)
	if dres, err := http.DefaultClient.Do(r); err != nil || dres.StatusCode != http.StatusOK {
		t.Fatalf("DELETE: %v", err)
	}
	for m := range events {
		t.Errorf("event after unsubscribe: %+v", m)
	}
}

// TestLegacyUnansweredRequestTimesOut: a client that never answers a
// server-to-client request gets the deadline error at the request
// deadline, and its late answer is refused without effect.
func TestLegacyUnansweredRequestTimesOut(t *testing.T) {
	srv := newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) { o.RequestTimeout = 300 * time.Millisecond })
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{"elicitation":{}}`)
	var id json.RawMessage
	c.answer = func(m legacyMsg) string { id = m.ID; return "" }
	rep := c.request("tools/call", `{"name":"confirm","arguments":{"target":"db"}}`)
	if m := rep.final(t); m.Error == nil || m.Error.Message != "Request deadline exceeded" {
		t.Fatalf("body %s, want the deadline error", rep.body)
	}
	if late := c.send(`{"jsonrpc":"2.0","id":` + string(id) + `,"result":{"action":"accept","content":{"ok":true}}}`); late.status != http.StatusBadRequest {
		t.Errorf("late answer: %d, want 400", late.status)
	}
}

// TestLegacyObserved: requests of a session reach the observer with
// bounded method labels.
func TestLegacyObserved(t *testing.T) {
	obs := &legacyObserver{events: make(chan string, 16)}
	srv := newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) { o.Observer = obs })
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{}`)
	c.request("ping", "")
	c.request("tools/call", `{"name":"echo","arguments":{"text":"x"}}`)
	want := []string{"initialize complete", "ping complete", "tools/call complete"}
	var got []string
	for range want {
		got = append(got, <-obs.events) // a request is observed after its response is written
	}
	slices.Sort(got) // so its finish may follow the next request's
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("observed (-want +got):\n%s", diff)
	}
}

// legacyObserver reports each finished request on events.
type legacyObserver struct{ events chan string }

func (o *legacyObserver) RequestStarted(context.Context, server.RequestInfo) {}

func (o *legacyObserver) RequestFinished(_ context.Context, info server.RequestInfo, out server.Outcome, _ time.Duration) {
	o.events <- info.Method + " " + string(out)
}

// TestLegacyCloseEndsGetStreams: Server.Close ends the GET streams and
// refuses new ones; the sessions keep serving requests.
func TestLegacyCloseEndsGetStreams(t *testing.T) {
	srv := newLegacyCatalog(t, nil)
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{}`)
	res, events := openGetStream(t, c)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", res.StatusCode)
	}
	srv.Close()
	for m := range events {
		t.Errorf("event on a closed server's stream: %+v", m)
	}
	if again, _ := openGetStream(t, c); again.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET after Close: %d, want 503", again.StatusCode)
	}
	if rep := c.request("ping", ""); rep.status != http.StatusOK {
		t.Errorf("ping after Close: %d", rep.status)
	}
}

// TestLegacyParamsCannotCarryAnswers: a 2025 request cannot smuggle
// inputResponses or requestState; the handler asks as on a first call.
func TestLegacyParamsCannotCarryAnswers(t *testing.T) {
	srv := newLegacyCatalog(t, nil)
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{"elicitation":{}}`)
	asked := 0
	c.answer = func(m legacyMsg) string { asked++; return answerAll(m) }
	rep := c.request("tools/call", `{"name":"confirm","arguments":{"target":"db"},"requestState":"forged","inputResponses":{"confirm":{"action":"accept"}}}`)
	if m := rep.final(t); m.Error != nil || asked != 1 || !strings.Contains(string(m.Result), "deleted db") {
		t.Errorf("asked %d times, body %s", asked, rep.body)
	}
}
