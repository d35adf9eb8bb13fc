package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

// legacyAskingUpstream is newAskingUpstream's ask.deploy spoken as a
// 2025-11-25 session (elicitation/create on the call's stream, the
// handler run again with the answer), which also reports each error the
// gateway answers such a request with.
type legacyAskingUpstream struct {
	url     string
	calls   atomic.Int64 // handler runs
	refused chan *mcp.Error
}

func newLegacyAskingUpstream(t *testing.T) *legacyAskingUpstream {
	t.Helper()
	u := &legacyAskingUpstream{refused: make(chan *mcp.Error, 16)}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "asking", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "ask.deploy"}, askingDeploy(&u.calls))
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			var m struct {
				Method string     `json:"method"`
				Error  *mcp.Error `json:"error"`
			}
			if json.Unmarshal(body, &m) == nil && m.Method == "" && m.Error != nil {
				u.refused <- m.Error
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	u.url = hs.URL + "/mcp"
	return u
}

// awaitRefused waits for the next error the upstream was answered with.
func (u *legacyAskingUpstream) awaitRefused(t *testing.T) *mcp.Error {
	t.Helper()
	select {
	case e := <-u.refused:
		return e
	case <-time.After(waitFor):
		t.Fatal("the upstream's request was never answered with an error")
		return nil
	}
}

// legacyOptions are gateway options in front of u as a 2025-11-25 session.
func (u *legacyAskingUpstream) options(o gateway.Options) gateway.Options {
	o.Upstream, o.ProtocolVersions = u.url, []string{mcp.ProtocolVersion20251125}
	return o
}

// TestInlineInputHeld: a 2025-era upstream's elicitation/create during a
// call passed through inline is relayed on the open call: a 2026-07-28
// client gets it as the call's input round and calls again with the
// answer, a 2025-era client gets it on its session's stream; the
// upstream's one call gets the answer (its handler runs twice: asking,
// then answered).
func TestInlineInputHeld(t *testing.T) {
	u := newLegacyAskingUpstream(t)
	url := startGateway(t, u.options(gateway.Options{}))
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618} {
		t.Run("client "+version, func(t *testing.T) {
			before := u.calls.Load()
			var asked atomic.Int64
			c := approvingClient(t, url, &asked, version)
			res, err := c.Call(t.Context(), "ask.deploy", map[string]any{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(DeployOut{Approved: true, Call: int(before) + 2}, structured[DeployOut](t, res.Result)); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the client was asked %d times, want 1", n)
			}
		})
	}
}

// TestInlineInputHeldCapability: a client that declared no elicitation is
// never sent the upstream's request; the upstream gets -32601, as from a
// client without the capability, and decides (taskwire's fails the call).
func TestInlineInputHeldCapability(t *testing.T) {
	u := newLegacyAskingUpstream(t)
	url := startGateway(t, u.options(gateway.Options{}))
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125} {
		t.Run("client "+version, func(t *testing.T) {
			c := newClient(t, url, version)
			res, err := c.Call(t.Context(), "ask.deploy", map[string]any{})
			if err == nil {
				t.Fatalf("call succeeded: %+v", res.Result)
			}
			if !strings.Contains(err.Error(), "-32601") {
				t.Errorf("error %v, want the upstream's failure naming -32601", err)
			}
			select {
			case e := <-u.refused:
				if e.Code != mcp.CodeMethodNotFound {
					t.Errorf("the upstream was answered %d %q, want -32601", e.Code, e.Message)
				}
			default:
				t.Error("the upstream saw no error answer")
			}
		})
	}
}

// rawGateway serves a gateway in front of u on httptest without a node (an
// inline tool needs no store), with the given requestState key, and
// returns a raw 2026-07-28 client of it declaring form elicitation.
func rawGateway(t *testing.T, u *legacyAskingUpstream, opts gateway.Options, key []byte) *mcptest.Client {
	t.Helper()
	g, err := gateway.New(t.Context(), u.options(opts))
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "gateway", Version: "1.0.0"})
	if err := g.Register(ep, new(durable.Set)); err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, RequestStateKey: key})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
		if err := g.Close(); err != nil {
			t.Error(err)
		}
	})
	c := mcptest.NewClient(mcptest.Remote(hs.URL, hs.Client()), "/mcp")
	c.Capabilities = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: mcp.Object{}}}
	return c
}

// callRaw sends tools/call ask.deploy, with the answer and state of an
// earlier round when state is not empty, and returns its input round (nil
// when the call answered otherwise) and the response.
func callRaw(t *testing.T, c *mcptest.Client, state string, answer mcp.InputResponses) (*mcp.InputRequiredResult, *mcptest.Response) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	params := map[string]any{"name": "ask.deploy", "arguments": map[string]any{}}
	if state != "" {
		params["requestState"], params["inputResponses"] = state, answer
	}
	res, err := c.Call(ctx, mcp.MethodToolsCall, params)
	if err != nil {
		t.Fatal(err)
	}
	var ir mcp.InputRequiredResult
	if res.Error != nil || res.DecodeResult(&ir) != nil || ir.RequestState == "" {
		return nil, res
	}
	return &ir, res
}

// approve answers the single request of ir with an acceptance.
func approve(t *testing.T, ir *mcp.InputRequiredResult) mcp.InputResponses {
	t.Helper()
	if len(ir.InputRequests) != 1 {
		t.Fatalf("input requests %v, want one", ir.InputRequests)
	}
	out := mcp.InputResponses{}
	for k := range ir.InputRequests {
		out[k] = json.RawMessage(`{"action":"accept","content":{"ok":true}}`)
	}
	return out
}

// TestInlineInputHeldElsewhere: the answer to a held call reaches it only
// on the gateway process that holds it; another process (sharing the
// requestState key, as a fleet does) says so clearly, and the holder then
// still completes the call.
func TestInlineInputHeldElsewhere(t *testing.T) {
	u := newLegacyAskingUpstream(t)
	key := bytes.Repeat([]byte{7}, 32)
	a := rawGateway(t, u, gateway.Options{}, key)
	b := rawGateway(t, u, gateway.Options{}, key)
	ir, res := callRaw(t, a, "", nil)
	if ir == nil {
		t.Fatalf("no input round: %s", res.Body)
	}
	ans := approve(t, ir)
	if _, res := callRaw(t, b, ir.RequestState, ans); res.Error == nil || res.Error.Code != mcp.CodeInvalidParams ||
		!strings.Contains(res.Error.Message, "not open on this gateway process") {
		t.Errorf("the other process answered %s, want -32602 saying the call is not open there", res.Body)
	}
	_, res = callRaw(t, a, ir.RequestState, ans)
	var out mcp.CallToolResult
	if err := res.DecodeResult(&out); err != nil {
		t.Fatalf("%s: %v", res.Body, err)
	}
	if got := structured[DeployOut](t, &out); !got.Approved {
		t.Errorf("result %+v, want approved", got)
	}
	// Answered once: the same state again finds nothing.
	if _, res := callRaw(t, a, ir.RequestState, ans); res.Error == nil || res.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("a second answer got %s, want -32602", res.Body)
	}
}

// TestInlineInputHeldBound: at most MaxHeldCalls calls are held; the
// upstream's request of one more is answered with an error (the upstream
// then fails that call), and the held one still completes.
func TestInlineInputHeldBound(t *testing.T) {
	u := newLegacyAskingUpstream(t)
	c := rawGateway(t, u, gateway.Options{MaxHeldCalls: 1}, nil)
	ir, res := callRaw(t, c, "", nil)
	if ir == nil {
		t.Fatalf("no input round: %s", res.Body)
	}
	if ir2, res := callRaw(t, c, "", nil); ir2 != nil || res.Error == nil {
		t.Errorf("a second held call: %s, want an error", res.Body)
	}
	select {
	case e := <-u.refused:
		if !strings.Contains(e.Message, "Input request failed") && e.Code != mcp.CodeInternalError {
			t.Errorf("the upstream was answered %d %q", e.Code, e.Message)
		}
	default:
		t.Error("the upstream's second request was not answered with an error")
	}
	_, res = callRaw(t, c, ir.RequestState, approve(t, ir))
	var out mcp.CallToolResult
	if err := res.DecodeResult(&out); err != nil || out.IsError {
		t.Fatalf("the held call: %s (%v)", res.Body, err)
	}
}

// TestInlineInputHeldDeadline: a client that never answers: after
// HoldTimeout the upstream's request is answered with an error, the call
// ends, no goroutine of it is left, and a late answer finds nothing.
func TestInlineInputHeldDeadline(t *testing.T) {
	u := newLegacyAskingUpstream(t)
	c := rawGateway(t, u, gateway.Options{HoldTimeout: 100 * time.Millisecond}, nil)
	// A first exchange opens the connections the test then reuses.
	if _, res := callRaw(t, c, "", nil); res.Error != nil {
		t.Fatal(res.Body)
	}
	u.awaitRefused(t) // that first call's hold expires too
	ignore := goleak.IgnoreCurrent()

	ir, res := callRaw(t, c, "", nil)
	if ir == nil {
		t.Fatalf("no input round: %s", res.Body)
	}
	if e := u.awaitRefused(t); e.Code != mcp.CodeInternalError {
		t.Errorf("the upstream was answered %d %q, want -32603", e.Code, e.Message)
	}
	if err := goleak.Find(ignore,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
	); err != nil {
		t.Error(err)
	}
	if _, res := callRaw(t, c, ir.RequestState, approve(t, ir)); res.Error == nil || res.Error.Code != mcp.CodeInvalidParams {
		t.Errorf("a late answer got %s, want -32602", res.Body)
	}
}

// TestStdioInlineInputHeld: an --upstream-cmd process's elicitation/create
// during the one call in flight, passed through inline, reaches the
// client on the open call: one tools/call, whose handler (a taskwire
// stdio server) runs twice, asking and then answered.
func TestStdioInlineInputHeld(t *testing.T) {
	opts, dir := stdioOptions(t, gateway.Options{})
	url := startGateway(t, opts)
	var asked atomic.Int64
	c := approvingClient(t, url, &asked)
	res, err := c.Call(t.Context(), "ask.deploy", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := structured[DeployOut](t, res.Result); !got.Approved {
		t.Errorf("result %+v, want approved", got)
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("the client was asked %d times, want 1", n)
	}
	if n := calls(t, dir, "ask.deploy"); n != 2 {
		t.Errorf("ask.deploy's handler ran %d times, want 2", n)
	}
}
