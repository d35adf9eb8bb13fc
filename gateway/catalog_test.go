package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	sessmemory "github.com/taskwire/taskwire/session/memory"
)

// liveUpstream is a taskwire upstream whose tools change at run time, with
// resources, prompts and completion, listens and 2025 sessions, served on
// one loopback address across restarts.
type liveUpstream struct {
	url string
	cur atomic.Pointer[server.Server]
	ep  atomic.Pointer[server.Endpoint]
}

func (u *liveUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.cur.Load().ServeHTTP(w, r)
}

func textResult(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

func newLiveUpstream(t *testing.T) *liveUpstream {
	t.Helper()
	u := &liveUpstream{}
	u.start(t, "text.echo")
	hs := httptest.NewServer(u)
	t.Cleanup(hs.Close)
	u.url = hs.URL + "/mcp"
	return u
}

// start serves a new upstream in place of the last one (a restart), with
// the inline tool first and the task tool slow.build.
func (u *liveUpstream) start(t *testing.T, first string) {
	t.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "live-upstream", Version: "1.0.0"})
	ep.AddRawTool(&mcp.Tool{Name: first, Description: "v1", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return textResult(first), nil })
	ep.AddRawTool(&mcp.Tool{Name: "slow.build", InputSchema: json.RawMessage(`{"type":"object","properties":{"steps":{"type":"integer"}}}`)},
		func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return textResult("built"), nil })
	ep.AddResource(&mcp.Resource{URI: "file:///a", Name: "a"}, func(_ context.Context, req *server.Request) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Name, Text: "contents of a"}}}, nil
	})
	ep.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///logs/{day}", Name: "logs"}, func(_ context.Context, req *server.Request) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Name, Text: "log"}}}, nil
	})
	ep.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, _ *server.Request, args map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + args["who"]}}}}, nil
		})
	ep.AddPrompt(&mcp.Prompt{Name: "broken"}, func(context.Context, *server.Request, map[string]string) (*mcp.GetPromptResult, error) {
		return nil, mcp.NewError(-32001, "prompt store down")
	})
	ep.AddPrompt(&mcp.Prompt{Name: "hang"}, func(ctx context.Context, _ *server.Request, _ map[string]string) (*mcp.GetPromptResult, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	ep.SetCompletionHandler(func(_ context.Context, _ *server.Request, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
		return &mcp.CompleteResult{Completion: mcp.CompletionValues{Values: []string{p.Argument.Value + "-one", p.Argument.Value + "-two"}}}, nil
	})
	sessions, err := sessmemory.New(sessmemory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep}, Sessions: &server.SessionOptions{Store: sessions},
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
	})
	if err != nil {
		t.Fatal(err)
	}
	old := u.cur.Swap(srv)
	u.ep.Store(ep)
	t.Cleanup(func() { srv.Close() })
	if old != nil {
		old.Close()
	}
}

// eventually retries check until it returns "" (within waitFor), and
// reports its last complaint otherwise.
func eventually(t *testing.T, check func() string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		msg := check()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(msg)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// toolSummary lists the downstream tools as "name: description".
func toolSummary(ctx context.Context, c *client.Client) []string {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	var out []string
	for _, tl := range tools {
		out = append(out, tl.Name+": "+tl.Description)
	}
	slices.Sort(out)
	return out
}

// TestMirrorFollowsUpstream: with an upstream of either era, tools the
// upstream adds, redefines and removes after the gateway started are
// served, redefined and refused downstream once the upstream announces
// them; a task tool keeps its task nature and validates against its new
// schema; a new task tool is served as a task tool at once; and after
// the upstream restarts the mirror is listed again.
func TestMirrorFollowsUpstream(t *testing.T) {
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			up := newLiveUpstream(t)
			url := startGateway(t, gateway.Options{Upstream: up.url, TaskTools: []string{"slow.*"}, ProtocolVersions: []string{version}})
			c := newClient(t, url)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			if diff := cmp.Diff([]string{"slow.build: ", "text.echo: v1"}, toolSummary(ctx, c)); diff != "" {
				t.Fatalf("tools at start (-want +got):\n%s", diff)
			}

			ok := func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return textResult("new"), nil }
			if err := up.ep.Load().UpdateTools(
				server.PutRawTool(&mcp.Tool{Name: "new.tool", InputSchema: json.RawMessage(`{"type":"object"}`)}, ok),
				server.PutRawTool(&mcp.Tool{Name: "slow.extra", InputSchema: json.RawMessage(`{"type":"object"}`)}, ok),
				server.RedefineTool(&mcp.Tool{Name: "text.echo", Description: "v2", InputSchema: json.RawMessage(`{"type":"object"}`)}),
				server.RedefineTool(&mcp.Tool{Name: "slow.build", Description: "bounded", InputSchema: json.RawMessage(
					`{"type":"object","properties":{"steps":{"type":"integer","maximum":3}},"required":["steps"]}`)}),
			); err != nil {
				t.Fatal(err)
			}
			want := []string{"new.tool: ", "slow.build: bounded", "slow.extra: ", "text.echo: v2"}
			eventually(t, func() string { return cmp.Diff(want, toolSummary(ctx, c)) })

			// The new task tool is a task tool at once: the node's
			// workers claim its jobs.
			res, err := c.Call(ctx, "slow.extra", map[string]any{})
			if err != nil || res.Task == nil {
				t.Fatalf("slow.extra: %+v %v, want a task", res, err)
			}
			if out, err := res.Task.Wait(ctx); err != nil || resultText(out) != "new" {
				t.Errorf("slow.extra task: %+v %v", out, err)
			}

			res, err = c.Call(ctx, "new.tool", map[string]any{})
			if err != nil || res.Result == nil || resultText(res.Result) != "new" {
				t.Errorf("new.tool: %+v %v", res, err)
			}
			res, err = c.Call(ctx, "slow.build", map[string]any{"steps": 5})
			if err != nil || res.Result == nil || !res.Result.IsError || !strings.Contains(resultText(res.Result), "Invalid arguments") {
				t.Errorf("slow.build against its new schema: %+v %v", res, err)
			}
			res, err = c.Call(ctx, "slow.build", map[string]any{"steps": 2})
			if err != nil || res.Task == nil {
				t.Fatalf("slow.build with valid arguments: %+v %v, want a task", res, err)
			}
			if out, err := res.Task.Wait(ctx); err != nil || resultText(out) != "built" {
				t.Errorf("slow.build task: %+v %v", out, err)
			}

			if err := up.ep.Load().UpdateTools(server.RemoveTool("text.echo")); err != nil {
				t.Fatal(err)
			}
			eventually(t, func() string {
				_, err := c.Call(ctx, "text.echo", map[string]any{})
				var rpc *client.RPCError
				if !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams || rpc.Message != `Invalid params: unknown tool "text.echo"` {
					return "a removed tool answers " + errString(err)
				}
				return ""
			})

			up.start(t, "after.restart") // text.echo is back as after.restart; new.tool is gone
			want = []string{"after.restart: v1", "slow.build: "}
			eventually(t, func() string { return cmp.Diff(want, toolSummary(ctx, c)) })
		})
	}
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// TestResourcesPromptsCompletionPassThrough: resources, templates,
// prompts and completion are served from the upstream; an unknown
// resource answers as the upstream's own unknown one; upstream errors are
// mapped as the tools' are (-32602 kept, others -32603 naming the
// upstream's code), and a request the upstream does not answer in
// CallTimeout is a -32603 saying so.
func TestResourcesPromptsCompletionPassThrough(t *testing.T) {
	up := newLiveUpstream(t)
	url := startGateway(t, gateway.Options{Upstream: up.url, CallTimeout: 500 * time.Millisecond})
	c := newClient(t, url)
	direct := newClient(t, up.url)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	resources, err := c.ListResources(ctx)
	if err != nil || len(resources) != 1 || resources[0].URI != "file:///a" {
		t.Errorf("resources: %+v %v", resources, err)
	}
	templates, err := c.ListResourceTemplates(ctx)
	if err != nil || len(templates) != 1 || templates[0].URITemplate != "file:///logs/{day}" {
		t.Errorf("templates: %+v %v", templates, err)
	}
	read, err := c.ReadResource(ctx, "file:///logs/monday")
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "log" {
		t.Errorf("read through a template: %+v %v", read, err)
	}
	_, viaGateway := c.ReadResource(ctx, "file:///nowhere")
	_, upstreamOwn := direct.ReadResource(ctx, "file:///nowhere")
	var g, d *client.RPCError
	if !errors.As(viaGateway, &g) || !errors.As(upstreamOwn, &d) || g.Code != d.Code || g.Message != d.Message || string(g.Data) != string(d.Data) {
		t.Errorf("unknown resource: through the gateway %v, the upstream's own %v", viaGateway, upstreamOwn)
	}

	prompts, err := c.ListPrompts(ctx)
	if err != nil || len(prompts) != 3 {
		t.Errorf("prompts: %+v %v", prompts, err)
	}
	got, err := c.GetPrompt(ctx, "greet", map[string]string{"who": "bob"})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("greet: %+v %v", got, err)
	}
	if text, _ := got.Messages[0].Content.(*mcp.TextContent); text == nil || text.Text != "hello bob" {
		t.Errorf("greet rendered %+v", got.Messages[0].Content)
	}
	cases := []struct {
		name string
		args map[string]string
		code int64
		msg  string
	}{
		{"greet", nil, mcp.CodeInvalidParams, "Invalid params: missing required prompt argument"},
		{"nope", nil, mcp.CodeInvalidParams, "Invalid params: unknown prompt"},
		{"broken", nil, mcp.CodeInternalError, "The upstream server answered with error -32001: prompt store down"},
		{"hang", nil, mcp.CodeInternalError, "The upstream server did not answer within 500ms."},
	}
	for _, tc := range cases {
		_, err := c.GetPrompt(ctx, tc.name, tc.args)
		var rpc *client.RPCError
		if !errors.As(err, &rpc) || rpc.Code != tc.code || rpc.Message != tc.msg {
			t.Errorf("prompt %s: %v, want %d %q", tc.name, err, tc.code, tc.msg)
		}
	}

	comp, err := c.Complete(ctx, &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"}, mcp.CompleteArgument{Name: "who", Value: "al"}, nil)
	if err != nil || !slices.Equal(comp.Completion.Values, []string{"al-one", "al-two"}) {
		t.Errorf("completion: %+v %v", comp, err)
	}
}
