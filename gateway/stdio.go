package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/internal/mcpstdio"
	"github.com/taskwire/taskwire/mcp"
)

// Restarts of a stdio upstream: the delay before the n-th attempt in a row
// is restartBase·2ⁿ, at most restartCap, of which a random half is taken
// off (jitter, so that the processes of a fleet do not restart in step).
// A process that ran restartHealthy or longer starts the count again.
const (
	restartBase    = 100 * time.Millisecond
	restartCap     = 30 * time.Second
	restartHealthy = time.Minute
	// restartWait bounds how long a call waits for a restarting process
	// (besides its own deadline) before it fails as a connection failure.
	restartWait = 10 * time.Second
	// maxListPages bounds the tools/list pages of one listing.
	maxListPages = 100
)

// restartDelay is the delay before the attempt that follows failures
// failed attempts in a row.
func restartDelay(failures int, jitter func() float64) time.Duration {
	d := min(restartBase<<min(failures, 20), restartCap)
	return d/2 + time.Duration(jitter()*float64(d/2))
}

// stdioUpstream is an upstream over the standard input and output of a
// process the gateway starts (package mcpstdio). A supervising goroutine
// owns the process: when it exits, the goroutine starts another after
// restartDelay and calls onRestart; Close stops it. Calls made while no
// process runs wait for the next within restartWait and their deadline.
type stdioUpstream struct {
	opts      mcpstdio.Options
	log       *slog.Logger
	caps      *mcp.ServerCapabilities // of the first run
	onRestart func(context.Context, lister)
	// offered reports whether the latest listing has a tool, checked
	// once a call has a process (it may have waited for a restart).
	offered  func(name string) bool
	maxTools int

	// calls are the contexts of the tools/call requests in flight, so
	// that a request of the process's own that names no task (stdio ties
	// none to a call) is relayed when one call is in flight (relay.go).
	cmu   sync.Mutex
	calls map[*context.Context]struct{}
	// serial, with Options.SerialCalls, is the single slot a tools/call
	// holds while it is in flight; nil otherwise.
	serial chan struct{}
	// routes send the requests that name an upstream task to the run
	// that follows it (uptask_stdio.go).
	routes stdioRoutes
	// declaresTasks: the session declares the 2025-11-25 tasks
	// capability (there are task tools), so that task tools run as
	// upstream tasks where the process offers them.
	declaresTasks bool
	// exec is the execution.taskSupport of each tool of the latest
	// listing, by name.
	emu  sync.Mutex
	exec map[string]string

	mu      sync.Mutex
	conn    *mcpstdio.Conn // nil while the process restarts
	ready   chan struct{}  // closed when conn is set
	version string

	stop      chan struct{} // closed by close
	done      chan struct{} // closed when the supervisor has ended
	closeOnce sync.Once
}

// startStdioUpstream starts the process of opts.UpstreamCommand and its
// session within ctx and opts.ListTimeout, and the goroutine that restarts
// it. onListChanged receives the list_changed notifications of every run
// of the process (from its reading goroutine: it must not block);
// onResourceUpdated receives its notifications/resources/updated (from the
// same goroutine); onRestart is called, from the supervising goroutine
// with a context that ends on close, after each restart, before calls
// reach the new process.
func startStdioUpstream(ctx context.Context, opts Options, onListChanged func(client.ListChange), onResourceUpdated func(string), onRestart func(context.Context, lister), offered func(string) bool) (*stdioUpstream, error) {
	u := &stdioUpstream{calls: map[*context.Context]struct{}{}, declaresTasks: opts.hasTaskTools()}
	if opts.SerialCalls {
		u.serial = make(chan struct{}, 1)
	}
	caps := &mcp.LegacyClientCapabilities{
		// Relayed to the task's client: a request naming an upstream
		// task to the run following it, another when a single call is
		// in flight.
		Elicitation: &mcp.ElicitationCapability{Form: mcp.Object{}, URL: mcp.Object{}},
		Sampling:    &mcp.SamplingCapability{},
	}
	if u.declaresTasks {
		caps.Tasks = &mcp.ClientTasksCapability{}
	}
	so := mcpstdio.Options{
		Handler:      u.answer,
		Capabilities: caps,
		Notify: func(method string, params json.RawMessage) {
			if k := listChangeOf(method); k != 0 && onListChanged != nil {
				onListChanged(k)
			}
			if method == mcp.NotificationResourcesUpdated && onResourceUpdated != nil {
				var p mcp.ResourceUpdatedParams
				if json.Unmarshal(params, &p) == nil && p.URI != "" {
					onResourceUpdated(p.URI)
				}
			}
		},
		Command:          opts.UpstreamCommand,
		Env:              opts.UpstreamEnv,
		Dir:              opts.UpstreamDir,
		ClientInfo:       mcp.Implementation{Name: "taskwire-gateway"},
		ProtocolVersions: opts.ProtocolVersions,
		// Listing and the handshake take a call besides MaxInFlight.
		MaxInFlight:  opts.MaxInFlight + 4,
		StartTimeout: opts.ListTimeout,
		Logger:       opts.Logger,
	}
	c, err := mcpstdio.Start(ctx, so)
	if err != nil {
		return nil, fmt.Errorf("starting the upstream command: %w", err)
	}
	u.opts, u.log, u.caps = so, opts.Logger, modernCapabilities(c.Initialized().Capabilities)
	u.onRestart, u.offered, u.maxTools = onRestart, offered, opts.MaxTools
	u.conn, u.ready, u.version = c, make(chan struct{}), c.Initialized().ProtocolVersion
	u.stop, u.done = make(chan struct{}), make(chan struct{})
	close(u.ready)
	go u.supervise(c)
	return u, nil
}

// supervise waits for the process to exit and starts the next one, until
// close. It owns every process: it closes the last one on its way out.
func (u *stdioUpstream) supervise(c *mcpstdio.Conn) {
	defer close(u.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-u.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	failures := 0
	for {
		started := time.Now()
		select {
		case <-c.Done():
		case <-u.stop:
			_ = c.Close()
			return
		}
		u.mu.Lock()
		u.conn, u.ready = nil, make(chan struct{})
		u.mu.Unlock()
		_ = c.Close() // the process has exited: this joins the connection's goroutines
		ran := time.Since(started)
		u.log.Warn("gateway: the upstream process exited; restarting it", "exit", exitText(c.Err()), "ran", ran.Round(time.Millisecond))
		if ran >= restartHealthy {
			failures = 0
		}
		if c = u.restart(ctx, &failures); c == nil {
			return // closed
		}
		u.log.Info("gateway: the upstream process restarted", "attempts", failures)
		if u.onRestart != nil {
			// Listed before any call reaches the new process, so that a
			// call of a tool it no longer has answers errToolGone.
			u.onRestart(ctx, func(ctx context.Context) ([]*mcp.Tool, error) { return u.listOn(ctx, c) })
		}
		u.mu.Lock()
		u.conn, u.version = c, c.Initialized().ProtocolVersion
		close(u.ready)
		u.mu.Unlock()
	}
}

// restart starts the process again, after the backoff of each failed
// attempt, until it starts or ctx ends (nil).
func (u *stdioUpstream) restart(ctx context.Context, failures *int) *mcpstdio.Conn {
	for {
		t := time.NewTimer(restartDelay(*failures, rand.Float64))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil
		}
		*failures++
		c, err := mcpstdio.Start(ctx, u.opts)
		if err == nil {
			return c
		}
		if ctx.Err() != nil {
			return nil
		}
		// The error names the program and the failure (an exit status,
		// a timeout), never the arguments or the process's stderr.
		u.log.Warn("gateway: restarting the upstream process failed", "attempt", *failures, "err", err.Error())
	}
}

// exitText describes a process's exit for a log line.
func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// current returns the running process's connection, waiting for a
// restart within ctx and restartWait.
func (u *stdioUpstream) current(ctx context.Context, method string) (*mcpstdio.Conn, error) {
	u.mu.Lock()
	c, ready := u.conn, u.ready
	u.mu.Unlock()
	if c != nil {
		return c, nil
	}
	t := time.NewTimer(restartWait)
	defer t.Stop()
	select {
	case <-ready:
	case <-u.stop:
		return nil, client.ErrClosed
	case <-ctx.Done():
		return nil, &client.ConnectionError{Op: method, Err: ctx.Err()}
	case <-t.C:
		return nil, &client.ConnectionError{Op: method, Err: errors.New("the upstream process is restarting")}
	}
	u.mu.Lock()
	c = u.conn
	u.mu.Unlock()
	if c == nil { // died again at once
		return nil, &client.ConnectionError{Op: method, Err: errors.New("the upstream process is restarting")}
	}
	return c, nil
}

// requestOn sends one request to the process of c and maps its errors to
// the client package's types.
func (u *stdioUpstream) requestOn(ctx context.Context, c *mcpstdio.Conn, method string, params any, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	raw, err := c.Call(ctx, method, params, onProgress)
	var rpc *mcp.Error
	switch {
	case err == nil:
		return raw, nil
	case errors.As(err, &rpc):
		return nil, &client.RPCError{Code: rpc.Code, Message: rpc.Message, Data: rpc.Data}
	case errors.Is(err, mcpstdio.ErrExited):
		select {
		case <-u.stop:
			return nil, fmt.Errorf("%w: %v", client.ErrClosed, err)
		default:
		}
	}
	return nil, &client.ConnectionError{Op: method, Err: err}
}

func (u *stdioUpstream) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	c, err := u.current(ctx, mcp.MethodToolsList)
	if err != nil {
		return nil, err
	}
	return u.listOn(ctx, c)
}

// listOn lists the tools of the process of c, following the cursors.
func (u *stdioUpstream) listOn(ctx context.Context, c *mcpstdio.Conn) ([]*mcp.Tool, error) {
	var (
		all    []*mcp.Tool
		cursor string
		seen   = map[string]bool{}
		exec   = map[string]string{}
	)
	for range maxListPages {
		raw, err := u.requestOn(ctx, c, mcp.MethodToolsList, &mcp.ListToolsParams{Cursor: cursor}, nil)
		if err != nil {
			return nil, err
		}
		var page mcp.ListToolsResult
		if err := json.Unmarshal(raw, &page); err != nil {
			return nil, &client.ProtocolError{Method: mcp.MethodToolsList, Reason: "a malformed result", Err: err}
		}
		all = append(all, page.Tools...)
		addExecution(exec, raw)
		switch {
		case page.NextCursor == "" || len(all) > u.maxTools:
			u.emu.Lock()
			u.exec = exec
			u.emu.Unlock()
			return all, nil // the gateway refuses more than MaxTools
		case seen[page.NextCursor]:
			return nil, &client.ProtocolError{Method: mcp.MethodToolsList, Reason: "the upstream repeats a cursor"}
		}
		seen[page.NextCursor], cursor = true, page.NextCursor
	}
	return nil, &client.ProtocolError{Method: mcp.MethodToolsList, Reason: fmt.Sprintf("more than %d pages", maxListPages)}
}

func (u *stdioUpstream) callTool(ctx context.Context, name string, args json.RawMessage, progress func(client.Progress)) (*mcp.CallToolResult, error) {
	res, id, err := u.toolsCall(ctx, name, args, progress, false)
	if err != nil || id == "" {
		return res, err
	}
	// A tool the process runs only as a task: its result is waited for
	// inline, the task's requests routed to this call.
	t := &stdioTask{u: u, id: id}
	defer t.route(ctx)()
	res, err = t.Wait(ctx)
	var failed *client.TaskFailedError
	switch {
	case errors.As(err, &failed):
		return nil, failed.Err
	case errors.Is(err, client.ErrTaskCancelled):
		return nil, &client.RPCError{Code: mcp.CodeInternalError, Message: "the upstream cancelled the task of the call"}
	case err != nil && ctx.Err() != nil:
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelTimeout)
		_ = t.Cancel(cctx) // best effort: the call is abandoned
		cancel()
	}
	return res, err
}

// toolsCall makes one tools/call of the running process, asking for a
// task where the process runs the tool only as a task, or, with
// preferTask, where it offers one (offersTask). It returns the inline
// result, or the ID of the task the process created.
func (u *stdioUpstream) toolsCall(ctx context.Context, name string, args json.RawMessage, progress func(client.Progress), preferTask bool) (*mcp.CallToolResult, string, error) {
	var onProgress func(json.RawMessage)
	if progress != nil {
		onProgress = func(raw json.RawMessage) {
			var p mcp.ProgressParams
			if json.Unmarshal(raw, &p) == nil {
				progress(client.Progress{Progress: p.Progress, Total: p.Total, Message: p.Message})
			}
		}
	}
	if u.serial != nil {
		select {
		case u.serial <- struct{}{}:
			defer func() { <-u.serial }()
		case <-ctx.Done():
			return nil, "", &client.ConnectionError{Op: mcp.MethodToolsCall, Err: fmt.Errorf("waiting for the call in flight (SerialCalls): %w", ctx.Err())}
		}
	}
	c, err := u.current(ctx, mcp.MethodToolsCall)
	if err != nil {
		return nil, "", err
	}
	if u.offered != nil && !u.offered(name) {
		return nil, "", errToolGone
	}
	p := &stdioCallParams{CallToolParams: mcp.CallToolParams{Name: name, Arguments: args}}
	if offered, required := u.offersTask(c, name); required || (offered && preferTask) {
		p.Task = &mcp.TaskMetadata{}
	}
	raw, err := u.inFlight(ctx, c, p, onProgress)
	if err != nil {
		return nil, "", err
	}
	if p.Task == nil {
		var res mcp.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return nil, "", &client.ProtocolError{Method: mcp.MethodToolsCall, Reason: "a malformed result", Err: err}
		}
		return &res, "", nil
	}
	return decodeCall(raw)
}

// inFlight makes the tools/call of p on c, counted among the calls in
// flight (answer).
func (u *stdioUpstream) inFlight(ctx context.Context, c *mcpstdio.Conn, p *stdioCallParams, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	key := &ctx
	u.cmu.Lock()
	u.calls[key] = struct{}{}
	u.cmu.Unlock()
	defer func() {
		u.cmu.Lock()
		delete(u.calls, key)
		u.cmu.Unlock()
	}()
	return u.requestOn(ctx, c, mcp.MethodToolsCall, p, onProgress)
}

// addExecution adds the execution.taskSupport of each tool of a
// tools/list result to exec.
func addExecution(exec map[string]string, raw json.RawMessage) {
	var page struct {
		Tools []struct {
			Name      string             `json:"name"`
			Execution *mcp.ToolExecution `json:"execution"`
		} `json:"tools"`
	}
	if json.Unmarshal(raw, &page) != nil {
		return
	}
	for _, t := range page.Tools {
		if t.Execution != nil {
			exec[t.Name] = t.Execution.TaskSupport
		}
	}
}

func (u *stdioUpstream) protocolVersion() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.version
}

// close stops the supervisor, which closes the process (closing its
// standard input, killing it after mcpstdio's grace) and returns once it
// has.
func (u *stdioUpstream) close() error {
	u.closeOnce.Do(func() { close(u.stop) })
	<-u.done
	return nil
}

// answer answers a request the process sends (elicitation/create,
// sampling/createMessage) by relaying it as the input of a task run: a
// request whose params name an upstream task (the related-task _meta key)
// to the run that follows that task; another to the run whose call is the
// only one in flight. With none, or several in flight, the gateway cannot
// tell which call the request serves: it answers the process with a
// JSON-RPC error saying so (nothing is asked of any client), and marks
// each call in flight, so that a run whose call then fails says why
// (settleRelay).
func (u *stdioUpstream) answer(_ context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var call context.Context
	if id := relatedTask(params); id != "" {
		if call = u.routes.of(id); call == nil {
			u.log.Warn("gateway: an input request of the upstream process is refused: no run follows its task", "method", clip(method))
			return nil, mcp.NewError(mcp.CodeInvalidParams, "The gateway follows no such task.")
		}
	} else {
		u.cmu.Lock()
		n := len(u.calls)
		for k := range u.calls {
			if n == 1 {
				call = *k
			} else {
				markAmbiguous(*k)
			}
		}
		u.cmu.Unlock()
		if call == nil {
			u.log.Warn("gateway: an input request of the upstream process is refused: not one call is in flight",
				"method", clip(method), "calls", n)
			return nil, errAmbiguous
		}
	}
	var out json.RawMessage
	if err := relay(call, method, params, &out); err != nil {
		return nil, err
	}
	return out, nil
}
