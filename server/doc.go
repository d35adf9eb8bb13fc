// Package server serves MCP protocol revision 2026-07-28 over stateless
// Streamable HTTP.
//
// A Server hosts one or more endpoints. Each Endpoint has its own path, name,
// version, instructions, protocol versions, tools, resources and prompts.
// Register typed tools with AddTool, whose input and output JSON Schemas are
// inferred from Go types, then build the server with New and serve it with
// net/http:
//
//	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "demo", Version: "1.0.0"})
//	server.AddTool(ep, &mcp.Tool{Name: "greet", Description: "Say hello"},
//		func(ctx context.Context, req *server.Request, in GreetInput) (*mcp.CallToolResult, GreetOutput, error) {
//			return nil, GreetOutput{Greeting: "Hello, " + in.Name}, nil
//		})
//	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
//	if err != nil { ... }
//	http.ListenAndServe("127.0.0.1:8080", srv)
//
// # Pipeline
//
// Every POST passes the same ordered pipeline; the first failure wins and
// decides the HTTP status and JSON-RPC error (see docs/architecture.md):
// transport limits and routing, Host and Origin checks, media types, strict
// JSON and envelope parsing, mirrored headers, protocol version and required
// _meta, admission, lookup and required client capabilities, rate limits, the
// bounded handler pool, the interceptor, input validation, the handler under
// a deadline, then the result path (sanitizer, output-schema validation, size
// and depth limits).
//
// Every admitted request produces exactly one Observer start and one finish.
// Nothing request-derived (arguments, principals, task IDs) is ever logged or
// used as a metric label.
package server
