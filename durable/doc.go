// Package durable registers durable tools once: a tool whose every call
// creates a task that a worker runs from a durable store, declared by one
// value that an application's API nodes and workers share.
//
// Without it a durable tool is two registrations that nothing compares:
// [server.AddTaskTool] on the API node, whose handler enqueues a job, and
// [worker.AddHandler] on the worker. A misspelt name leaves every task of the
// tool working forever, and a handler returning the wrong type compiles and
// fails at run time. With durable the tool is one Add:
//
//	var tools durable.Set
//	durable.Add(&tools, durable.Tool[ReportInput, Report]{
//		Tool:        &mcp.Tool{Name: "reports.generate", Description: "..."},
//		Run:         generateReport,
//		TaskOptions: durable.TaskOptions{IdempotencyKey: "idempotencyKey"},
//	})
//
// and the API node calls tools.Serve(endpoint, store) ([Set.Serve]), the
// worker tools.Work(runtime) ([Set.Work]); a single process calls both.
// [TaskOptions], which [Tool], [ToolDecl] and [RawTool] embed, configure
// each call's task and job.
//
// # Contract
//
// Add infers the tool's input and output schemas from In and Out once,
// exactly as [server.AddTaskTool] does ([server.InferToolSchemas]). Serve
// registers each tool as task-required, waiting inline for 2025-era
// clients without tasks ([server.WithWaitInline]) unless the tool sets
// [TaskOptions.RequireTasks], which hides it from them: a call's arguments are checked
// against the input schema by the server, decoded into In, checked by
// Validate, and then the task and its job are created in one transaction
// ([backend.Enqueuer]), with the idempotency key read from the declared field.
// Work registers each handler with [worker.AddHandler], running Validate again
// before Run, so that a task created by an API node that validated less
// (an older release) is still refused; the handler's error decides the
// run's outcome as [worker.AddHandler] documents.
//
// [Set.Check], which Serve and Work run first, reports every problem of the set
// in one error with one line per problem, each naming its tool: invalid
// names and schemas, an IdempotencyKey that names no string field,
// negative job options, duplicates, a handler without a declaration, a
// declaration without a handler, and In or Out types that differ between a
// declaration and its handler. Serve does not require handlers: an API
// node of a split deployment (Declare on both sides, Implement on the
// workers only) serves tools whose code it does not link.
//
// # Failure modes of a call
//
//   - Validate fails on the API node: a tool error result with its text; no
//     task is created.
//   - The idempotency key was used with other arguments
//     ([backend.ErrIdempotencyConflict]), or text cannot be stored
//     ([backend.ErrInvalidText]): a tool error result with a fixed text that
//     names the key field.
//   - Any other Enqueue error: the server logs it, scrubbed of the call's
//     arguments, and answers -32603 "Internal error".
//   - Validate fails on the worker: the task completes with a tool error
//     result with its text; Run is not called.
//
// A Set is built from one goroutine before Serve and Work, which only read
// it.
package durable
