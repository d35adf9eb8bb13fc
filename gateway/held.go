package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// Held calls: the input requests of a 2025-era upstream during a call
// passed through inline.
//
// A 2025-era upstream asks for input with a request on the call's stream
// (or on an --upstream-cmd process's output) and waits for the answer on
// that same call: the call cannot be made again like a 2026-07-28 input
// round. So the gateway keeps the upstream call open and asks its own
// client with an input_required result whose requestState names the held
// call (a random ID, sealed by the server to the principal, the tool and
// the arguments). A 2025-era client's session gets the request as a real
// server-to-client request (the server runs the handler again with the
// answer on the same POST); a 2026-07-28 client calls again with the
// answer. Either way the handler finds the held call by its ID, sends the
// answer upstream on the open request, and follows the call on.
//
// Bounds: Options.MaxHeldCalls calls held at once (a request beyond it is
// answered upstream with an error), Options.HoldTimeout for the client's
// answer (then the upstream request is answered with an error and the call
// cancelled), maxHeldRounds requests per call, and the tool's timeout for
// each stretch the call runs with a client attached.

// maxHeldRounds bounds the input requests one held call relays.
const maxHeldRounds = 10

// holdGrace is how long a held call whose client did not answer in time
// runs on after its upstream request was answered with an error, so that
// the error reaches the upstream before the call is cancelled.
const holdGrace = time.Second

var (
	// errRoundTimeout cancels a held call that ran for longer than its
	// tool's timeout with a client attached.
	errRoundTimeout = errors.New("gateway: the upstream call ran past its deadline")
	// errHoldExpired cancels a held call whose client did not answer in
	// time.
	errHoldExpired = errors.New("gateway: the client did not answer the upstream's input request in time")
	// errHeldGone ends the held calls of a closed gateway.
	errHeldGone = errors.New("gateway: closed")
)

// errTooManyHeld answers an upstream request beyond Options.MaxHeldCalls.
var errTooManyHeld = mcp.NewError(mcp.CodeInternalError, "The gateway holds too many calls waiting for input.")

// errNotHeld answers a call whose requestState names no call held by this
// process, for whatever reason (finished, expired, held by another
// gateway process, another principal's): one answer for all.
var errNotHeld = mcp.NewError(mcp.CodeInvalidParams,
	"Invalid params: the upstream call these answers belong to is not open on this gateway process "+
		"(it ended, its input deadline passed, or another gateway process holds it); call the tool again without requestState.")

// heldCall is one upstream call of an inline tool toward a 2025-era
// upstream. Its goroutine (run) makes the call; the downstream requests
// attach to it one after the other (the first call, then each answer).
type heldCall struct {
	id         string
	who        server.Identity
	name       string
	timeout    time.Duration
	cancel     context.CancelCauseFunc
	callCtx    context.Context
	asks       chan *heldAsk // the upstream's requests, from its relay handler
	done       chan struct{} // closed once the call returned, res and err set
	cctx       context.Context
	res        *mcp.CallToolResult
	err        error
	holdFor    time.Duration
	onProgress func(client.Progress) // of the attached request, or nil

	mu      sync.Mutex
	pending *heldAsk // the request the client is asked, while held
	rounds  int
	gen     int // of the timer, bumped by every phase change
	timer   *time.Timer
	expired bool
}

// heldAsk is one request of the upstream waiting for its answer.
type heldAsk struct {
	key   string
	req   *mcp.InputRequest
	reply chan heldReply // buffered: the answer is sent once
}

type heldReply struct {
	raw json.RawMessage
	err error
}

// heldCalls is the gateway's registry of held calls.
type heldCalls struct {
	mu    sync.Mutex
	calls map[string]*heldCall
	ctx   context.Context // ends every held call on Close
	stop  context.CancelCauseFunc
	wg    sync.WaitGroup
}

func newHeldCalls() *heldCalls {
	ctx, stop := context.WithCancelCause(context.Background())
	return &heldCalls{calls: map[string]*heldCall{}, ctx: ctx, stop: stop}
}

// close cancels every held call and waits for their goroutines.
func (hc *heldCalls) close() {
	hc.stop(errHeldGone)
	hc.wg.Wait()
}

// passThroughHeld passes a call through to a 2025-era upstream, relaying
// its input requests as the call's input rounds: a first call starts the
// upstream call, a call carrying a held call's requestState answers it.
func (g *Gateway) passThroughHeld(ctx context.Context, req *server.Request, name string, timeout time.Duration, progress func(client.Progress)) (*mcp.CallToolResult, error) {
	state := req.RequestState()
	if len(state) == 0 {
		h := g.startHeld(ctx, req, name, timeout)
		h.attach(progress)
		return g.followHeld(ctx, req, h)
	}
	h := g.held.take(string(state), req.Identity)
	if h == nil {
		return nil, errNotHeld
	}
	h.mu.Lock()
	a := h.pending
	h.mu.Unlock()
	ans, ok := req.InputResponses[a.key]
	h.attach(progress)
	if !ok {
		// Missing answers: the same round again (not an error).
		if g.held.hold(g.opts.MaxHeldCalls, h, a) {
			return nil, server.InputRequired(mcp.InputRequests{a.key: a.req}, []byte(h.id))
		}
		a.reply <- heldReply{err: errTooManyHeld}
	} else {
		a.reply <- heldReply{raw: ans}
	}
	return g.followHeld(ctx, req, h)
}

// startHeld starts the upstream call of h in a goroutine the registry
// owns; it ends with the call, which the registry's close, h's timer or
// the attached request's end cancel.
func (g *Gateway) startHeld(ctx context.Context, req *server.Request, name string, timeout time.Duration) *heldCall {
	h := &heldCall{
		id: newHeldID(), who: req.Identity, name: name, timeout: timeout, holdFor: g.opts.HoldTimeout,
		asks: make(chan *heldAsk), done: make(chan struct{}),
	}
	// The call outlives the request that started it (values such as the
	// trace context stay), until the registry closes.
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(g.held.ctx, func() { cancel(errHeldGone) })
	h.callCtx, h.cancel = cctx, cancel
	rctx, relayed := withInlineRelay(cctx, nil, false)
	relayed.held = h
	args := req.Arguments
	g.held.wg.Go(func() {
		defer stop()
		defer close(h.done)
		defer h.stopTimer()
		// g.call's own deadline bounds the whole call, however many
		// rounds it takes; h's timer bounds each stretch.
		bound := time.Duration(maxHeldRounds+1) * (timeout + h.holdFor + holdGrace)
		h.cctx, h.res, h.err = g.call(rctx, bound, name, args, h.progress)
		cancel(nil)
	})
	return h
}

// followHeld waits, for the downstream request ctx, for the next event of
// the held call h: a request of the upstream (the request's input round)
// or the call's end (its outcome).
func (g *Gateway) followHeld(ctx context.Context, req *server.Request, h *heldCall) (*mcp.CallToolResult, error) {
	for {
		select {
		case a := <-h.asks:
			if err := g.admitAsk(req, h, a); err != nil {
				a.reply <- heldReply{err: err}
				continue
			}
			return nil, server.InputRequired(mcp.InputRequests{a.key: a.req}, []byte(h.id))
		case <-h.done:
			return g.inlineOutcome(ctx, h.cctx, h.name, h.timeout, h.res, heldError(h))
		case <-ctx.Done(): // the downstream request ended: so does the call
			h.cancel(context.Cause(ctx))
			<-h.done
			return nil, context.Cause(ctx)
		}
	}
}

// heldError is the error of h's finished call, with the cause that ended
// it when h cancelled it itself.
func heldError(h *heldCall) error {
	if h.err == nil {
		return nil
	}
	switch cause := context.Cause(h.callCtx); {
	case errors.Is(cause, errRoundTimeout), errors.Is(cause, errHoldExpired), errors.Is(cause, errHeldGone):
		return cause
	}
	return h.err
}

// admitAsk decides whether the upstream's request a becomes the input
// round of the request req: the client must have declared the capability
// it needs (else the upstream gets -32601, as from a client without it),
// and the bounds of held calls and rounds must allow it. On success h is
// held under its ID.
func (g *Gateway) admitAsk(req *server.Request, h *heldCall, a *heldAsk) error {
	if !supportsInput(req.Capabilities(), a.req) {
		g.log.Warn("gateway: an upstream input request is refused: the client did not declare the capability", "tool", h.name, "method", a.req.Method)
		return mcp.MethodNotFound()
	}
	h.mu.Lock()
	h.rounds++
	rounds := h.rounds
	h.mu.Unlock()
	if rounds > maxHeldRounds {
		g.log.Warn("gateway: an upstream input request is refused: too many rounds", "tool", h.name)
		return mcp.NewError(mcp.CodeInternalError, "The gateway relays at most 10 input requests per call.")
	}
	if !g.held.hold(g.opts.MaxHeldCalls, h, a) {
		g.log.Warn("gateway: an upstream input request is refused: MaxHeldCalls calls wait for input", "tool", h.name)
		return errTooManyHeld
	}
	return nil
}

// supportsInput reports whether caps declare what the input request r
// needs: elicitation in its mode, or sampling.
func supportsInput(caps *mcp.ClientCapabilities, r *mcp.InputRequest) bool {
	switch r.Method {
	case mcp.MethodElicitationCreate:
		if mode, err := r.ElicitMode(); err == nil && mode == mcp.ElicitModeURL {
			return caps.SupportsElicitationURL()
		}
		return caps.SupportsElicitationForm()
	case mcp.MethodSamplingCreateMessage:
		return caps != nil && caps.Sampling != nil
	}
	return false
}

// canAnswerInput reports whether caps declare any input an upstream may
// ask for: a client without would have every request refused, so its
// calls need not be held.
func canAnswerInput(caps *mcp.ClientCapabilities) bool {
	return caps.SupportsElicitationForm() || caps.SupportsElicitationURL() || caps != nil && caps.Sampling != nil
}

// hold registers h, waiting for the client's answer to a, within max held
// calls, and starts its hold deadline. It reports false when max are held.
func (hc *heldCalls) hold(max int, h *heldCall, a *heldAsk) bool {
	// pending is set before h can be taken from the registry; when
	// the registry is full, h stays attached as it was.
	h.mu.Lock()
	attached := h.onProgress
	h.pending, h.onProgress = a, nil
	h.resetTimerLocked(h.holdFor, func() { hc.expire(h) })
	h.mu.Unlock()
	hc.mu.Lock()
	full := len(hc.calls) >= max
	if !full {
		hc.calls[h.id] = h
	}
	hc.mu.Unlock()
	if full {
		h.attach(attached)
	}
	return !full
}

// take removes the call held under id for who, or returns nil.
func (hc *heldCalls) take(id string, who server.Identity) *heldCall {
	hc.mu.Lock()
	defer hc.mu.Unlock()
	h := hc.calls[id]
	if h == nil || h.who.Principal != who.Principal || h.who.Tenant != who.Tenant {
		return nil
	}
	delete(hc.calls, id)
	return h
}

// expire ends the hold of h, unless a request took it first: its pending
// upstream request is answered with an error, and the call is cancelled
// holdGrace later.
func (hc *heldCalls) expire(h *heldCall) {
	hc.mu.Lock()
	if hc.calls[h.id] != h {
		hc.mu.Unlock()
		return
	}
	delete(hc.calls, h.id)
	hc.mu.Unlock()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.expired = true
	h.pending.reply <- heldReply{err: mcp.NewError(mcp.CodeInternalError, "The client did not answer in time.")}
	h.resetTimerLocked(holdGrace, func() { h.cancel(errHoldExpired) })
}

// attach makes progress the sink of the call's progress notifications and
// starts the deadline of the stretch the call now runs attached.
func (h *heldCall) attach(progress func(client.Progress)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.onProgress, h.pending = progress, nil
	h.resetTimerLocked(h.timeout, func() { h.cancel(errRoundTimeout) })
}

// resetTimerLocked replaces h's timer by one running fn after d, unless
// the phase changes first.
func (h *heldCall) resetTimerLocked(d time.Duration, fn func()) {
	if h.timer != nil {
		h.timer.Stop()
	}
	h.gen++
	gen := h.gen
	h.timer = time.AfterFunc(d, func() {
		h.mu.Lock()
		current := h.gen == gen
		h.mu.Unlock()
		if current {
			fn()
		}
	})
}

func (h *heldCall) stopTimer() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.gen++
	if h.timer != nil {
		h.timer.Stop()
	}
}

// progress passes an upstream progress notification to the attached
// request; while the call is held, there is none to pass it to.
func (h *heldCall) progress(p client.Progress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.onProgress != nil {
		h.onProgress(p)
	}
}

// ask is the relay handler's side: it hands the upstream's request to the
// attached downstream request and waits for the answer, within the call's
// context ctx.
func (h *heldCall) ask(ctx context.Context, method string, raw json.RawMessage, out any) error {
	h.mu.Lock()
	expired := h.expired
	h.mu.Unlock()
	if expired {
		return mcp.NewError(mcp.CodeInternalError, "The client did not answer in time.")
	}
	a := &heldAsk{key: inputKey(method, raw), req: &mcp.InputRequest{Method: method, Params: raw}, reply: make(chan heldReply, 1)}
	select {
	case h.asks <- a:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	select {
	case rep := <-a.reply:
		if rep.err != nil {
			return rep.err
		}
		if err := json.Unmarshal(rep.raw, out); err != nil {
			return fmt.Errorf("gateway: the client's answer to %s: %w", method, err)
		}
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// newHeldID is an unguessable ID of a held call.
func newHeldID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}
