package mcpstdio_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/internal/mcpstdio"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// The test binary is also the servers the tests start, chosen by
// MCPSTDIO_TEST_SERVER: "taskwire" serves a taskwire endpoint on stdio,
// "raw" a scripted server that exercises the client's edges.
func TestMain(m *testing.M) {
	switch os.Getenv("MCPSTDIO_TEST_SERVER") {
	case "taskwire":
		os.Exit(serveTaskwire())
	case "raw":
		os.Exit(serveRaw())
	}
	goleak.VerifyTestMain(m)
}

type slowIn struct {
	Steps int `json:"steps"`
}

type slowOut struct {
	Done int `json:"done"`
}

func serveTaskwire() int {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "slow.build", Description: "Reports progress, then answers."},
		func(ctx context.Context, req *server.Request, in slowIn) (*mcp.CallToolResult, slowOut, error) {
			for i := 1; i <= in.Steps; i++ {
				if err := req.ReportProgress(ctx, float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps)); err != nil {
					return nil, slowOut{}, err
				}
			}
			return nil, slowOut{Done: in.Steps}, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "hang", Description: "Waits for its cancellation."},
		func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			<-ctx.Done()
			return nil, struct{}{}, ctx.Err()
		})
	server.AddTool(ep, &mcp.Tool{Name: "crash", Description: "Exits the process."},
		func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
			os.Exit(3)
			return nil, struct{}{}, nil
		})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Hour)}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := srv.ServeStdio(context.Background(), os.Stdin, os.Stdout, server.StdioOptions{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// serveRaw answers initialize, then for "tools/call": sends a ping and an
// elicitation request of its own, a malformed line, an oversized line and a
// response to no call, and answers the call with what the client answered
// to the elicitation.
func serveRaw() int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	send := func(s string) { out.WriteString(s + "\n"); out.Flush() }
	fmt.Fprintln(os.Stderr, "raw server started")
	var callID json.RawMessage
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
			Result json.RawMessage `json:"result"`
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(in.Bytes(), &m) != nil {
			return 2
		}
		switch {
		case m.Method == "initialize":
			send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"0"}}}`)
		case m.Method == "tools/call":
			callID = m.ID
			send(`not json`)
			send(`{"jsonrpc":"2.0","id":99999,"result":{}}`)
			send(`{"jsonrpc":"2.0","id":"s1","method":"ping"}`)
			send(`{"jsonrpc":"2.0","id":"s2","method":"elicitation/create","params":{"message":"name?","requestedSchema":{"type":"object"}}}`)
		case string(m.ID) == `"s1"`:
			// the ping's answer
		case string(m.ID) == `"s2"`:
			send(`{"jsonrpc":"2.0","id":` + string(callID) + `,"result":{"content":[{"type":"text","text":` +
				string(mustJSON(string(m.Result)+string(m.Error))) + `}]}}`)
		}
	}
	return 0
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func start(t *testing.T, kind string, opts mcpstdio.Options) *mcpstdio.Conn {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	opts.Command = []string{exe}
	opts.Env = append(os.Environ(), "MCPSTDIO_TEST_SERVER="+kind)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := mcpstdio.Start(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func TestCallWithProgress(t *testing.T) {
	c := start(t, "taskwire", mcpstdio.Options{})
	if v := c.Initialized().ProtocolVersion; v != mcp.ProtocolVersion20251125 {
		t.Errorf("negotiated %q, want %q", v, mcp.ProtocolVersion20251125)
	}
	var got []string
	res, err := c.Call(context.Background(), mcp.MethodToolsCall,
		map[string]any{"name": "slow.build", "arguments": map[string]any{"steps": 3}},
		func(p json.RawMessage) {
			var n struct {
				Message string `json:"message"`
			}
			_ = json.Unmarshal(p, &n)
			got = append(got, n.Message)
		})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"step 1 of 3", "step 2 of 3", "step 3 of 3"}, got); diff != "" {
		t.Errorf("progress messages (-want +got):\n%s", diff)
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil || string(r.StructuredContent) != `{"done":3}` {
		t.Errorf("result %s: %v", res, err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := c.Call(context.Background(), mcp.MethodToolsList, nil, nil); !errors.Is(err, mcpstdio.ErrExited) {
		t.Errorf("Call after Close: %v, want ErrExited", err)
	}
}

func TestCallCancelled(t *testing.T) {
	c := start(t, "taskwire", mcpstdio.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := c.Call(ctx, mcp.MethodToolsCall, map[string]any{"name": "hang", "arguments": map[string]any{}}, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Call = %v, want the deadline", err)
	}
	// The connection still serves, and the server dropped the call.
	if _, err := c.Call(context.Background(), mcp.MethodToolsList, nil, nil); err != nil {
		t.Fatalf("tools/list after a cancelled call: %v", err)
	}
}

func TestProcessExitFailsCalls(t *testing.T) {
	c := start(t, "taskwire", mcpstdio.Options{})
	_, err := c.Call(context.Background(), mcp.MethodToolsCall, map[string]any{"name": "crash", "arguments": map[string]any{}}, nil)
	if !errors.Is(err, mcpstdio.ErrExited) {
		t.Fatalf("Call = %v, want ErrExited", err)
	}
	<-c.Done()
	if c.Err() == nil {
		t.Error("Err() = nil after exit status 3")
	}
}

func TestServerRequestsAndBadLines(t *testing.T) {
	var asked []string
	c := start(t, "raw", mcpstdio.Options{
		Capabilities: &mcp.LegacyClientCapabilities{Elicitation: &mcp.ElicitationCapability{}},
		Handler: func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
			asked = append(asked, method)
			return json.RawMessage(`{"action":"accept","content":{"name":"ada"}}`), nil
		},
	})
	if v := c.Initialized().ProtocolVersion; v != mcp.ProtocolVersion20250618 {
		t.Errorf("negotiated %q", v)
	}
	res, err := c.Call(context.Background(), mcp.MethodToolsCall, map[string]any{"name": "x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(res), `ada`) {
		t.Errorf("result %s does not carry the elicitation's answer", res)
	}
	if diff := cmp.Diff([]string{mcp.MethodElicitationCreate}, asked); diff != "" {
		t.Errorf("handled requests (-want +got):\n%s", diff)
	}
	if n := c.Dropped(); n != 2 {
		t.Errorf("Dropped() = %d, want 2 (a malformed line, a response to no call)", n)
	}
	if !strings.Contains(c.Stderr(), "raw server started") {
		t.Errorf("Stderr() = %q", c.Stderr())
	}
}

func TestStartFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts mcpstdio.Options
		want string
	}{
		{"no command", mcpstdio.Options{}, "Options.Command must name a program"},
		{"bad version", mcpstdio.Options{Command: []string{"x"}, ProtocolVersions: []string{"2026-07-28"}}, "not a 2025 revision"},
		{"negative", mcpstdio.Options{Command: []string{"x"}, MaxInFlight: -1}, "must not be negative"},
		{"missing program", mcpstdio.Options{Command: []string{"/nonexistent/mcp-server"}}, "start /nonexistent/mcp-server"},
		{"exits at once", mcpstdio.Options{Command: []string{"false"}}, "initialize"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := mcpstdio.Start(context.Background(), tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Start = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
