package server_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

// TestInferToolSchemasMatchesAddTool: the exported inference gives the
// schemas AddTool registers, and a tool registered with them is served
// unchanged.
func TestInferToolSchemasMatchesAddTool(t *testing.T) {
	tool, err := server.InferToolSchemas[taskBuildIn, taskBuildOut](&mcp.Tool{Name: "build"})
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "main", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "build"}, func(context.Context, *server.Request, taskBuildIn) (*mcp.CallToolResult, taskBuildOut, error) {
		return nil, taskBuildOut{}, nil
	})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Admission: server.DevAdmission()})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	resp, err := mcptest.NewClient(srv, "/mcp").Call(context.Background(), mcp.MethodToolsList, nil)
	if err != nil {
		t.Fatal(err)
	}
	var list mcp.ListToolsResult
	if err := resp.DecodeResult(&list); err != nil || len(list.Tools) != 1 {
		t.Fatalf("tools/list: %v %s", err, resp.Body)
	}
	registered := list.Tools[0]
	for _, c := range []struct {
		name      string
		got, want json.RawMessage
	}{{"input", tool.InputSchema, registered.InputSchema}, {"output", tool.OutputSchema, registered.OutputSchema}} {
		if diff := cmp.Diff(decodeJSON(t, c.want), decodeJSON(t, c.got)); diff != "" {
			t.Errorf("%s schema (-AddTool +InferToolSchemas):\n%s", c.name, diff)
		}
	}
	if open, err := server.InferToolSchemas[taskBuildIn, any](&mcp.Tool{Name: "build"}); err != nil || open.OutputSchema != nil {
		t.Errorf("Out any: output schema %s, error %v; want none", open.OutputSchema, err)
	}
}

func decodeJSON(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	return v
}

// TestCheckTool: the checks New applies to a registration, by itself.
func TestCheckTool(t *testing.T) {
	for _, tc := range []struct {
		tool mcp.Tool
		want string
	}{
		{mcp.Tool{Name: "ok", InputSchema: json.RawMessage(`{"type":"object"}`)}, ""},
		{mcp.Tool{Name: "", InputSchema: json.RawMessage(`{"type":"object"}`)}, `tool name "" must have 1 to 128 characters`},
		{mcp.Tool{Name: "a/b", InputSchema: json.RawMessage(`{"type":"object"}`)}, `tool name "a/b" may only use letters, digits, '_', '-' and '.'`},
		{mcp.Tool{Name: "none"}, `tool "none": no input schema`},
		{mcp.Tool{Name: "str", InputSchema: json.RawMessage(`{"type":"string"}`)}, `tool "str": input schema must have "type": "object"`},
		{mcp.Tool{Name: "out", InputSchema: json.RawMessage(`{"type":"object"}`), OutputSchema: json.RawMessage(`[]`)},
			`tool "out": output schema must be a JSON object with "type": "object"`},
	} {
		got := ""
		if err := server.CheckTool(&tc.tool); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("CheckTool(%q) = %q, want %q", tc.tool.Name, got, tc.want)
		}
	}
}
