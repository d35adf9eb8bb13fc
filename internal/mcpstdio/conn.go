// Package mcpstdio is the client side of the MCP stdio transport: it starts
// an MCP server as a child process, initializes a 2025-era session with it
// over the process's standard input and output, and sends it requests, for
// a program that puts such a server behind its own endpoint (the gateway).
// With Options.Modern it first asks server/discover, and a server that
// answers as a 2026-07-28 server gets no session: its requests, each with
// its own _meta, are sent with Conn.Forward.
//
// A Conn is one run of the process. Start launches it (the command is run
// directly, never through a shell) and completes the initialize handshake
// before it returns; Call sends a request and waits for its response,
// passing the request's notifications/progress to a callback; the server's
// own requests (ping, and elicitation, sampling or roots when a handler is
// set) are answered as they arrive. Close ends the process: standard input
// is closed, and after a grace period the process is killed. Done is
// closed when the process has exited, for whatever reason; every Call in
// flight then fails with an error wrapping ErrExited.
//
// Everything is bounded: a message by Options.MaxMessageBytes (longer
// lines are discarded and counted), the calls in flight by
// Options.MaxInFlight, each call by its context, the handshake by
// Options.StartTimeout, and the process's standard error is read and only
// its last lines kept (Conn.Stderr), never logged with arguments.
package mcpstdio

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/internal/stdioframe"
	"github.com/taskwire/taskwire/mcp"
)

// Defaults of Options.
const (
	DefaultMaxMessageBytes = 16 << 20
	DefaultMaxInFlight     = 64
	DefaultStartTimeout    = 30 * time.Second
	DefaultStopGrace       = 3 * time.Second
	DefaultProbeTimeout    = 3 * time.Second
)

// ErrExited is wrapped by the error of every call that the process's exit
// ended, and of calls made after it.
var ErrExited = errors.New("mcpstdio: the server process exited")

// ErrTooManyCalls is the error of a Call made while Options.MaxInFlight
// calls are waiting for their responses.
var ErrTooManyCalls = errors.New("mcpstdio: too many calls in flight")

// RequestHandler answers a request the server sends (elicitation/create,
// sampling/createMessage, roots/list): it returns the result's JSON, or an
// error, which the server receives as a JSON-RPC error (an *mcp.Error as it
// is, any other error as -32603 "Internal error").
type RequestHandler func(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error)

// Options configure Start. Command is required; the rest have defaults.
type Options struct {
	// Command is the program and its arguments; Command[0] is looked up
	// in PATH when it contains no slash.
	Command []string
	// Env is the process's environment; nil inherits this process's.
	Env []string
	// Dir is the process's working directory; empty: this process's.
	Dir string
	// ClientInfo names this client in initialize. Zero: "taskwire".
	ClientInfo mcp.Implementation
	// ProtocolVersions are the revisions this client speaks, preferred
	// first; the first is offered in initialize, and the server's answer
	// must be one of them. Nil: 2025-11-25, then 2025-06-18.
	ProtocolVersions []string
	// Capabilities are declared in initialize. Declare elicitation,
	// sampling or roots only with a Handler that answers them.
	Capabilities *mcp.LegacyClientCapabilities
	// Modern makes Start probe the server with a 2026-07-28
	// server/discover before anything else. A server that answers it
	// with a result listing 2026-07-28 gets no initialize: the
	// connection is modern (Conn.Modern), its requests are forwarded
	// with Forward, each carrying its own _meta. Any other answer (an
	// error, a result without 2026-07-28), or none within ProbeTimeout,
	// and the 2025 handshake follows on the same process as without
	// Modern.
	Modern bool
	// ProbeTimeout bounds the Modern probe, within StartTimeout. Zero:
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// Handler answers the server's requests other than ping. Nil: they
	// are refused with -32601 "Method not found".
	Handler RequestHandler
	// Notify, when set, receives the server's notifications other than
	// progress of a call in flight (notifications/tools/list_changed,
	// notifications/message, ...), from the reading goroutine: it must
	// not block.
	Notify func(method string, params json.RawMessage)
	// MaxMessageBytes bounds one message in either direction. Zero:
	// DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxInFlight bounds the calls waiting for a response. Zero:
	// DefaultMaxInFlight.
	MaxInFlight int
	// StartTimeout bounds the start and the initialize handshake. Zero:
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// StopGrace is how long Close waits for the process to exit after
	// closing its standard input, before it kills it. Zero:
	// DefaultStopGrace.
	StopGrace time.Duration
	// Logger receives the connection's own events (discarded messages,
	// the exit); nil discards them.
	Logger *slog.Logger
}

// validate checks o and fills its defaults.
func (o *Options) validate() error {
	var errs []error
	if len(o.Command) == 0 || o.Command[0] == "" {
		errs = append(errs, errors.New("mcpstdio: Options.Command must name a program"))
	}
	for _, v := range o.ProtocolVersions {
		if v != mcp.ProtocolVersion20251125 && v != mcp.ProtocolVersion20250618 {
			errs = append(errs, fmt.Errorf("mcpstdio: Options.ProtocolVersions: %q is not a 2025 revision this client speaks", v))
		}
	}
	if o.MaxMessageBytes < 0 || o.MaxInFlight < 0 || o.StartTimeout < 0 || o.StopGrace < 0 || o.ProbeTimeout < 0 {
		errs = append(errs, errors.New("mcpstdio: Options.MaxMessageBytes, MaxInFlight, StartTimeout, StopGrace and ProbeTimeout must not be negative"))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(o.ProtocolVersions) == 0 {
		o.ProtocolVersions = []string{mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618}
	}
	if o.ClientInfo.Name == "" {
		o.ClientInfo = mcp.Implementation{Name: "taskwire", Version: "dev"}
	}
	if o.Capabilities == nil {
		o.Capabilities = &mcp.LegacyClientCapabilities{}
	}
	o.MaxMessageBytes = cmpOr(o.MaxMessageBytes, DefaultMaxMessageBytes)
	o.MaxInFlight = cmpOr(o.MaxInFlight, DefaultMaxInFlight)
	o.StartTimeout = cmpOr(o.StartTimeout, DefaultStartTimeout)
	o.StopGrace = cmpOr(o.StopGrace, DefaultStopGrace)
	o.ProbeTimeout = cmpOr(o.ProbeTimeout, DefaultProbeTimeout)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// Conn is one running server process and its initialized session. Its
// methods are safe for concurrent use.
type Conn struct {
	opts   Options
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *stdioframe.Writer
	stderr *tailBuffer

	init     mcp.InitializeResult
	discover json.RawMessage // the server/discover result of a modern connection, set before modern
	modern   atomic.Bool
	nextID   atomic.Int64

	mu      sync.Mutex
	pending map[int64]*pendingCall
	closing bool

	stop      chan struct{} // closed by Close: the reader and handlers end
	done      chan struct{} // closed once the process has exited and the reader ended
	exitErr   error         // the process's exit, set before done closes
	closeOnce sync.Once
	handlers  sync.WaitGroup // the server's requests being answered
	tasks     sync.WaitGroup // the reader, the stderr drain, the reaper
	dropped   atomic.Int64
}

type pendingCall struct {
	reply      chan response // capacity 1
	onProgress func(json.RawMessage)
	token      string
	// onNotify receives, for a Forward call, the notifications that name
	// it by subscription ID (a subscriptions/listen).
	onNotify func(method string, params json.RawMessage)
}

type response struct {
	result json.RawMessage
	err    error
}

// Start launches the server process, initializes a session with it and
// returns the connection. It fails, with the process stopped, when the
// program cannot start, when the handshake does not complete within
// Options.StartTimeout or ctx, or when the server answers with a revision
// this client does not speak. ctx bounds the start only: the process runs
// until Close.
func Start(ctx context.Context, opts Options) (*Conn, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	cmd := exec.Command(opts.Command[0], opts.Command[1:]...)
	cmd.Env, cmd.Dir = opts.Env, opts.Dir
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("mcpstdio: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("mcpstdio: %w", err)
	}
	c := &Conn{
		opts: opts, cmd: cmd, stdin: stdin, stderr: newTailBuffer(8 << 10),
		pending: map[int64]*pendingCall{}, stop: make(chan struct{}), done: make(chan struct{}),
	}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("mcpstdio: start %s: %w", opts.Command[0], err)
	}
	c.out = stdioframe.NewWriter(stdin, 64)
	lines := make(chan []byte, 16)
	readErr := make(chan error, 1)
	readerDone := make(chan struct{})
	c.tasks.Go(func() {
		readErr <- stdioframe.ReadLines(stdout, int64(opts.MaxMessageBytes), lines, c.stop)
		close(lines)
	})
	c.tasks.Go(func() { c.read(lines); close(readerDone) })
	c.tasks.Go(func() {
		// The reader has dispatched its last message (so no handler
		// starts after done closes), and the output ended: the process
		// is exiting or has exited.
		<-readerDone
		err := <-readErr
		werr := cmd.Wait()
		if err != nil && !errors.Is(err, context.Canceled) {
			opts.Logger.Warn("mcpstdio: reading the server's output failed", "err", err)
		}
		c.exitErr = werr
		c.failPending()
		close(c.done)
	})

	sctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	if opts.Modern && c.probe(sctx) {
		return c, nil
	}
	if err := c.initialize(sctx); err != nil {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// initialize runs the handshake: initialize, then notifications/initialized.
func (c *Conn) initialize(ctx context.Context) error {
	res, err := c.Call(ctx, mcp.MethodInitialize, &mcp.InitializeParams{
		ProtocolVersion: c.opts.ProtocolVersions[0], Capabilities: c.opts.Capabilities, ClientInfo: &c.opts.ClientInfo,
	}, nil)
	if err != nil {
		return fmt.Errorf("mcpstdio: initialize: %w", err)
	}
	if err := json.Unmarshal(res, &c.init); err != nil {
		return fmt.Errorf("mcpstdio: initialize: malformed result: %w", err)
	}
	if !slices.Contains(c.opts.ProtocolVersions, c.init.ProtocolVersion) {
		return fmt.Errorf("mcpstdio: initialize: the server speaks %q, not one of %q", c.init.ProtocolVersion, c.opts.ProtocolVersions)
	}
	return c.notify(ctx, mcp.NotificationInitialized, struct{}{})
}

// Initialized returns the server's initialize result: its revision,
// capabilities, identity and instructions.
func (c *Conn) Initialized() mcp.InitializeResult { return c.init }

// Done is closed once the process has exited and its output is read.
func (c *Conn) Done() <-chan struct{} { return c.done }

// Err returns the process's exit (nil for a clean exit), once Done is
// closed; nil before.
func (c *Conn) Err() error {
	select {
	case <-c.done:
		return c.exitErr
	default:
		return nil
	}
}

// Stderr returns the last bytes (at most 8 KiB) the process wrote to its
// standard error, for diagnostics. It may hold anything the server wrote:
// callers must not log it where arguments or secrets must not appear.
func (c *Conn) Stderr() string { return c.stderr.String() }

// Dropped counts the messages from the server that were discarded:
// longer than Options.MaxMessageBytes, malformed, or answering no call.
func (c *Conn) Dropped() int64 { return c.dropped.Load() }

// Call sends the request method with params (any value that encodes as a
// JSON object, or nil) and waits for its response: the result's JSON, or
// an error, an *mcp.Error when the server answered with one. When
// onProgress is set, the request carries a progress token and the params
// of each notifications/progress for it are passed to onProgress, from the
// reading goroutine (it must not block). When ctx ends first, the server is
// told (notifications/cancelled) and Call returns ctx's error.
func (c *Conn) Call(ctx context.Context, method string, params any, onProgress func(json.RawMessage)) (json.RawMessage, error) {
	return c.call(ctx, method, params, onProgress, nil)
}

// call is Call, with onNotify receiving the notifications naming the
// request as their subscription (Forward).
func (c *Conn) call(ctx context.Context, method string, params any, onProgress func(json.RawMessage), onNotify func(string, json.RawMessage)) (json.RawMessage, error) {
	id := c.nextID.Add(1)
	p := &pendingCall{reply: make(chan response, 1), onProgress: onProgress, onNotify: onNotify}
	body, err := c.encodeRequest(id, method, params, onProgress != nil)
	if err != nil {
		return nil, err
	}
	if onProgress != nil {
		p.token = strconv.FormatInt(id, 10)
	}
	c.mu.Lock()
	switch {
	case c.closing || c.isDone():
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, ErrExited)
	case len(c.pending) >= c.opts.MaxInFlight:
		c.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", method, ErrTooManyCalls)
	}
	c.pending[id] = p
	c.mu.Unlock()
	defer c.forget(id)

	if err := c.out.Send(ctx, body); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %w: %v", method, ErrExited, err)
	}
	select {
	case r := <-p.reply:
		return r.result, r.err
	case <-ctx.Done():
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.notify(cctx, mcp.NotificationCancelled, map[string]any{"requestId": id, "reason": "cancelled by the client"})
		cancel()
		return nil, ctx.Err()
	}
}

func (c *Conn) isDone() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

func (c *Conn) forget(id int64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// encodeRequest returns the framed request; with a progress token, the
// params' _meta carries it (params must then encode as an object).
func (c *Conn) encodeRequest(id int64, method string, params any, progress bool) ([]byte, error) {
	raw := json.RawMessage(`{}`)
	if params != nil {
		b, err := json.Marshal(params)
		if err != nil {
			return nil, fmt.Errorf("mcpstdio: %s: encode params: %w", method, err)
		}
		raw = b
	}
	if progress {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
			return nil, fmt.Errorf("mcpstdio: %s: params must be a JSON object to carry a progress token", method)
		}
		meta := map[string]json.RawMessage{}
		if m, ok := obj["_meta"]; ok {
			if err := json.Unmarshal(m, &meta); err != nil || meta == nil {
				return nil, fmt.Errorf("mcpstdio: %s: params._meta must be a JSON object", method)
			}
		}
		meta["progressToken"] = json.RawMessage(strconv.FormatInt(id, 10))
		obj["_meta"], _ = json.Marshal(meta)
		raw, _ = json.Marshal(obj)
	}
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int64           `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", id, method, raw})
	if err != nil {
		return nil, fmt.Errorf("mcpstdio: %s: %w", method, err)
	}
	if len(msg) > c.opts.MaxMessageBytes {
		return nil, fmt.Errorf("mcpstdio: %s: the request is larger than %d bytes", method, c.opts.MaxMessageBytes)
	}
	return msg, nil
}

// notify sends a notification.
func (c *Conn) notify(ctx context.Context, method string, params any) error {
	msg, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{"2.0", method, params})
	if err != nil {
		return fmt.Errorf("mcpstdio: %s: %w", method, err)
	}
	return c.out.Send(ctx, msg)
}

// Close ends the connection: calls in flight fail with ErrExited, the
// process's standard input is closed, and the process is killed when it
// has not exited within Options.StopGrace. It returns once the process has
// exited and every goroutine of the connection has ended; its error is the
// process's exit status when the process had to be killed or exited with
// one, nil otherwise. Close may be called more than once.
func (c *Conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closing = true
		c.mu.Unlock()
		close(c.stop)
		// Closing the writer closes nothing but the queue; the pipe
		// itself is closed next, which the server reads as EOF.
		_ = c.out.Close(c.opts.StopGrace)
		_ = c.stdin.Close()
		t := time.NewTimer(c.opts.StopGrace)
		select {
		case <-c.done:
			t.Stop()
		case <-t.C:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
		c.handlers.Wait()
		c.tasks.Wait()
	})
	var exit *exec.ExitError
	if errors.As(c.exitErr, &exit) {
		return fmt.Errorf("mcpstdio: %w: %v", ErrExited, c.exitErr)
	}
	return nil
}

// failPending answers every call in flight with ErrExited.
func (c *Conn) failPending() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, p := range c.pending {
		p.reply <- response{err: fmt.Errorf("%w: %v", ErrExited, c.exitErr)}
		delete(c.pending, id)
	}
	c.closing = true
}
