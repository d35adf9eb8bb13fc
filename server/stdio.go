package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/taskwire/taskwire/internal/jsonlimit"
	"github.com/taskwire/taskwire/internal/stdioframe"
	"github.com/taskwire/taskwire/mcp"
)

// The stdio transport: newline-delimited JSON-RPC on a byte stream (the
// process's standard input and output), for the same endpoints, handlers
// and tasks as HTTP. It is a second transport above the shared pipeline:
// it frames and bounds messages, classifies each by era and hands the
// admitted half (dispatch, dispatchLegacy) a decoded request and a stream
// whose messages go, whole, to the connection's one writer. The HTTP-only
// steps (Host and Origin, media types, mirrored headers, session IDs) do
// not exist here.

// LocalPrincipal is the principal and tenant of every stdio request unless
// StdioOptions.Identity says otherwise: the local user who started the
// process. Tasks are visible per tenant, so a task created by one run is
// found by the next run on the same store.
const LocalPrincipal = "local"

// Defaults and ceilings of StdioOptions.
const (
	DefaultStdioMaxInflight  = 64
	DefaultStdioWriteQueue   = 256
	DefaultStdioDrainTimeout = 10 * time.Second
	maxStdioInflight         = 4096
	maxStdioWriteQueue       = 65536
)

// StdioOptions configures Server.ServeStdio. The zero value serves the
// server's only endpoint for LocalPrincipal.
type StdioOptions struct {
	// Endpoint is the path of the endpoint to serve. Empty: the server's
	// only endpoint (ServeStdio fails when it has several).
	Endpoint string
	// Identity is who every request acts for; Options.Admission does not
	// run on stdio (there are no credentials to look at: whoever can write
	// to the process's input is the user who started it). Nil: Principal
	// and Tenant LocalPrincipal.
	Identity *Identity
	// MaxLineBytes bounds one incoming message, its newline excluded; a
	// longer line is discarded as it arrives, without being buffered, and
	// answered with -32600. Zero: Options.MaxBodyBytes.
	MaxLineBytes int64
	// MaxInflight bounds the requests running at once; the reader stops
	// reading while it is reached. Zero: DefaultStdioMaxInflight.
	MaxInflight int
	// WriteQueue bounds the messages waiting for the output; a request
	// that sends while it is full waits for the client to read. Zero:
	// DefaultStdioWriteQueue.
	WriteQueue int
	// DrainTimeout bounds how long, once the input ends, running requests
	// may take to finish and send their responses before they are
	// canceled, and then how long the output may take to accept what is
	// queued before it is abandoned (a client that stopped reading): so
	// ServeStdio returns within about twice DrainTimeout of the end of its
	// input or ctx, plus the time canceled requests take to notice. Zero:
	// DefaultStdioDrainTimeout.
	DrainTimeout time.Duration
}

// resolve checks o against the server's options and fills in defaults.
func (o *StdioOptions) resolve(s *Server) (*Endpoint, error) {
	var c optionChecker
	if o.MaxLineBytes < 0 || o.MaxInflight < 0 || o.WriteQueue < 0 || o.DrainTimeout < 0 {
		c.bad("StdioOptions: MaxLineBytes, MaxInflight, WriteQueue and DrainTimeout must not be negative")
	}
	if o.MaxInflight > maxStdioInflight || o.WriteQueue > maxStdioWriteQueue {
		c.bad("StdioOptions: MaxInflight is at most %d and WriteQueue at most %d", maxStdioInflight, maxStdioWriteQueue)
	}
	if o.Identity != nil && o.Identity.Tenant == "" {
		c.bad("StdioOptions.Identity needs a Tenant")
	}
	var ep *Endpoint
	switch {
	case o.Endpoint != "":
		if ep = s.endpoints[o.Endpoint]; ep == nil {
			c.bad("StdioOptions.Endpoint %q is not an endpoint of the server", o.Endpoint)
		}
	case len(s.endpoints) == 1:
		for _, e := range s.endpoints {
			ep = e
		}
	default:
		c.bad("StdioOptions.Endpoint must name one of the server's %d endpoints", len(s.endpoints))
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	if o.Identity == nil {
		o.Identity = &Identity{Principal: LocalPrincipal, Tenant: LocalPrincipal}
	}
	if o.MaxLineBytes == 0 {
		o.MaxLineBytes = s.opts.MaxBodyBytes
	}
	if o.MaxInflight == 0 {
		o.MaxInflight = DefaultStdioMaxInflight
	}
	if o.WriteQueue == 0 {
		o.WriteQueue = DefaultStdioWriteQueue
	}
	if o.DrainTimeout == 0 {
		o.DrainTimeout = DefaultStdioDrainTimeout
	}
	return ep, nil
}

// ServeStdio serves one client over in and out with the stdio transport
// until in ends (EOF) or ctx ends: newline-delimited JSON-RPC messages,
// each request in its own goroutine (at most MaxInflight at once), every
// response and notification written by one writer. out must carry nothing
// else: the server writes its logs only to Options.Logger, which must not
// write to out.
//
// The client chooses the era by how it opens, as over HTTP: requests
// whose params._meta names a protocol version are served statelessly
// (2026-07-28); an initialize makes the connection one implicit 2025
// session, which has no session ID on stdio and ends with the connection.
// notifications/cancelled cancels one request of either era; a
// subscriptions/listen the server ends is answered with its result and
// then notifications/cancelled naming it.
//
// When in ends, running listens end at once (the client is gone) and other
// requests get DrainTimeout to finish and send their responses; then the
// rest are canceled, the output is flushed (for at most DrainTimeout more)
// and ServeStdio returns. It returns nil after EOF or the end of ctx, the
// read error otherwise, or the output's error when it failed first or was
// not flushed in time (the client stopped reading; the writer's goroutine
// then ends when its pending Write returns, at the latest with the
// process). Tasks are durable in the
// task manager's store and outlive the connection. It fails at once when
// opts is invalid.
func (s *Server) ServeStdio(ctx context.Context, in io.Reader, out io.Writer, opts StdioOptions) error {
	ep, err := opts.resolve(s)
	if err != nil {
		return err
	}
	// Requests run under their own parent context: the end of ctx, like
	// EOF, drains them (shutdown) rather than cutting them off.
	rctx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan struct{})
	sc := &stdioConn{
		srv: s, ep: ep, opts: opts, ctx: rctx, cancelAll: cancelRequests,
		reading: cctx.Done(), ended: ended,
		w:        stdioframe.NewWriter(out, opts.WriteQueue),
		slots:    make(chan struct{}, opts.MaxInflight),
		inflight: map[string]*stdioInflight{},
	}
	lines := make(chan []byte) // unbuffered: the reader reads a line only when one is taken
	readErr := make(chan error, 1)
	// The reader is owned by ServeStdio: it ends at EOF, on a read error,
	// or, once ServeStdio stops taking lines, when its pending Read
	// returns (a Read of a pipe cannot be interrupted; the process's end
	// or the client's closing of the pipe ends it).
	go func() {
		readErr <- stdioframe.ReadLines(in, opts.MaxLineBytes, lines, cctx.Done())
		close(ended)
		close(lines)
	}()
	var rerr error
loop:
	for {
		select {
		case line, ok := <-lines:
			if !ok {
				rerr = <-readErr
				break loop
			}
			if line == nil {
				sc.sendError(mcp.ID{}, errLineTooLong)
			} else {
				sc.handleLine(line)
			}
		case <-sc.w.Failed():
			break loop
		case <-cctx.Done():
			break loop
		}
	}
	cancel() // stops the reader at its next line
	werr := sc.shutdown()
	if errors.Is(rerr, context.Canceled) || errors.Is(rerr, context.DeadlineExceeded) {
		rerr = nil
	}
	if rerr != nil {
		return fmt.Errorf("server: stdio input: %w", rerr)
	}
	if werr != nil {
		return fmt.Errorf("server: stdio output: %w", werr)
	}
	return nil
}

// stdioConn is one stdio client: its writer, its requests in flight and,
// once it has sent initialize, its implicit 2025 session.
type stdioConn struct {
	srv  *Server
	ep   *Endpoint
	opts StdioOptions
	ctx  context.Context // the parent of every request: ends when shutdown gives up on them
	// cancelAll ends ctx.
	cancelAll context.CancelFunc
	// reading is closed when ServeStdio stops taking input (ctx ended or
	// the output failed); a request waiting for a slot, or a reply of the
	// reading goroutine waiting for the queue, is then dropped.
	reading <-chan struct{}
	// ended is closed when the reader has returned (EOF or a read error).
	ended <-chan struct{}
	// charged is what the line being handled charged to the server's body
	// budget: taken by the request started for it (refunded when it ends),
	// else refunded by handleLine. Used by the reading goroutine only.
	charged int64

	w     *stdioframe.Writer
	slots chan struct{} // one per request running
	wg    sync.WaitGroup

	mu       sync.Mutex
	inflight map[string]*stdioInflight // modern requests by ID spelling; the newest of a reused ID
	legacy   *stdioSession             // set by initialize
}

// stdioInflight is a request running on the connection.
type stdioInflight struct {
	cancel context.CancelFunc
	listen bool
}

// errLineTooLong answers a line over MaxLineBytes.
var errLineTooLong = invalidRequest("Invalid Request: message too large")

// sendError writes a JSON-RPC error that belongs to no running request.
func (sc *stdioConn) sendError(id mcp.ID, pe *protocolError) {
	sc.srv.opts.Metrics.RequestRejected(sc.ep.opts.Name, pe.status)
	bp := getBuf()
	b := (*bp)[:0]
	if id.IsZero() {
		// A message without an id would match nothing on a shared
		// channel: JSON-RPC says null when the id could not be read.
		e := mcp.AppendError(nil, id, pe.err) // {"jsonrpc":"2.0","error":...}
		b = append(b, `{"jsonrpc":"2.0","id":null,`...)
		b = append(b, e[len(`{"jsonrpc":"2.0",`):]...)
	} else {
		b = mcp.AppendError(b, id, pe.err)
	}
	*bp = b
	sc.reply(*bp)
	putBuf(bp)
}

// reply queues a message of the reading goroutine (an error for a line,
// initialize's result). While the queue is full it waits, and the input is
// not read meanwhile, as when MaxInflight requests run; but it never waits
// past the end of ServeStdio's ctx or the output's failure, nor, once the
// input has ended, longer than DrainTimeout: the message is then dropped
// and the reading goroutine is free to shut the connection down.
func (sc *stdioConn) reply(msg []byte) {
	b := stdioframe.Frame(msg)
	if sc.w.Enqueue(b, sc.reading, sc.ended) {
		return
	}
	select {
	case <-sc.ended:
	default:
		return // ctx ended or the output failed
	}
	drain, cancel := context.WithTimeout(context.Background(), sc.opts.DrainTimeout)
	defer cancel()
	sc.w.Enqueue(b, sc.reading, drain.Done())
}

// handleLine classifies one message and starts its request, acts on its
// notification or delivers its response.
func (sc *stdioConn) handleLine(line []byte) {
	s := sc.srv
	// A line beyond the free allowance is charged to the same budget as
	// HTTP bodies while its request runs (the request's params point into
	// it), so that MaxInflight long lines cannot hold more than
	// Options.MaxBufferedBodyBytes.
	if n := int64(len(line)); n > freeBodyBytes {
		if !s.budget.take(n) {
			sc.sendError(mcp.ID{}, errBodyBudget)
			return
		}
		sc.charged = n
		defer func() {
			s.budget.give(sc.charged) // not taken by a request
			sc.charged = 0
		}()
	}
	if !jsonlimit.Valid(line, s.opts.MaxJSONDepth) {
		if json.Valid(line) {
			sc.sendError(mcp.ID{}, errTooDeep)
		} else {
			sc.sendError(mcp.ID{}, errParse)
		}
		return
	}
	env, perr := decodeEnvelope(line)
	if perr != nil {
		sc.sendError(env.id, perr)
		return
	}
	if env.response {
		sc.answer(line, env.id)
		return
	}
	req := env.req
	if req.Method == mcp.NotificationCancelled && req.IsNotification() {
		// Either era: a modern client's cancellation carries no _meta.
		sc.cancelRequest(req)
		return
	}
	var p rawParams
	if req.Params != nil {
		if err := p.decode(req.Params); err != nil {
			if !req.IsNotification() {
				sc.sendError(req.ID, invalidParams("Invalid params: malformed params"))
			}
			return
		}
	}
	if p.Meta != nil && p.Meta.ProtocolVersion != "" {
		sc.modern(req, &p)
		return
	}
	sc.legacyMessage(req, &p)
}

// modern serves a request of the 2026-07-28 era: the _meta checks, then
// the shared pipeline in a goroutine of its own.
func (sc *stdioConn) modern(req *mcp.Request, p *rawParams) {
	if req.IsNotification() {
		return // client notifications other than cancellation are ignored
	}
	if perr := decodeMeta(req, p); perr != nil {
		sc.sendError(req.ID, perr)
		return
	}
	if perr := sc.ep.checkVersion(p.Meta.ProtocolVersion); perr != nil {
		sc.sendError(req.ID, perr)
		return
	}
	sc.start(req, req.Method == mcp.MethodSubscriptionsListen, func(in inbound) {
		sc.ep.dispatch(sc.srv, in, req, p)
	})
}

// start runs serve for req in a goroutine of its own, under a context the
// client's notifications/cancelled ends, once a slot is free. A listen
// the server ends (not the client) is followed by notifications/cancelled
// naming it.
func (sc *stdioConn) start(req *mcp.Request, listen bool, serve func(in inbound)) {
	select {
	case sc.slots <- struct{}{}:
	case <-sc.reading:
		return
	}
	charged := sc.charged
	sc.charged = 0
	ctx, cancel := context.WithCancel(sc.ctx)
	key := string(req.ID.Raw())
	me := &stdioInflight{cancel: cancel, listen: listen}
	sc.mu.Lock()
	sc.inflight[key] = me
	sc.mu.Unlock()
	sc.wg.Add(1)
	go func() { // owned by the connection: shutdown waits for it
		defer sc.wg.Done()
		defer func() { <-sc.slots }()
		defer sc.srv.budget.give(charged)
		defer cancel()
		defer func() {
			sc.mu.Lock()
			if sc.inflight[key] == me {
				delete(sc.inflight, key)
			}
			sc.mu.Unlock()
		}()
		st := newMessageStream(stdioSink{w: sc.w, ctx: ctx})
		serve(inbound{r: stdioRequest(ctx), stream: st, identity: sc.opts.Identity})
		if listen && ctx.Err() == nil {
			sc.w.Send(ctx, listenCancelled(req.ID))
		}
	}()
}

// stdioRequest is the request carrier of the shared pipeline on stdio:
// only its context is real. Its Header is nil (nothing is mirrored), and it
// is not HTTP/1.1, so no stream is taken over from net/http.
func stdioRequest(ctx context.Context) *http.Request {
	r := &http.Request{Method: http.MethodPost, Proto: "stdio"}
	return r.WithContext(ctx)
}

// listenCancelled is the notifications/cancelled the server sends when it
// ends a subscriptions/listen on stdio.
func listenCancelled(id mcp.ID) []byte {
	params := append([]byte(`{"requestId":`), id.Raw()...)
	params = append(params, `,"reason":"subscription ended by the server"}`...)
	return mcp.AppendNotification(nil, mcp.NotificationCancelled, params)
}

// cancelRequest acts on a modern notifications/cancelled: the request it
// names, if running, is canceled and sends nothing more.
func (sc *stdioConn) cancelRequest(req *mcp.Request) {
	id, ok := cancelledID(req)
	if !ok {
		return
	}
	sc.mu.Lock()
	ic := sc.inflight[string(id.Raw())]
	sc.mu.Unlock()
	if ic != nil {
		ic.cancel()
	}
}

// cancelledID returns the request a notifications/cancelled names.
func cancelledID(req *mcp.Request) (mcp.ID, bool) {
	if req.Params == nil {
		return mcp.ID{}, false
	}
	var cp struct {
		RequestID mcp.ID `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &cp) != nil || cp.RequestID.IsZero() {
		return mcp.ID{}, false
	}
	return cp.RequestID, true
}

// shutdown ends the connection after its input: listens end at once,
// other requests get DrainTimeout, then everything is canceled (every
// request derives from sc.ctx, those of a reused ID included), and the
// output gets DrainTimeout more to take what is queued; after that the
// writer is abandoned (marked failed). It returns the output's error, if
// any: the write error, or errFlushTimeout.
func (sc *stdioConn) shutdown() error {
	sc.mu.Lock()
	for _, ic := range sc.inflight {
		if ic.listen {
			ic.cancel()
		}
	}
	sc.mu.Unlock()
	drained := make(chan struct{})
	go func() { // ends when every request has: bounded by the cancel below
		sc.wg.Wait()
		close(drained)
	}()
	t := time.NewTimer(sc.opts.DrainTimeout)
	select {
	case <-drained:
	case <-t.C:
		sc.cancelAll()
		<-drained
	}
	t.Stop()
	sc.closeSession()
	err := sc.w.Close(sc.opts.DrainTimeout)
	if errors.Is(err, stdioframe.ErrFlushTimeout) {
		return errFlushTimeout
	}
	return err
}

// errFlushTimeout is the output's error when shutdown gave up waiting for
// it to take what was queued (stdioframe.ErrFlushTimeout).
const errFlushTimeout = streamError("server: the stdio output was not flushed within DrainTimeout; the rest was dropped")

// stdioSink is the messageSink of one request on a stdio connection: its
// messages go to the connection's writer until the request's context ends
// (the client canceled it or left), after which nothing more is sent for
// it, as the stdio transport requires.
type stdioSink struct {
	w   *stdioframe.Writer
	ctx context.Context
}

func (s stdioSink) send(msg []byte) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	return s.w.Send(s.ctx, msg)
}
