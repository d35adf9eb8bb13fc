package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/worker"
)

// Texts the downstream client reads. They name what happened, never the
// arguments or the upstream's address.
const (
	textInterrupted = "The upstream call was interrupted (the gateway stopped or lost the job mid-call) " +
		"and is not repeated, since the tool is not marked safe to retry."
	textShutdown = "The upstream call was interrupted by a gateway shutdown and is not repeated, " +
		"since the tool is not marked safe to retry."
	textInput      = "The upstream tool asked for input, which the gateway could not relay for this call."
	textInputOther = "The upstream tool asked for input the gateway cannot relay."
)

// maxUpstreamMessage bounds the upstream's error message passed on to the
// downstream client.
const maxUpstreamMessage = 512

// category names the kind of an upstream failure, for logs and for the
// texts clients read.
type category string

const (
	catRPC        category = "json-rpc error"
	catConnection category = "connection failure"
	catTimeout    category = "timeout"
	catProtocol   category = "protocol violation"
	catAuth       category = "credentials refused"
	catHTTP       category = "unexpected HTTP status"
	catInput      category = "input request"
	catClosed     category = "gateway closed"
	catGone       category = "tool no longer offered"
	catOther      category = "failure"
)

// classify names the category of an error of client.Call made with a
// context whose deadline was the call's own.
func classify(ctx context.Context, err error) category {
	var (
		rpc   *client.RPCError
		conn  *client.ConnectionError
		proto *client.ProtocolError
		auth  *client.AuthError
		httpE *client.HTTPError
		input *client.InputRequiredError
	)
	switch {
	case errors.Is(err, errToolGone):
		return catGone
	case errors.As(err, &input), errors.Is(err, errNotRelayed):
		return catInput
	case errors.As(err, &rpc):
		return catRPC
	case errors.As(err, &auth):
		return catAuth
	case errors.Is(err, client.ErrClosed):
		return catClosed
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return catTimeout
	case errors.As(err, &conn):
		return catConnection
	case errors.As(err, &httpE):
		return catHTTP
	case errors.As(err, &proto):
		return catProtocol
	}
	return catOther
}

// acquire takes an in-flight slot toward the upstream, waiting within ctx.
func (g *Gateway) acquire(ctx context.Context) (release func(), err error) {
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// call makes one upstream tools/call of name with the raw arguments within
// timeout, passing each progress notification to progress.
func (g *Gateway) call(ctx context.Context, timeout time.Duration, name string, args json.RawMessage, progress func(client.Progress)) (context.Context, *mcp.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	// The context stays valid for classify after cancel: ctx.Err() is
	// then context.Canceled unless the deadline came first.
	defer cancel()
	if !g.isOffered(name) {
		return ctx, nil, errToolGone
	}
	release, err := g.acquire(ctx)
	if err != nil {
		return ctx, nil, &client.ConnectionError{Op: "tools/call", Err: err}
	}
	defer release()
	if len(args) == 0 {
		args = json.RawMessage(`{}`)
	}
	res, err := g.upstream.callTool(ctx, name, args, progress)
	return ctx, res, err
}

// passThrough is the handler of an inline tool: it forwards the call
// within Options.CallTimeout and its progress notifications to the
// downstream client.
func (g *Gateway) passThrough(name string) server.ToolHandler {
	return func(ctx context.Context, req *server.Request) (*mcp.CallToolResult, error) {
		progress := func(p client.Progress) {
			total := 0.0
			if p.Total != nil {
				total = *p.Total
			}
			// A client that asked for no progress gets none: the error
			// says so and is no failure of the call.
			_ = req.ReportProgress(ctx, p.Progress, total, progressText(p.Message))
		}
		timeout := g.planOf(name).timeout
		modern := g.upstream.protocolVersion() == mcp.LatestProtocolVersion
		if !modern && canAnswerInput(req.Capabilities()) {
			// A 2025-era upstream asks for input on the open call: the
			// call is held while the client answers (held.go).
			return g.passThroughHeld(ctx, req, name, timeout, progress)
		}
		// A 2026-07-28 upstream's input is this call's own round; a
		// 2025-era one's, for a client that can answer none, is refused
		// with -32601 (relay.go).
		rctx, relayed := withInlineRelay(ctx, req.InputResponses, modern)
		cctx, res, err := g.call(rctx, timeout, name, req.Arguments, progress)
		if asked := relayed.inlineRound(); asked != nil && ctx.Err() == nil {
			// The upstream asked for input: this call's own round
			// (relay.go).
			return nil, server.InputRequired(asked, nil)
		}
		return g.inlineOutcome(ctx, cctx, name, timeout, res, err)
	}
}

// inlineOutcome maps the outcome of the upstream call of a call passed
// through inline, made within cctx (or ended by one of held.go's causes),
// to the downstream result, for the downstream request's ctx.
func (g *Gateway) inlineOutcome(ctx, cctx context.Context, name string, timeout time.Duration, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil { // the downstream request ended first
		return nil, context.Cause(ctx)
	}
	cat := classify(cctx, err)
	switch {
	case errors.Is(err, errRoundTimeout):
		cat = catTimeout
	case errors.Is(err, errHoldExpired):
		cat = catInput
	case errors.Is(err, errHeldGone):
		cat = catClosed
	}
	g.log.Warn("gateway: pass-through call failed", "tool", name, "category", string(cat))
	var rpc *client.RPCError
	switch {
	case errors.Is(err, errHoldExpired):
		return toolErrorResult(fmt.Sprintf("The upstream tool asked for input, which the client did not give within %v.", g.opts.HoldTimeout)), nil
	case errors.As(err, &rpc):
		return nil, upstreamError(rpc)
	case cat == catInput:
		return toolErrorResult(textInput), nil
	case cat == catGone:
		return toolErrorResult(textToolGone), nil
	case cat == catTimeout:
		return toolErrorResult(fmt.Sprintf("The upstream tool did not answer within %v.", timeout)), nil
	}
	return toolErrorResult(fmt.Sprintf("The gateway could not complete the call: %s toward the upstream server.", cat)), nil
}

// runTask is the worker handler of a task tool: one upstream call per run,
// its progress reported to the task, its outcome mapped as the package
// documentation says.
func (g *Gateway) runTask(name string) worker.RawHandler {
	retry := g.isRetry(name)
	return func(ctx context.Context, job *worker.Job) (*mcp.CallToolResult, error) {
		g.cat.confirm(ctx, name) // a tool this process has not heard is back
		// Input the upstream asks for is relayed as the task's input
		// round (relay.go); an upstream that offers tasks runs the call
		// as a task of its own, which a later run follows instead of
		// calling again (uptask.go).
		rctx, relayed := withRelay(ctx, job, retry)
		res, handled, err := g.runUpstreamTask(rctx, job, name, retry)
		if res, err, settled := g.settleRelay(ctx, relayed, name, err); settled {
			return res, err
		}
		if handled {
			return res, err
		}
		if !retry && job.InterruptedRuns() > 0 {
			g.log.Warn("gateway: interrupted call of a tool not safe to retry is not repeated", "tool", name)
			return nil, mcp.NewError(mcp.CodeInternalError, textInterrupted)
		}
		cctx, res, err := g.call(rctx, g.planOf(name).timeout, name, job.Arguments(), jobProgress(job))
		if res, err, settled := g.settleRelay(ctx, relayed, name, err); settled {
			return res, err
		}
		if err == nil {
			return res, nil
		}
		return g.taskCallFailure(ctx, cctx, name, retry, err)
	}
}

// taskCallFailure maps the error of the upstream call of a task run (made
// within cctx, derived from the run's ctx) to the run's outcome, as the
// package documentation says.
func (g *Gateway) taskCallFailure(ctx, cctx context.Context, name string, retry bool, err error) (*mcp.CallToolResult, error) {
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		if !retry && errors.Is(cause, worker.ErrShuttingDown) {
			// An error would release the job to run again: a
			// repeated call. Complete the task instead, saying why.
			g.log.Warn("gateway: shutdown interrupted a call of a tool not safe to retry", "tool", name)
			return toolErrorResult(textShutdown), nil
		}
		// Cancelled by the client (the task is cancelled), a lost
		// lease (nothing is written) or a shutdown of a retry tool
		// (released, run again).
		return nil, cause
	}
	cat := classify(cctx, err)
	g.log.Warn("gateway: upstream call of a task failed", "tool", name, "category", string(cat), "retry", retry)
	var rpc *client.RPCError
	switch {
	case cat == catInput && !retry:
		return nil, worker.ToolError(textNotRelayed)
	case cat == catInput:
		// A kind of input no handler answers (roots).
		return nil, worker.ToolError(textInputOther)
	case cat == catAuth:
		return nil, mcp.NewError(mcp.CodeInternalError, "The upstream server refused the gateway's credentials.")
	case cat == catGone:
		return nil, mcp.NewError(mcp.CodeInternalError, textToolGone)
	case !retry && errors.As(err, &rpc):
		return nil, upstreamError(rpc)
	case !retry:
		return nil, mcp.NewError(mcp.CodeInternalError, fmt.Sprintf(
			"The upstream call failed (%s) and is not repeated, since the tool is not marked safe to retry.", cat))
	case cat == catConnection || cat == catHTTP || cat == catClosed:
		return nil, worker.Unavailable(fmt.Errorf("gateway: upstream %s", cat))
	}
	// Retried after the runtime's backoff, within MaxAttempts. The
	// text names the category only: the runtime logs it.
	return nil, fmt.Errorf("gateway: upstream %s", cat)
}

// jobProgress reports each upstream progress notification to the job as
// its status message and progress.
func jobProgress(job *worker.Job) func(client.Progress) {
	return func(p client.Progress) {
		total := 0.0
		if p.Total != nil {
			total = *p.Total
		}
		msg := progressText(p.Message)
		if validNumber(p.Progress) && validNumber(total) {
			_ = job.ReportProgress(msg, p.Progress, total) // errors only for bad input, checked above
		} else {
			_ = job.ReportStatus(msg)
		}
	}
}

// upstreamError is the error a downstream client gets for the upstream's
// JSON-RPC error: invalid params stay invalid params; anything else is an
// internal error naming the upstream's code. The message is the
// upstream's, clipped, since the upstream meant it for its clients.
func upstreamError(e *client.RPCError) *mcp.Error {
	msg := clipText(e.Message, maxUpstreamMessage)
	if e.Code == mcp.CodeInvalidParams {
		return mcp.NewError(mcp.CodeInvalidParams, msg)
	}
	return mcp.NewError(mcp.CodeInternalError, fmt.Sprintf("The upstream server answered with error %d: %s", e.Code, msg))
}

// toolErrorResult is an isError result with one text block.
func toolErrorResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// progressText makes an upstream progress message a valid status message:
// valid UTF-8 without NUL bytes, at most backend.MaxProgressMessage bytes.
func progressText(s string) string {
	return clipText(strings.ReplaceAll(s, "\x00", ""), backend.MaxProgressMessage)
}

// clipText returns s as valid UTF-8 of at most n bytes, cut at a rune
// boundary.
func clipText(s string, n int) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// validNumber: a progress number the store takes.
func validNumber(f float64) bool { return f >= 0 && !math.IsInf(f, 0) && !math.IsNaN(f) }
