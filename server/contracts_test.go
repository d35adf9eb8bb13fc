package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestNewValidatesEveryOption: every numeric option of Options and
// SubscriptionOptions that is out of range fails New, with an error that
// names the option; several problems are reported together.
func TestNewValidatesEveryOption(t *testing.T) {
	allow := server.AllowSubscriptions(time.Minute)
	sub := func(o server.SubscriptionOptions) *server.SubscriptionOptions {
		if o.Authorizer == nil {
			o.Authorizer = allow
		}
		return &o
	}
	for name, tc := range map[string]struct {
		opts server.Options
		want []string
	}{
		"negative HandlerConcurrency": {server.Options{HandlerConcurrency: -1}, []string{"HandlerConcurrency"}},
		"negative HandlerQueue":       {server.Options{HandlerQueue: -1}, []string{"HandlerQueue"}},
		"negative RequestTimeout":     {server.Options{RequestTimeout: -time.Second}, []string{"RequestTimeout"}},
		"negative MaxBodyBytes":       {server.Options{MaxBodyBytes: -1}, []string{"MaxBodyBytes"}},
		"negative MaxJSONDepth":       {server.Options{MaxJSONDepth: -1}, []string{"MaxJSONDepth"}},
		"negative MaxResultBytes":     {server.Options{MaxResultBytes: -1}, []string{"MaxResultBytes"}},
		"negative KeepAliveInterval":  {server.Options{KeepAliveInterval: -1}, []string{"KeepAliveInterval"}},
		"negative RequestStateTTL":    {server.Options{RequestStateTTL: -time.Minute}, []string{"RequestStateTTL"}},
		"short RequestStateKey":       {server.Options{RequestStateKey: []byte("short")}, []string{"RequestStateKey"}},
		"negative TaskConcurrency":    {server.Options{TaskConcurrency: -1}, []string{"TaskConcurrency"}},
		"negative buffer budget":      {server.Options{MaxBufferedBodyBytes: -1}, []string{"MaxBufferedBodyBytes"}},
		"negative BodyReadTimeout":    {server.Options{BodyReadTimeout: -time.Second}, []string{"BodyReadTimeout"}},
		"task share above the pool": {server.Options{HandlerConcurrency: 4, TaskConcurrency: 5},
			[]string{"TaskConcurrency (5) exceeds HandlerConcurrency (4)"}},
		"task share above the default pool": {server.Options{TaskConcurrency: 33},
			[]string{"TaskConcurrency (33) exceeds HandlerConcurrency (32)"}},
		"budget below one body": {server.Options{MaxBodyBytes: 2 << 20, MaxBufferedBodyBytes: 1 << 20},
			[]string{"MaxBufferedBodyBytes (1048576) is below MaxBodyBytes (2097152)"}},
		"budget below the default body": {server.Options{MaxBufferedBodyBytes: 1 << 20},
			[]string{"MaxBufferedBodyBytes (1048576) is below MaxBodyBytes (10485760)"}},
		"negative MaxPerPrincipal": {server.Options{Subscriptions: sub(server.SubscriptionOptions{MaxPerPrincipal: -1})},
			[]string{"MaxPerPrincipal"}},
		"tenant bound above the total": {server.Options{Subscriptions: sub(server.SubscriptionOptions{MaxSubscriptions: 10, MaxPerTenant: 11})},
			[]string{"MaxPerTenant (11) exceeds MaxSubscriptions (10)"}},
		"principal bound above the tenant's": {server.Options{Subscriptions: sub(server.SubscriptionOptions{MaxPerTenant: 10, MaxPerPrincipal: 11})},
			[]string{"MaxPerPrincipal (11) exceeds MaxPerTenant (10)"}},
		"every problem at once": {
			server.Options{
				HandlerQueue: -1, KeepAliveInterval: -1, RequestTimeout: -1,
				Subscriptions: &server.SubscriptionOptions{WriteTimeout: -1, MaxLifetime: -1, MaxPerPrincipal: -2},
			},
			[]string{"HandlerQueue", "KeepAliveInterval", "RequestTimeout", "Authorizer", "WriteTimeout", "MaxLifetime", "MaxPerPrincipal"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			o := tc.opts
			o.Endpoints = []*server.Endpoint{server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "test", Version: "1.0.0"})}
			_, err := server.New(o)
			if err == nil {
				t.Fatal("server.New accepted the options")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %q", err, w)
				}
			}
		})
	}
	// Defaults and explicit in-range values still pass, and a bound left
	// at its default adapts to a narrower explicit one.
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "test", Version: "1.0.0"})
	if _, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, KeepAliveInterval: time.Second,
		Subscriptions: sub(server.SubscriptionOptions{MaxSubscriptions: 4})}); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// TestRegistrationAfterNewPanics: New freezes its endpoints; every
// registration function panics afterwards, without touching the endpoint
// while it is served (run with -race), and the catalog is unchanged.
func TestRegistrationAfterNewPanics(t *testing.T) {
	var ep *server.Endpoint
	srv := newTestServer(t, func(_ *server.Options, e *server.Endpoint) { ep = e })
	ts := httptest.NewServer(srv)
	defer ts.Close()

	toolsList := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp",
			strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":`+metaJSON+`}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2026-07-28")
		req.Header.Set("Mcp-Method", "tools/list")
		resp, err := ts.Client().Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		var res struct {
			Result struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			} `json:"result"`
		}
		b, _ := io.ReadAll(resp.Body)
		if err := json.Unmarshal(b, &res); err != nil {
			return resp.StatusCode, string(b)
		}
		var names []string
		for _, tl := range res.Result.Tools {
			names = append(names, tl.Name)
		}
		return resp.StatusCode, strings.Join(names, ",")
	}
	_, want := toolsList()

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 { // concurrent requests while the registrations are tried
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				toolsList()
			}
		}()
	}
	handler := func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return &mcp.CallToolResult{}, nil }
	resource := func(context.Context, *server.Request) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	}
	for name, register := range map[string]func(){
		"AddTool": func() {
			server.AddTool(ep, &mcp.Tool{Name: "late"}, func(context.Context, *server.Request, EchoInput) (*mcp.CallToolResult, EchoOutput, error) {
				return nil, EchoOutput{}, nil
			})
		},
		"AddTool with a bad schema": func() {
			server.AddTool(ep, &mcp.Tool{Name: "late"}, func(context.Context, *server.Request, chan int) (*mcp.CallToolResult, any, error) {
				return nil, nil, nil
			})
		},
		"AddRawTool": func() {
			ep.AddRawTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, handler)
		},
		"AddRawTaskTool": func() {
			ep.AddRawTaskTool(&mcp.Tool{Name: "late", InputSchema: json.RawMessage(`{"type":"object"}`)}, nil)
		},
		"AddPrompt": func() {
			ep.AddPrompt(&mcp.Prompt{Name: "late"}, func(context.Context, *server.Request, map[string]string) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
		},
		"SetCompletionHandler": func() {
			ep.SetCompletionHandler(func(context.Context, *server.Request, *mcp.CompleteParams) (*mcp.CompleteResult, error) {
				return &mcp.CompleteResult{}, nil
			})
		},
		"AddResource": func() { ep.AddResource(&mcp.Resource{URI: "file:///late", Name: "late"}, resource) },
		"AddResourceTemplate": func() {
			ep.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///late/{x}", Name: "late"}, resource)
		},
	} {
		msg := func() (msg string) {
			defer func() { msg = fmt.Sprint(recover()) }()
			register()
			return ""
		}()
		if !strings.Contains(msg, "after server.New") {
			t.Errorf("%s after New: panic %q, want one saying the endpoint is frozen", name, msg)
		}
	}
	close(stop)
	wg.Wait()
	if status, got := toolsList(); status != http.StatusOK || got != want {
		t.Errorf("tools/list after the late registrations: HTTP %d %q, want %q", status, got, want)
	}
}
