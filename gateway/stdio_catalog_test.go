package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// lineMux is the stdio upstream's output: the server's frames, and
// notifications the test's tools send between them, never inside one.
type lineMux struct {
	mu      sync.Mutex
	out     io.Writer
	partial []byte   // the server's bytes after its last newline
	pending [][]byte // notifications waiting for the end of a frame
}

func (m *lineMux) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.partial = append(m.partial, p...)
	i := bytes.LastIndexByte(m.partial, '\n')
	if i < 0 {
		return len(p), nil
	}
	buf := bytes.Join(append([][]byte{m.partial[:i+1]}, m.pending...), nil) // a copy
	m.partial, m.pending = append(m.partial[:0], m.partial[i+1:]...), nil
	if _, err := m.out.Write(buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// notify sends a notification now, or after the frame being written.
func (m *lineMux) notify(method string) {
	line := append(mcp.AppendNotification(nil, method, nil), '\n')
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.partial) > 0 {
		m.pending = append(m.pending, line)
		return
	}
	_, _ = m.out.Write(line)
}

// addStdioCatalog adds to the stdio upstream:
//   - grow: adds the tool grown (answering "grown") and sends
//     notifications/tools/list_changed;
//   - the resource file:///notes ("stdio notes") and the prompt greet.
func addStdioCatalog(ep *server.Endpoint, out *lineMux) {
	server.AddTool(ep, &mcp.Tool{Name: "grow"},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
			err := ep.UpdateTools(server.PutRawTool(&mcp.Tool{Name: "grown", InputSchema: json.RawMessage(`{"type":"object"}`)},
				func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return textResult("grown"), nil }))
			if err != nil {
				return nil, struct{}{}, err
			}
			out.notify(mcp.NotificationToolsListChanged)
			return nil, struct{}{}, nil
		})
	ep.AddResource(&mcp.Resource{URI: "file:///notes", Name: "notes"}, func(_ context.Context, req *server.Request) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Name, Text: "stdio notes"}}}, nil
	})
	ep.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}},
		func(_ context.Context, _ *server.Request, args map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + args["who"]}}}}, nil
		})
}

// hasTools reports, as a complaint or "", whether the downstream
// tools/list has every name of want and none of absent.
func hasTools(ctx context.Context, c *client.Client, want, absent []string) string {
	tools, err := c.ListTools(ctx)
	if err != nil {
		return "tools/list: " + err.Error()
	}
	got := map[string]bool{}
	for _, tl := range tools {
		got[tl.Name] = true
	}
	for _, n := range want {
		if !got[n] {
			return "the gateway does not list " + n
		}
	}
	for _, n := range absent {
		if got[n] {
			return "the gateway still lists " + n
		}
	}
	return ""
}

// TestStdioUpstreamCatalog: with a stdio upstream, resources and prompts
// pass through its connection (an unknown resource answering as the
// upstream's own unknown one); a tool the process adds and announces with
// notifications/tools/list_changed is served; and after the process
// restarts with another tool list, its new tool is served and those it
// lacks are no longer, all without a restart of the gateway.
func TestStdioUpstreamCatalog(t *testing.T) {
	opts, dir := stdioOptions(t, gateway.Options{})
	url := startGateway(t, opts)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	c := newClient(t, url)

	resources, err := c.ListResources(ctx)
	if err != nil || len(resources) != 1 || resources[0].URI != "file:///notes" {
		t.Errorf("resources: %+v %v", resources, err)
	}
	read, err := c.ReadResource(ctx, "file:///notes")
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text != "stdio notes" {
		t.Errorf("resources/read: %+v %v", read, err)
	}
	_, err = c.ReadResource(ctx, "file:///nowhere")
	var rpc *client.RPCError
	if !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams {
		t.Errorf("unknown resource: %v, want -32602", err)
	}
	got, err := c.GetPrompt(ctx, "greet", map[string]string{"who": "ann"})
	if err != nil || len(got.Messages) != 1 {
		t.Fatalf("greet: %+v %v", got, err)
	}
	if text, _ := got.Messages[0].Content.(*mcp.TextContent); text == nil || text.Text != "hello ann" {
		t.Errorf("greet rendered %+v", got.Messages[0].Content)
	}

	if res, err := c.Call(ctx, "grow", nil); err != nil || res.Result == nil || res.Result.IsError {
		t.Fatalf("grow: %+v %v", res, err)
	}
	eventually(t, func() string { return hasTools(ctx, c, []string{"grown", "gone.later"}, nil) })
	res, err := c.Call(ctx, "grown", nil)
	if err != nil || res.Result == nil || resultText(res.Result) != "grown" {
		t.Errorf("grown: %+v %v", res, err)
	}

	if _, err := c.Call(ctx, "vanish", nil); err != nil {
		t.Fatalf("vanish: %v", err)
	}
	// The successor lists after.restart, and neither gone.later nor the
	// tool its predecessor grew.
	eventually(t, func() string { return hasTools(ctx, c, []string{"after.restart"}, []string{"gone.later", "grown"}) })
	res, err = c.Call(ctx, "after.restart", nil)
	if err != nil || res.Result == nil {
		t.Fatalf("after.restart: %+v %v", res, err)
	}
	if diff := cmp.Diff(BuildOut{Call: 1}, structured[BuildOut](t, res.Result)); diff != "" {
		t.Errorf("after.restart (-want +got):\n%s", diff)
	}
	if n := calls(t, dir, "vanish"); n != 1 {
		t.Errorf("vanish called %d times, want 1", n)
	}
}
