package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/internal/mcpstdio"
	"github.com/taskwire/taskwire/mcp"
)

// modernCommandURL is the endpoint the gateway's HTTP clients are given
// for a 2026-07-28 UpstreamCommand process: never dialed, since every
// request goes through the process's stdioTransport.
const modernCommandURL = "http://upstream-cmd.invalid/mcp"

// maxStreamEvents bounds the notifications queued for one forwarded
// request while its client reads them; beyond, progress is dropped (the
// next report carries the state again) and counted.
const maxStreamEvents = 64

// speaksModern reports whether versions (Options.ProtocolVersions; nil:
// the defaults) let the gateway speak 2026-07-28 to an UpstreamCommand.
func speaksModern(versions []string) bool {
	return len(versions) == 0 || slices.Contains(versions, mcp.LatestProtocolVersion)
}

// stdioTransport carries the requests of the gateway's HTTP clients (the
// pass-through one and the task caller) to a 2026-07-28 upstream process
// over its standard input and output, so that such a process is spoken to
// exactly as an HTTP upstream of that revision: every request is
// self-contained (its _meta), input rounds come back in results, tasks
// are the Tasks extension's and subscriptions/listen streams its
// notifications. Each POST becomes one request of the process, its
// response an SSE stream of the request's notifications (progress, or a
// listen's) and then its answer, with the client's own ID, progress token
// and subscription ID. Closing the body, or the request's context ending,
// cancels the request (notifications/cancelled). When the process has
// exited, the next request starts it again, after the same backoff as a
// 2025-era process's, and finds it still speaking 2026-07-28; the mirror
// then lists its tools, prompts and resources again (while that request
// goes on: a call of a tool the new process lacks answers the upstream's
// own unknown-tool error meanwhile).
type stdioTransport struct {
	opts mcpstdio.Options
	log  *slog.Logger
	// restarted is called after each restart of the process (without
	// blocking), so that the mirror lists it again: a process need not
	// announce a tools list it was started with.
	restarted func()

	mu       sync.Mutex
	conn     *mcpstdio.Conn
	starting chan struct{} // closed when the start in progress ends; nil when none
	started  time.Time
	failures int
	closed   bool
}

// startModernStdio starts the process of opts.UpstreamCommand and probes
// it with server/discover (mcpstdio.Options.Modern). It returns nil, with
// the process stopped, when the process is not a 2026-07-28 server: the
// caller then starts a 2025-era session as before.
func startModernStdio(ctx context.Context, opts Options) (*stdioTransport, error) {
	so := mcpstdio.Options{
		Command: opts.UpstreamCommand, Env: opts.UpstreamEnv, Dir: opts.UpstreamDir,
		ClientInfo: mcp.Implementation{Name: "taskwire-gateway"},
		Modern:     true,
		// The handshake's share is small: the clients' requests are
		// bounded by MaxInFlight before they reach the transport.
		MaxInFlight:     opts.MaxInFlight + 4,
		MaxMessageBytes: mcpstdio.DefaultMaxMessageBytes,
		StartTimeout:    opts.ListTimeout,
		Logger:          opts.Logger,
	}
	c, err := mcpstdio.Start(ctx, so)
	if err != nil {
		return nil, fmt.Errorf("starting the upstream command: %w", err)
	}
	if !c.Modern() {
		_ = c.Close()
		return nil, nil
	}
	return &stdioTransport{opts: so, log: opts.Logger, conn: c, started: time.Now()}, nil
}

// current returns the running process, starting it again when it has
// exited.
func (t *stdioTransport) current(ctx context.Context) (*mcpstdio.Conn, error) {
	for {
		t.mu.Lock()
		if t.closed {
			t.mu.Unlock()
			return nil, client.ErrClosed
		}
		if c := t.conn; c != nil && !exited(c) {
			t.mu.Unlock()
			return c, nil
		}
		if ch := t.starting; ch != nil {
			t.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		old, ch := t.conn, make(chan struct{})
		t.starting, t.conn = ch, nil
		if time.Since(t.started) >= restartHealthy {
			t.failures = 0
		}
		delay := restartDelay(t.failures, rand.Float64)
		t.failures++
		t.mu.Unlock()
		c, err := t.restart(ctx, old, delay)
		t.mu.Lock()
		t.starting = nil
		if err == nil {
			t.conn, t.started = c, time.Now()
			if t.restarted != nil {
				t.restarted()
			}
		}
		if t.closed && c != nil {
			t.conn = nil
			_ = c.Close()
			err = client.ErrClosed
		}
		close(ch)
		t.mu.Unlock()
		return c, err
	}
}

// restart reaps the exited process and starts the next after delay.
func (t *stdioTransport) restart(ctx context.Context, old *mcpstdio.Conn, delay time.Duration) (*mcpstdio.Conn, error) {
	if old != nil {
		_ = old.Close()
		t.log.Warn("gateway: the upstream process exited; starting it again", "delay", delay.Round(time.Millisecond).String())
	}
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return nil, &client.ConnectionError{Op: "restart", Err: ctx.Err()}
	}
	c, err := mcpstdio.Start(ctx, t.opts)
	if err != nil {
		t.log.Warn("gateway: restarting the upstream process failed", "err", err.Error())
		return nil, &client.ConnectionError{Op: "restart", Err: err}
	}
	if !c.Modern() {
		_ = c.Close()
		return nil, &client.ConnectionError{Op: "restart", Err: errors.New("the upstream process no longer answers as a 2026-07-28 server")}
	}
	return c, nil
}

func exited(c *mcpstdio.Conn) bool {
	select {
	case <-c.Done():
		return true
	default:
		return false
	}
}

// close stops the process; requests in flight fail, later ones get
// client.ErrClosed.
func (t *stdioTransport) close() error {
	t.mu.Lock()
	c := t.conn
	t.closed, t.conn = true, nil
	t.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	return nil
}

// RoundTrip forwards one JSON-RPC message of a POST to the process.
func (t *stdioTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		defer req.Body.Close()
	}
	if req.Method != http.MethodPost || req.Body == nil {
		return response(req, http.StatusMethodNotAllowed, "", nil), nil
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, int64(t.opts.MaxMessageBytes)+1))
	if err != nil {
		return nil, err
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if len(body) > t.opts.MaxMessageBytes || json.Unmarshal(body, &m) != nil || m.Method == "" {
		return nil, errors.New("gateway: a request the upstream process cannot be given")
	}
	if len(m.ID) == 0 || string(m.ID) == "null" {
		// A notification: 2026-07-28 clients send none the process needs
		// (cancellation is the end of the request).
		return response(req, http.StatusAccepted, "", nil), nil
	}
	c, err := t.current(req.Context())
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(req.Context())
	s := &eventStream{events: make(chan []byte, maxStreamEvents), log: t.log}
	pr, pw := io.Pipe()
	go s.write(pw, cancel)
	go func() {
		defer close(s.events)
		res, err := c.Forward(ctx, m.Method, m.Params, m.ID, s.notify)
		var rpc *mcp.Error
		switch {
		case err == nil:
			s.final(ctx, m.ID, res, nil)
		case errors.As(err, &rpc):
			s.final(ctx, m.ID, nil, rpc)
		default:
			s.fail(err)
		}
	}()
	return response(req, http.StatusOK, "text/event-stream", &cancelBody{ReadCloser: pr, cancel: cancel}), nil
}

// response is a response of the transport's own.
func response(req *http.Request, status int, contentType string, body io.ReadCloser) *http.Response {
	h := http.Header{}
	if contentType != "" {
		h.Set("Content-Type", contentType)
	}
	if body == nil {
		body = io.NopCloser(strings.NewReader(""))
	}
	return &http.Response{
		Status: http.StatusText(status), StatusCode: status, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: h, Body: body, ContentLength: -1, Request: req,
	}
}

// cancelBody cancels the forwarded request when the client closes the
// response body.
type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	b.cancel()
	return b.ReadCloser.Close()
}

// eventStream is the SSE body of one forwarded request: the process's
// reading goroutine queues notifications without blocking (notify), the
// forwarding goroutine the answer (final), and write copies them to the
// body until the queue closes.
type eventStream struct {
	events  chan []byte
	log     *slog.Logger
	mu      sync.Mutex
	err     error // the request's failure, once events closes
	dropped bool
}

func (s *eventStream) notify(method string, params json.RawMessage) {
	ev, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{"2.0", method, params})
	if err != nil {
		return
	}
	select {
	case s.events <- sseEvent(ev):
	default:
		s.mu.Lock()
		first := !s.dropped
		s.dropped = true
		s.mu.Unlock()
		if first {
			s.log.Warn("gateway: notifications of the upstream process dropped: its client reads too slowly", "method", clip(method))
		}
	}
}

func (s *eventStream) final(ctx context.Context, id, result json.RawMessage, rpc *mcp.Error) {
	ev, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *mcp.Error      `json:"error,omitempty"`
	}{"2.0", id, result, rpc})
	if err != nil {
		s.fail(err)
		return
	}
	select {
	case s.events <- sseEvent(ev):
	case <-ctx.Done():
		s.fail(ctx.Err())
	}
}

func (s *eventStream) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// write copies the events to w, then closes w with the request's failure
// (a body that ends with an error, which the client reads as a lost
// connection) or none. A client that stops reading cancels the request.
func (s *eventStream) write(w *io.PipeWriter, cancel context.CancelFunc) {
	defer cancel()
	for ev := range s.events {
		if _, err := w.Write(ev); err != nil {
			cancel()
			for range s.events { // until the forwarding goroutine ends
			}
			return
		}
	}
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	_ = w.CloseWithError(err)
}

func sseEvent(msg []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(msg) + 8)
	b.WriteString("data: ")
	b.Write(msg)
	b.WriteString("\n\n")
	return b.Bytes()
}
