package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// CallResult is the outcome of Call: exactly one of Result (the tool
// answered inline) and Task (the server made the call a task) is set.
type CallResult struct {
	// Result is the tool's result when it answered inline; a result with
	// IsError true is still a result.
	Result *mcp.CallToolResult
	// Task is the handle of the task the server created instead.
	Task *Task
}

// CallOption adjusts one Call.
type CallOption func(*callConfig)

type callConfig struct {
	preferTask bool
	ttl        *int64
	progress   func(Progress)
}

// Progress is a notifications/progress of a request.
type Progress struct {
	// Progress is the server's progress value; it grows with every
	// notification of a request.
	Progress float64
	// Total is the value Progress reaches at the end; nil when the server
	// does not know it.
	Total *float64
	// Message is the server's text, empty when it sent none. It comes
	// from the server unfiltered.
	Message string
}

// PreferTask asks for a task where the protocol lets the client ask: in a
// 2025-11-25 session, for a tool whose execution.taskSupport is "optional"
// (a "required" tool is always called as a task). Under 2026-07-28 the
// server alone decides; the client only declares the Tasks extension (see
// Options.DisableTasks), so PreferTask has no effect there.
func PreferTask() CallOption { return func(c *callConfig) { c.preferTask = true } }

// WithTaskTTL asks a 2025-11-25 server to keep the task for d (the "ttl"
// of the task member). Under 2026-07-28 the server chooses the TTL.
func WithTaskTTL(d time.Duration) CallOption {
	return func(c *callConfig) { ms := d.Milliseconds(); c.ttl = &ms }
}

// WithProgress asks for progress notifications of the call (a progress
// token in _meta) and passes each to fn, on the caller's goroutine.
func WithProgress(fn func(Progress)) CallOption { return func(c *callConfig) { c.progress = fn } }

// Call calls the tool name with args (anything that encodes as a JSON
// object, or nil). The result is inline or a task:
//
//   - a CallToolResult with isError true is a result, not an error;
//   - input_required rounds are answered with the handlers and retried with
//     the echoed requestState, at most Options.MaxInputRounds times; a
//     request no handler can answer fails with *InputRequiredError;
//   - a task result yields CallResult.Task (a result without a task ID is
//     a *ProtocolError).
//
// Mcp-Name and the Mcp-Param-* headers the tool's input schema declares are
// sent with a 2026 call; the tools are listed first when they were not yet.
// A tool missing from the list is still called, without Mcp-Param-*
// headers; a listed tool whose x-mcp-header declarations break the rules
// (and that ListTools therefore leaves out) is refused without a request. Errors: *RPCError, *AuthError,
// *ConnectionError, *ProtocolError, *InputRequiredError, ErrTooManyRounds.
func (c *Client) Call(ctx context.Context, name string, args any, opts ...CallOption) (*CallResult, error) {
	var cfg callConfig
	for _, o := range opts {
		o(&cfg)
	}
	rawArgs, err := encodeArgs(args)
	if err != nil {
		return nil, err
	}
	e, version, err := c.ensure(ctx)
	if err != nil {
		return nil, err
	}
	entry, err := c.callableTool(ctx, name)
	if err != nil {
		return nil, err
	}
	token, onProgress := c.progressHook(cfg.progress)
	if e == eraLegacy {
		return c.legacyCall(ctx, version, name, rawArgs, entry, &cfg, token, onProgress)
	}
	var responses mcp.InputResponses
	state := ""
	for round := 0; ; round++ {
		p := &mcp.CallToolParams{Name: name, Arguments: rawArgs, InputResponses: responses, RequestState: state}
		raw, err := c.callRound(ctx, version, p, entry, token, onProgress)
		if err != nil {
			return nil, err
		}
		if peekResultType(raw) != mcp.ResultInputRequired {
			return c.callOutcome(raw)
		}
		if round >= c.opts.MaxInputRounds {
			return nil, ErrTooManyRounds
		}
		var ir mcp.InputRequiredResult
		if err := json.Unmarshal(raw, &ir); err != nil {
			return nil, protoErr(mcp.MethodToolsCall, "malformed input_required result", err)
		}
		if len(ir.InputRequests) == 0 && ir.RequestState == "" {
			return nil, protoErr(mcp.MethodToolsCall, "input_required result without input requests or request state", nil)
		}
		if responses, err = c.fulfil(ctx, "", ir.InputRequests); err != nil {
			return nil, err
		}
		state = ir.RequestState
	}
}

// encodeArgs encodes a call's arguments, which must encode as a JSON
// object; nil and JSON null mean no arguments.
func encodeArgs(args any) (json.RawMessage, error) {
	if args == nil {
		return nil, nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("client: arguments cannot be encoded: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		if string(b) != "null" {
			return nil, errors.New("client: arguments must encode as a JSON object")
		}
		return nil, nil
	}
	return b, nil
}

// callableTool returns the listed entry of tool name, listing the tools
// first when they were not yet. A server that cannot list its tools (an
// RPC error) yields a nil entry: the tool is still called, without
// Mcp-Param-* headers. A listed tool whose header declarations break the
// rules is an error.
func (c *Client) callableTool(ctx context.Context, name string) (*toolEntry, error) {
	entry, err := c.toolEntry(ctx, name)
	var rpc *RPCError
	if errors.As(err, &rpc) {
		c.opts.Logger.Debug("client: tools/list failed; calling without parameter headers", "err", err)
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	if entry != nil && entry.invalid != nil {
		return nil, fmt.Errorf("client: tool %q is not callable: %w", name, entry.invalid)
	}
	return entry, nil
}

// progressHook returns the progress token to send and the function that
// decodes each notification for fn; both are nil when fn is nil.
func (c *Client) progressHook(fn func(Progress)) (json.RawMessage, func(json.RawMessage)) {
	if fn == nil {
		return nil, nil
	}
	token := json.RawMessage(fmt.Sprintf(`"p-%d"`, c.nextID.Add(1)))
	return token, func(raw json.RawMessage) {
		var p struct {
			Progress float64  `json:"progress"`
			Total    *float64 `json:"total"`
			Message  string   `json:"message"`
		}
		if json.Unmarshal(raw, &p) == nil {
			fn(Progress(p))
		}
	}
}

// callRound sends one 2026 tools/call round with its Mcp-Name and
// Mcp-Param-* headers (and the progress token, when there is one) and
// returns the raw result.
func (c *Client) callRound(ctx context.Context, version string, p *mcp.CallToolParams, entry *toolEntry, token json.RawMessage, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	header := nameHeader(p.Name)
	if entry != nil {
		for k, v := range paramHeaders(entry.headers, p.Arguments) {
			header[k] = v
		}
	}
	var cl *call
	var err error
	if token != nil {
		cl, err = c.withProgressToken(version, p, header, token)
	} else {
		cl, err = c.modernCall(version, mcp.MethodToolsCall, p, header)
	}
	if err != nil {
		return nil, err
	}
	cl.onProgress = onProgress
	return c.roundTrip(ctx, cl)
}

// callOutcome decodes a final 2026 tools/call result: a task handle or an
// inline result.
func (c *Client) callOutcome(raw json.RawMessage) (*CallResult, error) {
	if peekResultType(raw) == mcp.ResultTask {
		var tr mcp.CreateTaskResult
		if err := json.Unmarshal(raw, &tr); err != nil {
			return nil, protoErr(mcp.MethodToolsCall, "malformed task result", err)
		}
		if tr.TaskID == "" {
			return nil, protoErr(mcp.MethodToolsCall, "task result without taskId", nil)
		}
		t := c.Task(tr.TaskID)
		t.remember(&mcp.DetailedTask{TaskInfo: tr.TaskInfo})
		return &CallResult{Task: t}, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, protoErr(mcp.MethodToolsCall, "malformed result", err)
	}
	return &CallResult{Result: &res}, nil
}

// withProgressToken rebuilds the call with a progress token in _meta.
func (c *Client) withProgressToken(version string, p *mcp.CallToolParams, header http.Header, token json.RawMessage) (*call, error) {
	m := c.meta(version)
	m.ProgressToken = token
	p.Meta = m
	cl, err := c.newCall(mcp.MethodToolsCall, p)
	if err != nil {
		return nil, protoErr(mcp.MethodToolsCall, "params cannot be encoded", err)
	}
	for k, v := range header {
		cl.header[k] = v
	}
	cl.header.Set(mcp.HeaderProtocolVersion, version)
	cl.header.Set(mcp.HeaderMethod, mcp.MethodToolsCall)
	return cl, nil
}

// legacyCall is tools/call in a 2025-era session: input arrives as server
// requests on the response stream; a 2025-11-25 task is asked for with the
// task member.
func (c *Client) legacyCall(ctx context.Context, version, name string, args json.RawMessage, entry *toolEntry, cfg *callConfig, token json.RawMessage, onProgress func(json.RawMessage)) (*CallResult, error) {
	p := &legacyCallParams{CallToolParams: mcp.CallToolParams{Name: name, Arguments: args}}
	if legacyTasks(version) && entry != nil && !c.opts.DisableTasks &&
		(entry.taskSupport == mcp.TaskSupportRequired || (entry.taskSupport == mcp.TaskSupportOptional && cfg.preferTask)) {
		p.Task = &mcp.TaskMetadata{TTL: cfg.ttl}
	}
	var body any = p
	if token != nil {
		body = struct {
			*legacyCallParams
			Meta map[string]json.RawMessage `json:"_meta"`
		}{p, map[string]json.RawMessage{mcp.MetaProgressToken: token}}
	}
	cl, err := c.newCall(mcp.MethodToolsCall, body)
	if err != nil {
		return nil, protoErr(mcp.MethodToolsCall, "params cannot be encoded", err)
	}
	cl.onProgress = onProgress
	raw, err := c.roundTrip(ctx, cl)
	if err != nil {
		return nil, err
	}
	var probe struct {
		Task *mcp.LegacyTask `json:"task"`
	}
	json.Unmarshal(raw, &probe)
	if probe.Task != nil {
		if probe.Task.TaskID == "" {
			return nil, protoErr(mcp.MethodToolsCall, "task result without taskId", nil)
		}
		t := c.Task(probe.Task.TaskID)
		t.remember(fromLegacy(probe.Task))
		return &CallResult{Task: t}, nil
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, protoErr(mcp.MethodToolsCall, "malformed result", err)
	}
	return &CallResult{Result: &res}, nil
}
