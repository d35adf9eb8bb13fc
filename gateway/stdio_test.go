package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// The test binary is also the stdio upstream the tests start, when
// GATEWAY_TEST_SERVER is "stdio" (inline tools) or "stdio-tasks" (durable
// tools, serveStdioTaskUpstream); GATEWAY_TEST_DIR holds a file per tool
// counting its calls across the upstream's processes.
func TestMain(m *testing.M) {
	switch os.Getenv("GATEWAY_TEST_SERVER") {
	case "stdio":
		os.Exit(serveStdioUpstream(os.Getenv("GATEWAY_TEST_DIR")))
	case "stdio-tasks":
		os.Exit(serveStdioTaskUpstream(os.Getenv("GATEWAY_TEST_DIR")))
	}
	os.Exit(m.Run())
}

// countCall appends a byte to dir/name and returns the calls counted so
// far, this one included.
func countCall(dir, name string) int {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return -1
	}
	defer f.Close()
	_, _ = f.Write([]byte{'.'})
	st, err := f.Stat()
	if err != nil {
		return -1
	}
	return int(st.Size())
}

// serveStdioUpstream serves, over stdio:
//   - slow.build: "step i of n" progress, then {"steps":n,"call":k}; after
//     step holdAt it waits for the file "release";
//   - text.echo: its arguments back;
//   - once.die, again.die: the first call (counted across processes)
//     exits the process mid-call, later calls answer {"steps":0,"call":k};
//   - vanish: exits the process, and its successors no longer list
//     gone.later;
//   - gone.later: answers {};
//   - after.restart, in the successors of vanish's process: {"call":k};
//   - grow, a resource and a prompt: see addStdioCatalog;
//   - hang: never answers, whatever the cancellation;
//   - ask.deploy: asks for approval (elicitation/create), then answers
//     {"approved":...,"call":k}.
func serveStdioUpstream(dir string) int {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "stdio-upstream", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "slow.build", Description: "Build in steps."},
		func(ctx context.Context, req *server.Request, in BuildIn) (*mcp.CallToolResult, BuildOut, error) {
			n := countCall(dir, "slow.build")
			for i := 1; i <= in.Steps; i++ {
				_ = req.ReportProgress(ctx, float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps))
				for i == in.HoldAt {
					if _, err := os.Stat(filepath.Join(dir, "release")); err == nil {
						break
					}
					select {
					case <-ctx.Done():
						return nil, BuildOut{}, ctx.Err()
					case <-time.After(10 * time.Millisecond):
					}
				}
			}
			return nil, BuildOut{Steps: in.Steps, Call: n}, nil
		})
	type EchoIn struct {
		Text string `json:"text"`
	}
	server.AddTool(ep, &mcp.Tool{Name: "text.echo"},
		func(_ context.Context, _ *server.Request, in EchoIn) (*mcp.CallToolResult, EchoIn, error) {
			return nil, in, nil
		})
	for _, name := range []string{"once.die", "again.die"} {
		server.AddTool(ep, &mcp.Tool{Name: name},
			func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, BuildOut, error) {
				n := countCall(dir, name)
				if n == 1 {
					os.Exit(3)
				}
				return nil, BuildOut{Call: n}, nil
			})
	}
	server.AddTool(ep, &mcp.Tool{Name: "vanish"},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
			countCall(dir, "vanish")
			os.Exit(4)
			return nil, struct{}{}, nil
		})
	if _, err := os.Stat(filepath.Join(dir, "vanish")); err != nil {
		server.AddTool(ep, &mcp.Tool{Name: "gone.later"},
			func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
				return nil, struct{}{}, nil
			})
	} else {
		server.AddTool(ep, &mcp.Tool{Name: "after.restart"},
			func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, BuildOut, error) {
				return nil, BuildOut{Call: countCall(dir, "after.restart")}, nil
			})
	}
	server.AddTool(ep, &mcp.Tool{Name: "ask.deploy"},
		func(_ context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, DeployOut, error) {
			n := countCall(dir, "ask.deploy")
			ans, ok := req.InputResponses["approve"]
			if !ok {
				form := mcp.NewElicitFormRequest("Deploy to production?",
					[]byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
				return nil, DeployOut{}, server.InputRequired(mcp.InputRequests{"approve": form}, nil)
			}
			var er mcp.ElicitResult
			if err := json.Unmarshal(ans, &er); err != nil {
				return nil, DeployOut{}, err
			}
			return nil, DeployOut{Approved: er.Action == mcp.ElicitActionAccept && er.Content["ok"] == true, Call: n}, nil
		})
	out := &lineMux{out: os.Stdout}
	addStdioCatalog(ep, out)
	server.AddTool(ep, &mcp.Tool{Name: "hang"},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
			select {}
		})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.ServeStdio(context.Background(), os.Stdin, out, server.StdioOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// stdioOptions are gateway options whose upstream is this test binary
// over stdio, counting calls in a new directory (returned).
func stdioOptions(t *testing.T, opts gateway.Options) (gateway.Options, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	opts.UpstreamCommand = []string{exe}
	opts.UpstreamEnv = append(os.Environ(), "GATEWAY_TEST_SERVER=stdio", "GATEWAY_TEST_DIR="+dir)
	if opts.ProtocolVersions == nil {
		// The test server speaks both eras; these tests are of the 2025
		// session (modernStdioOptions for 2026-07-28).
		opts.ProtocolVersions = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618}
	}
	return opts, dir
}

// calls reads the call count of a tool of the stdio upstream.
func calls(t *testing.T, dir, tool string) int {
	st, err := os.Stat(filepath.Join(dir, tool))
	if err != nil {
		return 0
	}
	return int(st.Size())
}

// TestStdioUpstream: with an upstream the gateway starts as a process, a
// 2026-07-28 client gets a task whose statusMessage follows the upstream's
// progress and whose result is the upstream's, a 2025-06-18 client waits
// inline for it, and an inline tool passes through.
func TestStdioUpstream(t *testing.T) { stdioEras(t, testStdioUpstream) }

func testStdioUpstream(t *testing.T, versions []string) {
	opts, dir := stdioOptions(t, gateway.Options{TaskTools: []string{"slow.*"}, RetryTools: []string{"slow.*"}, ProtocolVersions: versions})
	url := startGateway(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()

	c := newClient(t, url)
	res, err := c.Call(ctx, "slow.build", BuildIn{Steps: 3, HoldAt: 2})
	if err != nil || res.Task == nil {
		t.Fatalf("slow.build: %+v %v, want a task", res, err)
	}
	for u, err := range res.Task.Updates(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if u.StatusMessage == "step 2 of 3" {
			break
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "release"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(BuildOut{Steps: 3, Call: 1}, structured[BuildOut](t, out)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}

	legacy := newClient(t, url, mcp.ProtocolVersion20250618)
	var messages []string
	inline, err := legacy.Call(ctx, "slow.build", BuildIn{Steps: 2}, client.WithProgress(func(p client.Progress) {
		messages = append(messages, p.Message)
	}))
	if err != nil || inline.Task != nil {
		t.Fatalf("slow.build for 2025-06-18: %+v %v, want an inline result", inline, err)
	}
	if diff := cmp.Diff(BuildOut{Steps: 2, Call: 2}, structured[BuildOut](t, inline.Result)); diff != "" {
		t.Errorf("inline result (-want +got):\n%s", diff)
	}

	echo, err := c.Call(ctx, "text.echo", map[string]any{"text": "hi"})
	if err != nil || echo.Task != nil {
		t.Fatalf("text.echo: %+v %v", echo, err)
	}
	if diff := cmp.Diff(map[string]string{"text": "hi"}, structured[map[string]string](t, echo.Result)); diff != "" {
		t.Errorf("echo (-want +got):\n%s", diff)
	}
}

// TestStdioUpstreamDiesMidCall: the upstream process exits during a
// call. For a tool not safe to retry the task fails saying so; a retry
// tool's task completes with a second call, to the restarted process.
func TestStdioUpstreamDiesMidCall(t *testing.T) { stdioEras(t, testStdioUpstreamDiesMidCall) }

func testStdioUpstreamDiesMidCall(t *testing.T, versions []string) {
	opts, dir := stdioOptions(t, gateway.Options{TaskTools: []string{"*.die"}, RetryTools: []string{"again.*"}, ProtocolVersions: versions})
	url := startGateway(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c := newClient(t, url)

	res, err := c.Call(ctx, "once.die", nil)
	if err != nil || res.Task == nil {
		t.Fatalf("once.die: %+v %v, want a task", res, err)
	}
	_, err = res.Task.Wait(ctx)
	var failed *client.TaskFailedError
	if !errors.As(err, &failed) || !strings.Contains(failed.Err.Message, "connection failure") ||
		!strings.Contains(failed.Err.Message, "not repeated") {
		t.Errorf("once.die: %v, want a failure naming the connection failure and saying it is not repeated", err)
	}

	res, err = c.Call(ctx, "again.die", nil)
	if err != nil || res.Task == nil {
		t.Fatalf("again.die: %+v %v, want a task", res, err)
	}
	out, err := res.Task.Wait(ctx)
	if err != nil {
		t.Fatalf("again.die: %v", err)
	}
	if diff := cmp.Diff(BuildOut{Call: 2}, structured[BuildOut](t, out)); diff != "" {
		t.Errorf("again.die result (-want +got):\n%s", diff)
	}
	if got := map[string]int{"once.die": calls(t, dir, "once.die"), "again.die": calls(t, dir, "again.die")}; !cmp.Equal(got,
		map[string]int{"once.die": 1, "again.die": 2}) {
		t.Errorf("upstream calls %v, want once.die 1 and again.die 2", got)
	}
}

// TestStdioUpstreamToolGone: after a restart, the upstream no longer
// lists a tool the gateway mirrors; the gateway stops serving it, and its
// calls answer as an unknown tool's.
func TestStdioUpstreamToolGone(t *testing.T) { stdioEras(t, testStdioUpstreamToolGone) }

func testStdioUpstreamToolGone(t *testing.T, versions []string) {
	opts, _ := stdioOptions(t, gateway.Options{ProtocolVersions: versions})
	url := startGateway(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c := newClient(t, url)

	res, err := c.Call(ctx, "vanish", nil)
	if err != nil || !res.Result.IsError || !strings.Contains(resultText(res.Result), "connection failure") {
		t.Fatalf("vanish: %+v %v, want an isError result naming the connection failure", res, err)
	}
	// The restart and the new listing take a moment: ask until the
	// gateway knows.
	eventually(t, func() string {
		_, err := c.Call(ctx, "gone.later", nil)
		var rpc *client.RPCError
		if !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams || rpc.Message != `Invalid params: unknown tool "gone.later"` {
			return "gone.later answers " + errString(err)
		}
		return ""
	})
	// The mirror itself follows: the restarted process's tools are listed.
	eventually(t, func() string {
		tools, err := c.ListTools(ctx)
		names := map[string]bool{}
		for _, tool := range tools {
			names[tool.Name] = true
		}
		if err != nil || names["gone.later"] || !names["after.restart"] {
			return fmt.Sprintf("tools/list %v (%v), want after.restart and not gone.later", names, err)
		}
		return ""
	})
}

// TestStdioUpstreamHangs: an upstream that never answers a call: the
// call ends at its deadline, and closing the gateway stops the process
// (killing it) and leaves no goroutine behind.
func TestStdioUpstreamHangs(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // runs last, after the gateway closed
	opts, _ := stdioOptions(t, gateway.Options{CallTimeout: 300 * time.Millisecond})
	url := startGateway(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c := newClient(t, url)
	start := time.Now()
	res, err := c.Call(ctx, "hang", nil)
	if err != nil || !res.Result.IsError || !strings.Contains(resultText(res.Result), "did not answer within 300ms") {
		t.Fatalf("hang: %+v %v, want an isError result naming the deadline", res, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("hang answered after %v", d)
	}
}
