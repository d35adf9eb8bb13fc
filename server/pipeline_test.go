package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// recordingObserver counts lifecycle calls per outcome.
type recordingObserver struct {
	mu       sync.Mutex
	started  int
	outcomes []server.Outcome
}

func (o *recordingObserver) RequestStarted(context.Context, server.RequestInfo) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.started++
}

func (o *recordingObserver) RequestFinished(_ context.Context, _ server.RequestInfo, out server.Outcome, _ time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, out)
}

func (o *recordingObserver) snapshot() (int, []server.Outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.started, append([]server.Outcome(nil), o.outcomes...)
}

func TestToolCallResults(t *testing.T) {
	calls := 0
	srv := newTestServer(t, func(_ *server.Options, ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "fail"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			calls++
			return nil, nil, errors.New("disk is full")
		})
		server.AddTool(ep, &mcp.Tool{Name: "protocol"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			calls++
			return nil, nil, mcp.InvalidParams("Invalid params: no such account")
		})
		server.AddTool(ep, &mcp.Tool{Name: "badoutput"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, EchoOutput, error) {
			calls++
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"echo":5}`)}, EchoOutput{}, nil
		})
		server.AddTool(ep, &mcp.Tool{Name: "panics"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			calls++
			panic("boom")
		})
	})
	tests := []struct {
		name      string
		tool      string
		args      string
		wantCalls int
		want      string // exact response body
	}{
		{"typed result", "echo", `{"text":"hi"}`, 0,
			`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"{\"echo\":\"hi\"}"}],"structuredContent":{"echo":"hi"},"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"test","version":"1.0.0"}}}}`},
		{"input fails the schema: tool error, handler not called", "echo", `{"text":5}`, 0, ""},
		{"handler error becomes a tool error", "fail", `{}`, 1,
			`{"jsonrpc":"2.0","id":7,"result":{"resultType":"complete","content":[{"type":"text","text":"disk is full"}],"isError":true,"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"test","version":"1.0.0"}}}}`},
		{"protocol error passes through", "protocol", `{}`, 1,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: no such account"}}`},
		{"output schema violation is the fixed internal error", "badoutput", `{}`, 1,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error"}}`},
		{"panic is the fixed internal error", "panics", `{}`, 1,
			`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls = 0
			res := do(t, srv, rawPost(callBody(tt.tool, tt.args), "tools/call", map[string]string{"Mcp-Name": tt.tool}))
			if res.Status != 200 {
				t.Fatalf("HTTP %d, want 200", res.Status)
			}
			if calls != tt.wantCalls {
				t.Errorf("handler called %d times, want %d", calls, tt.wantCalls)
			}
			if tt.want == "" {
				var r mcp.CallToolResult
				if err := json.Unmarshal(res.Result, &r); err != nil || !r.IsError {
					t.Fatalf("want a tool error result, got %s", res.Body)
				}
				return
			}
			if diff := cmp.Diff(tt.want, string(res.Body)); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProgressStreamsSSE(t *testing.T) {
	srv := newTestServer(t, func(_ *server.Options, ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			for _, p := range []float64{1, 2} {
				if err := req.ReportProgress(ctx, p, 2, "step"); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil, nil
		})
	})
	body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"p1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	res := do(t, srv, rawPost(body, "tools/call", map[string]string{"Mcp-Name": "slow"}))
	if got := res.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Fatalf("Content-Type = %q, want text/event-stream", got)
	}
	var got []string
	for _, m := range res.Messages {
		got = append(got, string(m))
	}
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":1,"total":2,"message":"step"}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p1","progress":2,"total":2,"message":"step"}}`,
		`{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[{"type":"text","text":"done"}],"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"test","version":"1.0.0"}}}}`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("SSE messages (-want +got):\n%s", diff)
	}
}

func TestNoProgressWithoutToken(t *testing.T) {
	var reportErr error
	srv := newTestServer(t, func(_ *server.Options, ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "slow"}, func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			reportErr = req.ReportProgress(ctx, 1, 2, "")
			req.Log(ctx, mcp.LevelError, "x", "not sent without a log level")
			return nil, nil, nil
		})
	})
	res := do(t, srv, rawPost(callBody("slow", `{}`), "tools/call", map[string]string{"Mcp-Name": "slow"}))
	if !errors.Is(reportErr, server.ErrNoProgressToken) {
		t.Errorf("ReportProgress error = %v, want ErrNoProgressToken", reportErr)
	}
	if got := res.Header.Get("Content-Type"); got != "application/json" || len(res.Messages) != 1 {
		t.Errorf("got %q with %d messages, want one JSON response", got, len(res.Messages))
	}
}

func TestRateLimits(t *testing.T) {
	clock := time.Unix(0, 0)
	now := func() time.Time { return clock }
	obs := &recordingObserver{}
	srv := newTestServer(t, func(o *server.Options, ep *server.Endpoint) {
		o.RequestLimiter = newBucket(t, server.TokenBucketOptions{Rate: 1, Burst: 2, Now: now})
		o.Observer = obs
	})
	req := func() *http.Request {
		return rawPost(callBody("echo", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "echo"})
	}
	for i := range 2 {
		if res := do(t, srv, req()); res.Status != 200 {
			t.Fatalf("request %d: HTTP %d, want 200", i, res.Status)
		}
	}
	res := do(t, srv, req())
	if res.Status != http.StatusTooManyRequests || res.Header.Get("Retry-After") != "1" || errorCode(res) != server.CodeRateLimited {
		t.Fatalf("got HTTP %d Retry-After %q code %d, want 429, 1, %d", res.Status, res.Header.Get("Retry-After"), errorCode(res), server.CodeRateLimited)
	}
	clock = clock.Add(time.Second)
	if res := do(t, srv, req()); res.Status != 200 {
		t.Fatalf("after refill: HTTP %d, want 200", res.Status)
	}
	// An unknown tool does not consume a token.
	clock = clock.Add(time.Second)
	do(t, srv, rawPost(callBody("nope", `{}`), "tools/call", map[string]string{"Mcp-Name": "nope"}))
	if res := do(t, srv, req()); res.Status != 200 {
		t.Fatalf("unknown tool consumed a token: HTTP %d", res.Status)
	}
	started, outcomes := obs.snapshot()
	if started != 6 || len(outcomes) != 6 {
		t.Fatalf("observer saw %d starts and %d finishes, want 6 and 6", started, len(outcomes))
	}
	want := []server.Outcome{"complete", "complete", "rate_limited", "complete", "protocol_error", "complete"}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
}

func TestToolRateLimiter(t *testing.T) {
	srv := newTestServer(t, func(_ *server.Options, ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "limited"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		}, server.WithToolRateLimiter(newBucket(t, server.TokenBucketOptions{Rate: 0.001, Burst: 1})))
	})
	req := func() *http.Request {
		return rawPost(callBody("limited", `{}`), "tools/call", map[string]string{"Mcp-Name": "limited"})
	}
	if res := do(t, srv, req()); res.Status != 200 {
		t.Fatalf("first call: HTTP %d", res.Status)
	}
	if res := do(t, srv, req()); res.Status != http.StatusTooManyRequests {
		t.Fatalf("second call: HTTP %d, want 429", res.Status)
	}
	// Other tools are not limited by it.
	if res := do(t, srv, rawPost(callBody("echo", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "echo"})); res.Status != 200 {
		t.Fatalf("echo: HTTP %d", res.Status)
	}
}

// TestDeadlineAnswers504 uses a handler that ignores cancellation: the client
// still gets 504 at the deadline, and the lifecycle reports a timeout.
func TestDeadlineAnswers504(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		obs := &recordingObserver{}
		srv := newTestServer(t, func(o *server.Options, ep *server.Endpoint) {
			o.RequestTimeout = time.Second
			o.Observer = obs
			server.AddTool(ep, &mcp.Tool{Name: "stuck"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
				<-release
				return nil, nil, nil
			})
		})
		done := make(chan *struct {
			status int
			code   int64
		})
		go func() {
			res := do(t, srv, rawPost(callBody("stuck", `{}`), "tools/call", map[string]string{"Mcp-Name": "stuck"}))
			done <- &struct {
				status int
				code   int64
			}{res.Status, errorCode(res)}
		}()
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		close(release)
		got := <-done
		if got.status != http.StatusGatewayTimeout || got.code != mcp.CodeInternalError {
			t.Fatalf("got HTTP %d code %d, want 504 -32603", got.status, got.code)
		}
		_, outcomes := obs.snapshot()
		if diff := cmp.Diff([]server.Outcome{server.OutcomeTimeout}, outcomes); diff != "" {
			t.Errorf("outcomes (-want +got):\n%s", diff)
		}
	})
}

// TestQueueFull fills one handler slot and a queue of one; the next request
// is refused at once with 503.
func TestQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		srv := newTestServer(t, func(o *server.Options, ep *server.Endpoint) {
			o.HandlerConcurrency, o.HandlerQueue = 1, 1
			server.AddTool(ep, &mcp.Tool{Name: "hold"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
				<-release
				return nil, nil, nil
			})
		})
		req := func() *http.Request {
			return rawPost(callBody("hold", `{}`), "tools/call", map[string]string{"Mcp-Name": "hold"})
		}
		statuses := make(chan int, 2)
		for range 2 {
			go func() { statuses <- do(t, srv, req()).Status }()
		}
		synctest.Wait() // one runs, one waits in the queue
		res := do(t, srv, req())
		if res.Status != http.StatusServiceUnavailable || errorCode(res) != mcp.CodeInternalError {
			t.Fatalf("got HTTP %d code %d, want 503 -32603", res.Status, errorCode(res))
		}
		close(release)
		for range 2 {
			if s := <-statuses; s != 200 {
				t.Errorf("queued request: HTTP %d, want 200", s)
			}
		}
	})
}

func TestSanitizer(t *testing.T) {
	var seen []string
	srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) {
		o.Admission = server.DevAdmission()
		o.ResultSanitizer = func(_ context.Context, req *server.SanitizeRequest, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
			seen = append(seen, req.Identity.Principal+"/"+req.ToolName+"/"+string(req.Arguments))
			if strings.Contains(string(req.Arguments), "secret") {
				return nil, errors.New("refused")
			}
			return &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"echo":"redacted"}`), Content: []mcp.Content{&mcp.TextContent{Text: "redacted"}}}, nil
		}
	})
	res := do(t, srv, rawPost(callBody("echo", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "echo", "Authorization": "Bearer alice"}))
	mustContain(t, res.Body, `"structuredContent":{"echo":"redacted"}`)
	res = do(t, srv, rawPost(callBody("echo", `{"text":"secret-canary"}`), "tools/call", map[string]string{"Mcp-Name": "echo"}))
	if diff := cmp.Diff(`{"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error"}}`, string(res.Body)); diff != "" {
		t.Errorf("refused result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{`alice/echo/{"text":"x"}`, `/echo/{"text":"secret-canary"}`}, seen); diff != "" {
		t.Errorf("sanitizer calls (-want +got):\n%s", diff)
	}
}

type hideTool string

func (h hideTool) ToolVisible(_ context.Context, _ server.Identity, _, tool string) (bool, error) {
	return tool != string(h), nil
}

func TestCatalogPolicyHidesLikeUnknown(t *testing.T) {
	srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) { o.CatalogPolicy = hideTool("echo") })
	hidden := do(t, srv, rawPost(callBody("echo", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "echo"}))
	unknown := do(t, srv, rawPost(callBody("nope", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "nope"}))
	// The same bytes but for the name the error repeats;
	// TestUnknownToolNamesTheTool compares one name on a server without it.
	if diff := cmp.Diff(strings.Replace(string(unknown.Body), `\"nope\"`, `\"echo\"`, 1), string(hidden.Body)); diff != "" || hidden.Status != unknown.Status {
		t.Errorf("hidden and unknown differ (-unknown +hidden):\n%s", diff)
	}
	list := do(t, srv, rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":`+metaJSON+`}}`, "tools/list", nil))
	if strings.Contains(string(list.Result), `"echo"`) {
		t.Errorf("tools/list shows the hidden tool: %s", list.Result)
	}
	mustContain(t, list.Result, `"cacheScope":"private"`)
}

func TestAdmissionRejection(t *testing.T) {
	obs := &recordingObserver{}
	srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) {
		o.Admission = server.DevAdmission()
		o.Observer = obs
	})
	res := do(t, srv, rawPost(callBody("echo", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "echo", "Authorization": "Basic Zm9vOmJhcg=="}))
	if res.Status != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") == "" {
		t.Fatalf("got HTTP %d WWW-Authenticate %q, want 401 with a challenge", res.Status, res.Header.Get("WWW-Authenticate"))
	}
	if started, _ := obs.snapshot(); started != 0 {
		t.Errorf("a rejected request started the lifecycle %d times", started)
	}
}

func TestPagination(t *testing.T) {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "p", Version: "1", PageSize: 2})
	for _, n := range []string{"a", "b", "c"} {
		server.AddTool(ep, &mcp.Tool{Name: n}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, nil
		})
	}
	s, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	cursor := ""
	for page := 0; page < 3; page++ {
		params := `"_meta":` + metaJSON
		if cursor != "" {
			params = `"cursor":"` + cursor + `",` + params
		}
		res := do(t, s, rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{`+params+`}}`, "tools/list", nil))
		var r mcp.ListToolsResult
		if err := json.Unmarshal(res.Result, &r); err != nil {
			t.Fatalf("page %d: %v (%s)", page, err, res.Body)
		}
		for _, tool := range r.Tools {
			names = append(names, tool.Name)
		}
		if cursor = r.NextCursor; cursor == "" {
			break
		}
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names); diff != "" {
		t.Errorf("paged names (-want +got):\n%s", diff)
	}
}

func TestNewRejectsBadConfiguration(t *testing.T) {
	noop := func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return nil, nil }
	tests := []struct {
		name  string
		build func() server.Options
	}{
		{"no endpoints", func() server.Options { return server.Options{} }},
		{"relative path", func() server.Options {
			return server.Options{Endpoints: []*server.Endpoint{server.NewEndpoint(server.EndpointOptions{Path: "mcp", Name: "a", Version: "1"})}}
		}},
		{"duplicate paths", func() server.Options {
			a := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			b := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "b", Version: "1"})
			return server.Options{Endpoints: []*server.Endpoint{a, b}}
		}},
		{"unknown protocol version", func() server.Options {
			return server.Options{Endpoints: []*server.Endpoint{server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1", ProtocolVersions: []string{"2024-11-05"}})}}
		}},
		{"bad tool name", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			ep.AddRawTool(&mcp.Tool{Name: "has space", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
			return server.Options{Endpoints: []*server.Endpoint{ep}}
		}},
		{"duplicate tool", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			ep.AddRawTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
			ep.AddRawTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object"}`)}, noop)
			return server.Options{Endpoints: []*server.Endpoint{ep}}
		}},
		{"input schema not an object", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			ep.AddRawTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"string"}`)}, noop)
			return server.Options{Endpoints: []*server.Endpoint{ep}}
		}},
		{"x-mcp-header on a number", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			ep.AddRawTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"n":{"type":"number","x-mcp-header":"N"}}}`)}, noop)
			return server.Options{Endpoints: []*server.Endpoint{ep}}
		}},
		{"x-mcp-header nested", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			ep.AddRawTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"o":{"type":"object","properties":{"s":{"type":"string","x-mcp-header":"S"}}}}}`)}, noop)
			return server.Options{Endpoints: []*server.Endpoint{ep}}
		}},
		{"x-mcp-header declared twice", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			ep.AddRawTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string","x-mcp-header":"X"},"b":{"type":"string","x-mcp-header":"x"}}}`)}, noop)
			return server.Options{Endpoints: []*server.Endpoint{ep}}
		}},
		{"x-mcp-header on the root schema", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			ep.AddRawTool(&mcp.Tool{Name: "t", InputSchema: json.RawMessage(`{"type":"object","x-mcp-header":"Root","properties":{}}`)}, noop)
			return server.Options{Endpoints: []*server.Endpoint{ep}}
		}},
		{"short request state key", func() server.Options {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "a", Version: "1"})
			return server.Options{Endpoints: []*server.Endpoint{ep}, RequestStateKey: []byte("short")}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := server.New(tt.build()); err == nil {
				t.Fatal("New succeeded, want an error")
			}
		})
	}
}
