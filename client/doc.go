// Package client is an MCP client for Streamable HTTP with durable Tasks.
//
// It speaks revision 2026-07-28 (stateless: every request carries its _meta
// and the MCP-Protocol-Version, Mcp-Method, Mcp-Name and Mcp-Param-*
// headers) and falls back to a 2025-era session (initialize,
// Mcp-Session-Id, DELETE on Close) when the server speaks only 2025-11-25
// or 2025-06-18. Connect negotiates; every method connects on first use.
// When the server answers HTTP 404 for the session (it expired, was
// deleted, or the server restarted), the client opens a new session and
// sends the request once more, as the 2025 transport requires.
// Options.ResumeSession takes up a session another client opened (its
// Client.Session), without initialize, and Options.KeepSession leaves a
// session open on Close, for servers that bind tasks to their session.
//
// Calls return inline or as a task:
//
//	res, err := c.Call(ctx, "build", map[string]any{"ref": "main"})
//	if res.Task != nil {
//		saved := res.Task.ID()        // keep it; c.Task(saved) rebuilds the handle later
//		out, err := res.Task.Wait(ctx) // listen first, poll at pollIntervalMs otherwise
//	}
//
// The server's requests for input (2026 input_required rounds of a request
// or a task, 2025 elicitation/sampling/roots requests on a stream) are
// answered by [Options.Handlers]; without a handler the call fails with an
// *[InputRequiredError] naming the pending keys, which [Task.Answer] can answer.
//
// Errors are typed for callers that map them (a command line to exit
// codes): *RPCError (JSON-RPC errors, with code, message and data),
// *AuthError (HTTP 401/403, with the WWW-Authenticate challenge),
// *ConnectionError (unreachable server, broken stream), *ProtocolError
// (malformed or oversized answers; ErrResponseTooLarge), *TaskFailedError,
// *TaskCancelledError, ErrTaskNotFound and *InputRequiredError. A tool
// result with isError true is a result, not an error.
//
// Everything is bounded: response bodies and SSE events by size, streams
// by event count, requests by [Options.RequestTimeout] unless the context
// ends sooner, input rounds and pages by count. Close cancels what is in
// flight and leaves no goroutine of the client behind.
package client
