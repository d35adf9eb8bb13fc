package server

import "time"

// DefaultInlineTaskWait is the default of Options.InlineTaskWait.
const DefaultInlineTaskWait = 10 * time.Minute

// WithWaitInline lets a task-required tool serve 2025-era clients that do
// not use tasks (2025-06-18 sessions, and 2025-11-25 clients that did not
// declare the tasks capability). Such a client sees the tool as an ordinary
// one; its tools/call creates the task exactly as a task-aware call does
// (same handler, manager, origin and workers) and then waits for the task to
// end, streaming server-sent events on the POST: keep-alives, progress when
// the client sent a progressToken, and the task's input requests as real
// elicitation/sampling/roots requests. The wait is bounded by
// Options.InlineTaskWait; a client that disconnects, or a wait that times
// out, leaves the task running, and a retry that the handler maps to the same
// task (an idempotency key) waits for it again.
//
// Without this option, such clients do not see a task-required tool in
// tools/list, and calling it anyway fails with an error that names the
// reason. The option applies only to task-required tools (AddTaskTool); New
// fails for any other tool.
func WithWaitInline() ToolOption {
	return func(t *toolEntry) { t.waitInline = true }
}
