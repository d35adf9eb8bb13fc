// Package server serves MCP endpoints: revision 2026-07-28 over stateless
// Streamable HTTP, the 2025 revisions (2025-06-18 and 2025-11-25) with
// their sessions on the same URLs, task notifications over
// subscriptions/listen, and both eras over stdio.
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
// Registrations end at New, but the catalog may change while it is
// served: [Endpoint.UpdateTools] adds, replaces, redefines and removes
// tools in batches ([PutRawTool], [RedefineTool], [RemoveTool]) on an
// immutable snapshot behind an atomic pointer, and a [ResourceSource] or
// [PromptSource] serves resources or prompts asked for at each request
// (catalog*.go). Changes are announced with [Endpoint.NotifyListChanged]
// to 2025 sessions and to listens that asked for list changes.
//
// # Families
//
// The package is one package, because the 2025 era and the transports use
// the core's internals throughout, but its files fall into four families,
// each behind a file name prefix:
//
//   - The core, files without a prefix: revision 2026-07-28 and everything
//     the other families share, the request pipeline below, admission,
//     limits, the handler pool, tools, resources, prompts and durable tasks.
//     Entry points: [New], [Options], [NewEndpoint], [AddTool],
//     [AddTaskTool], [Server.ServeHTTP] and [Server.Close]. The core has no
//     prefix because it is the package: a prefix marks what is layered on
//     top of it.
//   - The 2025 era, legacy_*.go: sessions (their records in a session
//     store, their node-local streams and calls), server-to-client
//     requests, resumable streams, the 2025-11-25 tasks and waiting inline,
//     served on the same endpoints when [EndpointOptions].ProtocolVersions
//     names a 2025 revision (the default). Entry points: [SessionOptions],
//     [ResumeOptions], [WithWaitInline], [Request.CloseSSEStream],
//     [Server.NotifyResourceUpdated] and [Server.NotifyListChanged];
//     docs/eras.md says what each era gets.
//   - Listen and fan-out, listen_*.go: subscriptions/listen streams of task
//     notifications and of list changes, their renewal and the fan-out of
//     task hints to them.
//     Entry points: [Options].Subscriptions ([SubscriptionOptions]) and
//     [AllowSubscriptions].
//   - Stdio, stdio_*.go: newline-delimited JSON-RPC on a byte stream for
//     the same endpoints; the 2025 era's part of it is legacy_stdio.go.
//     Entry point: [Server.ServeStdio] with [StdioOptions].
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
// and depth limits). A 2025-era request leaves the HTTP pipeline at the era
// classifier, after the JSON checks, and rejoins it for the admitted half;
// stdio runs its own framing and joins at the same point.
//
// Every admitted request produces exactly one Observer start and one finish.
// Nothing request-derived (arguments, principals, task IDs) is ever logged or
// used as a metric label.
//
// [Server.Close] cancels every goroutine the server started, those running
// application callbacks included, and returns once they have ended; when a
// callback ignores its canceled context past [CloseGrace], Close returns an
// error wrapping [ErrStillRunning] instead of hanging.
package server
