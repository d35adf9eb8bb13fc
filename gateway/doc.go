// Package gateway serves the tools of an existing MCP server (the
// upstream) from a taskwire node: the slow ones as durable task tools,
// the others inline, so that a host with a short request timeout gets
// tasks that survive its timeouts, disconnects and the gateway's
// restarts, for a server that implements no tasks at all.
//
//	g, err := gateway.New(ctx, gateway.Options{
//		Upstream:   "http://127.0.0.1:9000/mcp",
//		TaskTools:  []string{"slow.*"},
//		RetryTools: []string{"slow.build"},
//	})
//	if err != nil { ... }
//	defer g.Close() // after the node has stopped
//	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "gateway", Version: "1.0.0"})
//	var tools durable.Set
//	if err := g.Register(ep, &tools); err != nil { ... }
//	// then node.Config{Endpoint: ep, Tools: &tools, ...}, as for native tools
//
// A Go program may register its own inline and durable tools on the same
// endpoint and set; the command `taskwire gateway` is this package behind
// the flags of `taskwire serve`, and `taskwire gateway worker` behind
// those of `taskwire worker`.
//
// # The upstream
//
// Options.Upstream is a Streamable HTTP URL: New connects with the
// project's client (package client), negotiating 2026-07-28 or a
// 2025-era session as it does, declaring neither tasks nor any client
// capability. Options.UpstreamCommand is instead a program that New
// starts and speaks to over its standard input and output: in 2026-07-28
// when it answers server/discover as such a server (the HTTP clients'
// requests then go to the process, each as one request of its, with the
// same tasks, input rounds and listen as over HTTP), else in a 2025-11-25
// or 2025-06-18 session, on a process started afresh: every process that builds a Gateway runs its
// own, so an API node and each worker of a fleet have one. When it exits,
// the calls in flight fail as connection failures (a retry tool's task
// runs again, another's fails), and a supervising goroutine starts it
// again after a jittered backoff (100 ms doubling to 30 s, counted afresh
// after a minute of health); a call made meanwhile waits for it within
// its deadline and 10 s. Close stops it (its standard input closed, then
// a kill after 3 s) and joins every goroutine. Its standard error is kept
// in memory, never logged: it may hold arguments.
//
// # The mirror
//
// New lists the upstream's tools. Each tool is
// served under its upstream name with its title, description, input and
// output schemas, annotations and icons; its _meta and execution members
// are not copied. A tool the gateway cannot serve (a name or schema
// server.CheckTool refuses, or one larger than Options.MaxToolBytes) is
// left out and logged by name.
//
// The mirror follows the upstream, over HTTP and stdio alike. The
// upstream's notifications/tools/list_changed (over HTTP through
// client.Options.OnListChanged, which also reports a reopened stream
// after an upstream restart) wakes a refresher that New starts and Close
// ends; a restarted UpstreamCommand process is refreshed by its
// supervisor before calls reach it. Both take the same path: the
// upstream's tools are listed again, within Options.ListTimeout, what
// changed is logged by name, and once the endpoint Register was given is
// served the difference is applied in one server.Endpoint.UpdateTools
// batch: new inline tools are added, changed ones replaced, tools no
// longer listed removed (they answer as unknown tools), and changed task
// tools redefined, so that new calls validate against the new input
// schema. A task tool that was not there when Register ran is added to
// the durable set Register was given (durable.Set.AddRawLive), in every
// process that builds a Gateway, API node or worker: the endpoint serves
// it as a task tool, and the runtimes working the set claim its jobs (of
// its name's kind, as every task tool's) from their next claim. A process
// that has not heard of the tool does not claim its jobs, which wait in
// the store for one that has; a worker whose latest listing lacks a tool
// lists the upstream again before it fails a task of it. An upstream tool
// whose name the endpoint serves for someone else is left out. A call of a tool the latest listing lacks that
// still reaches the gateway (a task created before, a call racing the
// change, a worker's run) answers an error saying the upstream no longer
// offers it: an isError result inline, a failed task. A failed refresh is
// retried with backoff (1 s to 30 s). Gateway.Tools still returns the
// tools listed by New. An endpoint that may start with no tool at all
// needs server.EndpointOptions.DynamicTools (`taskwire gateway` sets it).
//
// # Resources, prompts and completion
//
// Register makes the upstream serve, on the endpoint, what it advertised
// when New connected: resources, resource templates and resources/read
// (server.Endpoint.SetResourceSource), prompts (SetPromptSource) and
// completion/complete (SetCompletionHandler). Each request is forwarded,
// over HTTP or the stdio process's connection, within Options.CallTimeout
// and an Options.MaxInFlight slot, with cursors passed through; an
// upstream JSON-RPC error -32602 stays -32602 and any other is -32603
// naming the upstream's code, as for inline tools, except that an unknown
// resource (-32602 or the 2025 -32002) answers exactly as an unknown
// local one; a timeout or another failure is -32603 naming its category.
// The upstream's prompts and resources list changes, and a restart of its
// process, are announced to the endpoint's clients.
//
// # Per-tool settings
//
// Options.Tools are settings by tool name pattern, the first matching
// entry applying: whether the tool is a task tool or a retry tool (as
// TaskTools and RetryTools say, which an entry may extend but not
// contradict: New refuses that, naming both), its upstream call's
// deadline, and a retry tool's MaxAttempts. A tool the upstream adds later
// whose entry contradicts a pattern is left out and logged.
//
// # Task tools
//
// A tool matching Options.TaskTools (or made a task tool by its
// Options.Tools entry) is a durable raw tool (durable.AddRaw):
// the API node validates the arguments against the mirrored input schema
// and creates the task and its job in one transaction; a worker calls the
// upstream tool within Options.TaskCallTimeout (or its Tools entry's
// Timeout), and each upstream notifications/progress becomes the task's
// status message and progress (worker.Job.ReportProgress), which 2026-07-28 clients read as
// statusMessage and 2025-era clients waiting inline receive as progress.
// The outcome of a run:
//
//	upstream result (isError or not)  → the task completes with it (checked
//	                                    against the output schema)
//	upstream input request            → retry tool: the task's input round
//	  (elicitation, sampling)           (see Input); other tools: the task
//	                                    completes with an isError result
//	                                    saying why
//	credentials refused (HTTP 401/403) → the task fails, saying so
//	retry tool (Options.RetryTools):
//	  connection failure, HTTP error  → retried (worker.Unavailable)
//	  JSON-RPC error, timeout, other  → retried, within MaxAttempts
//	  interrupted (crash, lost lease) → run again: a second upstream call
//	other task tool:
//	  JSON-RPC error                  → the task fails with it (see below)
//	  any other failure               → the task fails with a text naming
//	                                    its category, not repeated
//	  interrupted (InterruptedRuns>0) → the task fails saying the call was
//	                                    interrupted and is not repeated
//	  stopped by a shutdown mid-call  → the task completes with an isError
//	                                    result saying so (an error would
//	                                    release the job to run again)
//
// A client's cancellation cancels the upstream call's context and the task.
//
// # Input
//
// An upstream tool may ask for input while it runs: a 2026-07-28 upstream
// answers with an input_required round, a 2025-era one sends
// elicitation/create or sampling/createMessage on the call's stream (or on
// its standard output), and an upstream task goes input_required. The
// gateway declares elicitation (form and URL) and sampling upstream, and each
// request becomes an input round of the downstream task (worker.Job.Ask,
// under a key derived from the request, and from the upstream task when
// there is one): the task is input_required with the upstream's request,
// which the task's client answers as for any durable tool. Then:
//
//   - an inline call of a retry tool is made again, and the same request,
//     asked again by the upstream, is answered with the client's answer
//     (only retry tools, since that is a second call; for other tools the
//     request is refused and the task says why);
//   - an upstream task is answered (tasks/update under 2026-07-28, on the
//     stream of tasks/result under 2025-11-25) by the run that follows it
//     next, for every task tool: no call is repeated.
//
// A call passed through inline gets an input round of its own from a
// 2026-07-28 upstream: the gateway answers its client with input_required
// (a 2025-era client gets the request on its session's stream, as from any
// taskwire tool), and when the client calls again with the answer, the
// upstream, called again as its own input rounds expect, asks the same
// request and is given it. A 2025-era upstream (HTTP or stdio) waits for
// the answer on the call itself, which cannot be made again: the gateway
// keeps that upstream call open (held) and answers its client with
// input_required, whose requestState names the held call (an unguessable
// ID, sealed by the server to the principal, tool and arguments). A
// 2025-era client gets the request on its session's stream; a 2026-07-28
// client calls again with the answer, which must reach the gateway process
// that holds the call (any other answers -32602 saying so). The answer
// goes back upstream on the open request and the call goes on, its
// progress forwarded to the request now waiting. A request the client
// declared no capability for is answered upstream with -32601 and never
// reaches the client. Options.MaxHeldCalls calls are held at once (a
// request beyond is answered upstream with an error), each for
// Options.HoldTimeout (then its upstream request is answered with an error
// and the call cancelled a second later), at most 10 requests per call;
// each stretch the call runs with a client attached has the tool's
// timeout.
//
// A request the upstream asks again with other parameters (a timestamp in
// its message, say) is another round, within the runtime's bound on
// rounds. stdio does not tie a server's request to the call it serves: a
// stdio upstream's request that names an upstream task (the 2025-11-25
// related-task _meta key) is relayed by the run that follows that task,
// whatever else is in flight on the process; one that names none is
// relayed when a single tools/call is in flight, and otherwise refused
// with a JSON-RPC error -32603 to the process saying the gateway cannot
// tell which call it serves (no client is asked; the log line names the
// method and how many calls were in flight). A task run whose call then
// fails completes with an isError result saying so. Options.SerialCalls
// keeps one tools/call in flight on the process (the others wait for it
// within their deadlines), so that every such request is relayed.
//
// # Upstream tasks
//
// When the upstream offers tasks itself, a task tool's run has the
// upstream run the call as a task of its own instead of waiting on an
// inline call. For an HTTP upstream the gateway keeps a second client
// that declares tasks (the pass-through one declares none): under
// 2026-07-28 it declares the Tasks extension and the upstream decides;
// in a 2025-11-25 session it asks for a task (params.task) for a tool
// whose execution.taskSupport is "optional" or "required". A stdio
// upstream has one session per process, which declares the 2025-11-25
// tasks capability when there are task tools: a task tool's run asks for
// a task where the process negotiated 2025-11-25, advertises
// tasks.requests.tools.call and lists the tool with such a taskSupport,
// and a call passed through inline of a tool that says "required" makes
// the task and waits for its result (tasks/result) as an inline call
// would. An upstream that answers inline gives the run its result as
// before. For an upstream
// task the run saves the task's ID as the job's checkpoint
// (worker.Job.Checkpoint) before it waits on it, then polls tasks/get at
// the upstream's pollIntervalMs (clamped to 100 ms–30 s, 1 s without a
// suggestion; each request within 30 s, the whole follow within
// Options.TaskCallTimeout), reporting its statusMessage as the task's
// status message. A run that finds such a checkpoint (after a crash, a
// lost lease, a shutdown, a failed poll) follows the same upstream task:
// no call is repeated, for retry tools and the others alike. The
// outcomes:
//
//	upstream task completed          → the task completes with its result
//	                                    (isError or not)
//	upstream task failed             → retry tool: called again (a new
//	                                    upstream task); other: the task fails
//	                                    with its error, as a JSON-RPC error
//	upstream task cancelled upstream → the task fails, saying so
//	unknown to the upstream          → the task fails saying the upstream no
//	  (expired, lost, other session)    longer knows it; never called again
//	polling fails (connection, HTTP) → retried: the next run follows the
//	                                    same upstream task
//	not finished within              → the upstream task is cancelled; retry
//	  TaskCallTimeout                   tool: called again; other: fails
//	upstream task asks for input     → the task's input round, for every
//	                                    task tool (see Input)
//	downstream task cancelled        → tasks/cancel upstream (best effort,
//	                                    within 5 s)
//
// A crash after the upstream created its task and before the checkpoint
// was saved leaves nothing to follow: the inline rules apply (a retry tool
// is called again, another fails as interrupted). Servers bind 2025-11-25
// tasks to the session that created them (mcp-go does), so for such a
// task the checkpoint also holds the session's ID and revision (the ID,
// like the task's, is a capability and never logged), and the task
// client keeps its session open on Close (no DELETE) while a task it
// created there is unsettled: a run that followed the task to an outcome
// no later run revisits (its result read; failed, cancelled, unknown or
// timed out upstream) settles it, one that ended otherwise (a shutdown, a
// lost lease, input pending, polling failed) does not. With none left,
// Close ends the session with DELETE (client.Client.EndSession). The
// pass-through client always ends its own. A run that finds a task of a
// session other than the task client's current one (a gateway restarted
// after a crash or a shutdown, a new Gateway on the same store) follows
// it through a client that resumes that session without initialize
// (client.Options.ResumeSession). An earlier process created the tasks
// of such a session, and runs of other processes may follow some, so it
// is ended with DELETE only when the upstream's tasks/list in it
// (client.Client.ListLegacyTasks) shows no task not known settled:
// settled here, or named settled by the creating process in the resumed
// task's checkpoint (the last 32 settled before it was created). The
// check runs when the last run using the session releases it after a
// task of it settled, and on Close (within 10 s); a failed or refused
// tasks/list keeps the session. Options.MaxResumedSessions bounds the
// resumed clients held (in use or idle); Close closes them. A session the
// upstream itself forgot (it restarted, or expired the session) answers
// HTTP 404: the client opens a new session, in which the task is unknown,
// and the run fails saying so rather than calling again. 2026-07-28 tasks
// are bound to the gateway's identity (Options.UpstreamHeaders) and resume
// from any process. A stdio upstream's session is implicit: its
// checkpoint holds the task's ID alone, and a run after the process was
// restarted (it died, or the gateway restarted) asks the process that
// runs then. One with a durable task store (a taskwire node over stdio)
// knows the task, and the run follows it with no second call; one that
// answers it does not know the task (-32602: mcp-go keeps its tasks in
// memory) fails the run as an unknown task, never called again. A failed
// poll while the process restarts is a failed poll as above.
//
// # Inline tools
//
// Every other tool is an inline tool that forwards the call within
// Options.CallTimeout (or its Tools entry's Timeout) and the upstream's
// progress notifications to the downstream caller when it asked for
// progress. An upstream JSON-RPC error
// -32602 is passed on as -32602 with the upstream's message; any other as
// -32603 naming the upstream's code and message (clipped to 512 bytes).
// A timeout, a connection failure or another failure is an isError result
// naming its category.
//
// # Bounds and secrets
//
// At most Options.MaxInFlight upstream calls run at once in a process
// (pass-through and task runs together); a call beyond them waits for a
// slot within its own deadline. The upstream may list at most
// Options.MaxTools tools; the client bounds every response by size.
// The downstream caller's credentials are never forwarded: the upstream
// sees Options.UpstreamHeaders only. Log lines carry the tool name and the
// category of a failure, never arguments, results, upstream messages or
// tokens.
//
// # Resource subscriptions
//
// When the upstream advertises resources.subscribe, a downstream 2025-era
// session's resources/subscribe and a 2026-07-28 listen's
// resourceSubscriptions subscribe the URI at the upstream once per
// gateway process (resources/subscribe in its 2025 session or over stdio,
// or the resourceSubscriptions of the one listen the gateway keeps toward
// a 2026-07-28 upstream), counting the downstream subscribers: the last
// one to unsubscribe, or whose session or listen ends, unsubscribes it
// upstream. The upstream's notifications/resources/updated reach the
// subscribers of the URI. After the upstream's session or process is new
// (a renewed session, a reopened listen, a restarted process) every URI
// is subscribed again and its subscribers are told it may have changed.
// Options.MaxSubscriptions bounds the distinct URIs (-32602 beyond it);
// each URI is at most 2,048 bytes. URIs are never logged.
//
// # Not yet
//
// A worker whose upstream lists no task tool at start-up (it has no
// handler to run with, and refuses to start); resource subscriptions of
// an upstream that does not advertise resources.subscribe (accepted and
// node-local: no update follows); ending a resumed session some of whose
// tasks another process settled, before the upstream forgets them.
package gateway
