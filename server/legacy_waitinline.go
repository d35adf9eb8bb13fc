package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// DefaultInlineTaskWait is the default of Options.InlineTaskWait.
const DefaultInlineTaskWait = 10 * time.Minute

// WithWaitInline lets a task-required tool serve 2025-era clients that do
// not use tasks (2025-06-18 sessions, and 2025-11-25 clients that did not
// declare the tasks capability). Such a client sees the tool as an ordinary
// one; its tools/call creates the task exactly as a task-aware call does
// (same handler, manager, origin and workers) and then waits for the task to
// end, streaming server-sent events on the POST: keep-alives, progress when
// the client sent a progressToken, and the task's input requests as real
// elicitation/sampling/roots requests, sent as the worker stored them,
// without the related-task _meta key of a task the client never saw. The
// wait is bounded by Options.InlineTaskWait; a client that disconnects, or
// a wait that times out, leaves the task running, and a retry that the
// handler maps to the same task (an idempotency key) waits for it again.
//
// Without this option, such clients do not see a task-required tool in
// tools/list, and calling it anyway fails with an error that names the
// reason. The option applies only to task-required tools (AddTaskTool); New
// fails for any other tool.
func WithWaitInline() ToolOption {
	return func(t *toolEntry) { t.waitInline = true }
}

// inlineTaskWait is Options.InlineTaskWait with its default.
func (s *Server) inlineTaskWait() time.Duration {
	if d := s.opts.InlineTaskWait; d > 0 {
		return d
	}
	return DefaultInlineTaskWait
}

// waitInline runs tools/call of a task-required tool that waits inline, for
// a legacy client without tasks: the task is created exactly as a
// task-aware call creates it, then the POST streams server-sent events
// until the task ends: keep-alives, notifications/progress when the client
// sent a progressToken (one per change of the task's status or status
// message), and the task's input requests as real server-to-client
// requests. The answer is what the tool call would have returned: the
// task's result, or the JSON-RPC error of a failed task.
//
// The wait ends, leaving the task running, when the client leaves or
// cancels the request, when the server closes, or after
// Options.InlineTaskWait; a client still connected then gets a tool error
// saying so, and a retry that reaches the same task (an
// idempotency key) waits again.
func (ep *Endpoint) waitInline(ctx context.Context, lc *legacyCall) (any, Outcome, *protocolError) {
	c := lc.c
	c.withTaskCreation()
	res, outcome, perr := ep.callTool(ctx, c)
	created, ok := res.(*mcp.CreateTaskResult)
	if perr != nil || !ok {
		return res, outcome, perr // an input round before the task, a tool error, or an error
	}
	id := created.TaskID
	wctx, stop, perr := c.waitContext()
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	defer stop()
	if err := c.stream.beginSSE(); err != nil {
		return nil, OutcomeCanceled, errStreamGone
	}
	c.pollInline()
	progress := newInlineProgress(c)
	progress.report(created.Status, created.StatusMessage, nil)
	maxWait := c.srv.inlineTaskWait()
	// The client never saw the task: its input requests go without the
	// related-task _meta key.
	t, err := c.awaitTerminal(wctx, id, maxWait, lc.asker(), false, func(t task.Task) {
		progress.report(t.Status(), t.StatusMessage(), t.Params().Progress)
	})
	if err != nil {
		if errors.Is(err, errWaitEnded) && c.r.Context().Err() == nil {
			return stillRunning(maxWait), OutcomeToolError, nil
		}
		return c.waitFailure(err)
	}
	dctx, cancel := context.WithTimeout(wctx, c.srv.opts.RequestTimeout)
	defer cancel()
	out, perr := c.terminalOutcome(dctx, t, nil)
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	return out, outcomeOfResult(out), nil
}

// stillRunning is the tool result of an inline wait that ran out.
func stillRunning(waited time.Duration) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(
		"The task is still running after %s and goes on without this call. Call the tool again with the same "+
			"arguments (and the same idempotencyKey, if the tool takes one) to wait for it again.", waited)}}}
}

// inlineProgress sends notifications/progress for an inline wait whose
// request carried a progress token: one per change of the task's status,
// status message or progress count, with a progress number that only
// grows. Until a worker reports numbers (task.Progress), the number counts
// the notifications; from then on it is the worker's count, with its total
// when known, and a change whose count does not exceed the last number sent
// is not sent (the protocol requires the number to increase). A worker's
// first count that does not exceed the numbers sent before it is shifted
// above them, with every later count and total (offset).
type inlineProgress struct {
	c       *call
	token   json.RawMessage
	n       float64
	offset  float64 // added to the worker's counts and totals
	numbers bool    // a worker's count was sent
	last    string
}

func newInlineProgress(c *call) *inlineProgress {
	p := &inlineProgress{c: c}
	if m := c.params.Meta; m != nil {
		p.token = m.ProgressToken
	}
	return p
}

func (p *inlineProgress) report(status mcp.TaskStatus, message string, count *task.Progress) {
	if p.token == nil {
		return
	}
	if message == "" {
		message = "Task " + strings.ReplaceAll(string(status), "_", " ")
	}
	key := message
	if count != nil {
		key = fmt.Sprintf("%s\x00%g\x00%g", message, count.Current, count.Total)
	}
	if key == p.last {
		return
	}
	params := mcp.ProgressParams{ProgressToken: p.token, Message: message}
	switch {
	case count != nil && !p.numbers && count.Current <= p.n:
		// The worker's first count does not exceed the numbers of the
		// notifications sent before it ("Task working" is 1, and so is
		// many a worker's first step): its counts, and its total, are
		// shifted above them, so that every step reaches the client.
		p.offset = p.n - count.Current + 1
		fallthrough
	case count != nil && count.Current+p.offset > p.n:
		p.numbers = true
		params.Progress = count.Current + p.offset
		if count.Total > 0 {
			total := count.Total + p.offset
			params.Total = &total
		}
	case p.numbers || count != nil:
		return // the number would not grow; a later report's will
	default:
		params.Progress = p.n + 1
	}
	p.last, p.n = key, params.Progress
	b, err := json.Marshal(params)
	if err == nil {
		p.c.stream.notify(mcp.NotificationProgress, b)
	}
}

// beginSSE switches the response to SSE, if it is not already, with a
// first keep-alive comment, so that keep-alives flow while the request
// waits.
func (st *responseStream) beginSSE() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished {
		return errStreamClosed
	}
	if !st.sse {
		st.startSSELocked()
	}
	return st.writeLocked(sseKeepAlive)
}
