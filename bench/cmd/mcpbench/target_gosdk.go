package main

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// goSDKVersion is the go-sdk version pinned in bench/go.mod.
const goSDKVersion = "v1.8.0"

// newGoSDKHandler builds the official go-sdk server with test_simple_text,
// served by its streamable HTTP handler in stateless mode with plain JSON
// (not SSE) responses: the go-sdk configuration closest to an inline
// request/response server.
func newGoSDKHandler() (http.Handler, error) {
	server := newGoSDKServer()
	handler := mcp.NewStreamableHTTPHandler(
		func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true},
	)
	return mountAt(endpointPath, handler), nil
}

// newGoSDKServer builds the go-sdk server with test_simple_text that every
// go-sdk target serves.
func newGoSDKServer() *mcp.Server {
	server := mcp.NewServer(&mcp.Implementation{Name: "mcpbench-gosdk", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{
		Name:        toolName,
		Description: "Tests simple text content response",
	}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: expectedText}},
		}, nil, nil
	})
	return server
}

// goSDKRequest returns the request replayed against the gosdk target.
//
// go-sdk v1.8.0 implements protocol version 2026-07-28 on stateless
// streamable HTTP servers: it requires the MCP-Protocol-Version header to
// match params._meta["io.modelcontextprotocol/protocolVersion"] and checks
// Mcp-Method / Mcp-Name against the body. So it gets exactly the same
// request as the other targets.
func goSDKRequest() request {
	return toolsCallRequest()
}

// legacyProtocolVersion is the protocol version of the gosdk-legacy request.
const legacyProtocolVersion = "2025-11-25"

// goSDKLegacyRequest returns the request replayed against the gosdk-legacy
// target: the tools/call a 2025-11-25 client sends to a stateless server,
// without the per-request _meta and the Mcp-Method / Mcp-Name headers of
// 2026-07-28. go-sdk v1.8.0 serves it on a cheaper code path than the
// 2026-07-28 request (no _meta and standard-header validation), so this
// target shows go-sdk at its fastest for the same tool call.
func goSDKLegacyRequest() request {
	return request{
		Method: "POST",
		Path:   endpointPath,
		Headers: []header{
			{"Content-Type", "application/json"},
			{"Accept", "application/json, text/event-stream"},
			{"MCP-Protocol-Version", legacyProtocolVersion},
		},
		Body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + toolName + `","arguments":{}}}`,
	}
}
