package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
)

// TestTaskToolStatusFollowsUpstreamProgress: a 2026-07-28 client gets a
// task for a task tool, sees its statusMessage follow the upstream's
// progress messages, and gets the upstream's structured result; the
// upstream sees the gateway's credentials, never the caller's token.
func TestTaskToolStatusFollowsUpstreamProgress(t *testing.T) {
	up := newUpstream(t)
	url := startGateway(t, gateway.Options{
		Upstream:        up.url,
		UpstreamHeaders: http.Header{"Authorization": {"Bearer gateway-secret"}},
		TaskTools:       []string{"slow.*"},
	})
	c := newClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	res, err := c.Call(ctx, "slow.build", BuildIn{Steps: 2, HoldAt: 1})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task == nil {
		t.Fatalf("slow.build answered inline: %+v", res.Result)
	}
	<-up.held
	var seen []string
	for u, err := range res.Task.Updates(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if u.StatusMessage != "" && (len(seen) == 0 || seen[len(seen)-1] != u.StatusMessage) {
			seen = append(seen, u.StatusMessage)
		}
		if u.StatusMessage == "step 1 of 2" {
			break
		}
	}
	up.releaseAll()
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(BuildOut{Steps: 2, Call: 1}, structured[BuildOut](t, out)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"step 1 of 2"}, seen); diff != "" {
		t.Errorf("status messages before the release (-want +got):\n%s", diff)
	}
	close(up.headers)
	for h := range up.headers {
		if got := h.Get("Authorization"); got != "Bearer gateway-secret" {
			t.Errorf("upstream request with Authorization %q, want the gateway's own", got)
		}
	}
}

// TestMirrorAndPassThrough: tools/list mirrors the upstream (names,
// annotations, schemas), task tools are marked for tasks, and an inline
// tool answers inline.
func TestMirrorAndPassThrough(t *testing.T) {
	up := newUpstream(t)
	url := startGateway(t, gateway.Options{Upstream: up.url, TaskTools: []string{"slow.*", "flaky.*"}})
	c := newClient(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	tools, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"fail.rpc", "fail.tool", "flaky.rpc", "slow.build", "text.echo"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	echo, err := c.Tool(ctx, "text.echo")
	if err != nil || echo == nil {
		t.Fatalf("text.echo: %v %v", echo, err)
	}
	if echo.Annotations == nil || echo.Annotations.ReadOnlyHint == nil || !*echo.Annotations.ReadOnlyHint || !strings.Contains(string(echo.InputSchema), `"text"`) {
		t.Errorf("text.echo mirrored as %+v, want its annotations and input schema", echo)
	}

	res, err := c.Call(ctx, "text.echo", map[string]any{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Task != nil {
		t.Fatal("text.echo became a task")
	}
	if diff := cmp.Diff(map[string]string{"text": "hello"}, structured[map[string]string](t, res.Result)); diff != "" {
		t.Errorf("echo (-want +got):\n%s", diff)
	}
}

// TestOutcomes: what a client gets for each upstream outcome, inline and
// as a task, for retry and other tools.
func TestOutcomes(t *testing.T) {
	up := newUpstream(t)
	url := startGateway(t, gateway.Options{
		Upstream:   up.url,
		TaskTools:  []string{"fail.*", "flaky.*"},
		RetryTools: []string{"flaky.*"},
	})
	inlineUp := newUpstream(t)
	inlineURL := startGateway(t, gateway.Options{Upstream: inlineUp.url})
	c, ci := newClient(t, url), newClient(t, inlineURL)

	type outcome struct {
		Task    bool
		IsError bool
		Text    string
		Code    int64
		Message string
	}
	run := func(c *client.Client, tool string) outcome {
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		res, err := c.Call(ctx, tool, map[string]any{})
		var o outcome
		r := (*mcp.CallToolResult)(nil)
		if err == nil {
			r = res.Result
			if res.Task != nil {
				o.Task = true
				r, err = res.Task.Wait(ctx)
			}
		}
		var rpc *client.RPCError
		switch {
		case errors.As(err, &rpc):
			o.Code, o.Message = rpc.Code, rpc.Message
		case err != nil:
			t.Fatalf("%s: %v", tool, err)
		default:
			o.IsError, o.Text = r.IsError, resultText(r)
		}
		return o
	}
	for _, tc := range []struct {
		name   string
		c      *client.Client
		tool   string
		want   outcome
		wantFn func(o outcome) bool
	}{
		{name: "task isError completes with it", c: c, tool: "fail.tool",
			want: outcome{Task: true, IsError: true, Text: "no such branch"}},
		{name: "task JSON-RPC error fails a non-retry tool", c: c, tool: "fail.rpc",
			want: outcome{Task: true, Code: mcp.CodeInternalError, Message: "The upstream server answered with error -32001: upstream refuses"}},
		{name: "task JSON-RPC error is retried for a retry tool", c: c, tool: "flaky.rpc",
			want: outcome{Task: true, Text: `{"steps":0,"call":2}`}},
		{name: "inline isError", c: ci, tool: "fail.tool",
			want: outcome{IsError: true, Text: "no such branch"}},
		{name: "inline JSON-RPC error", c: ci, tool: "fail.rpc",
			want: outcome{Code: mcp.CodeInternalError, Message: "The upstream server answered with error -32001: upstream refuses"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, run(tc.c, tc.tool)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLegacyClientWaitsInline: a 2025-06-18 client without tasks calls a
// task tool, waits inline for its result and gets the upstream's progress
// as notifications/progress, its first step too (whose count, 1, is the
// number of the server's own "Task working" notification before it).
func TestLegacyClientWaitsInline(t *testing.T) {
	up := newUpstream(t)
	url := startGateway(t, gateway.Options{Upstream: up.url, TaskTools: []string{"slow.*"}})
	c := newClient(t, url, "2025-06-18")
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	progress := make(chan string, 16)
	go func() {
		<-up.held
		// The worker writes the first report a progress interval after
		// its claim; the release waits for the client to see it.
		for m := range progress {
			if m == "step 1 of 3" {
				up.releaseAll()
				return
			}
		}
	}()
	res, err := c.Call(ctx, "slow.build", BuildIn{Steps: 3, HoldAt: 1}, client.WithProgress(func(p client.Progress) {
		select {
		case progress <- p.Message:
		default:
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Task != nil {
		t.Fatal("a 2025-06-18 client got a task")
	}
	if diff := cmp.Diff(BuildOut{Steps: 3, Call: 1}, structured[BuildOut](t, res.Result)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}
