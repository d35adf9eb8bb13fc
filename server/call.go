package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"runtime/debug"

	"github.com/taskwire/taskwire/internal/jsonlimit"
	"github.com/taskwire/taskwire/mcp"
)

// call is the state of one admitted request.
type call struct {
	srv    *Server
	ep     *Endpoint
	r      *http.Request
	req    *mcp.Request
	params *rawParams
	id     Identity
	stream *responseStream
	// detached is set by a method that goes on after its handler returns
	// (a listen stream taken over from net/http); the method then calls
	// finish with the request's outcome when it really ends.
	detached bool
	finish   func(Outcome)
	// legacy is set for a request of a 2025-era session (legacy_calls.go).
	legacy *legacyCall
	// span is the request's span (trace.go); createdTask is the task a
	// tools/call answered with, for the span.
	span        RequestSpan
	createdTask string
	creationKey string // see inbound.creationKey
}

// inbound is what a transport hands the admitted half of the pipeline
// besides the decoded request: the stream its messages go to, the
// request's context, and, for admission, how the caller is known.
//
//   - r carries the request's context, which ends when the client leaves or
//     cancels the request. Over HTTP it is the HTTP request, whose header
//     and remote address the admission controller and the mirrored
//     parameters read. A transport without HTTP (stdio) gives a request
//     with a nil Header: nothing is mirrored there.
//   - stream is where notifications, server-to-client requests and the
//     final response go (an HTTP response, or whole messages to a
//     messageSink).
//   - identity, when set, is the caller as the transport knows it (stdio:
//     the process's local principal); Options.Admission then does not run.
type inbound struct {
	r        *http.Request
	stream   *responseStream
	identity *Identity
	charged  bool // the request limiter was charged before the session lookup (2025 HTTP)
	// creationKey is the idempotency key of a Server.CreateTask call
	// (Request.CreationKey).
	creationKey string
}

// handle runs the admitted half of the pipeline for an HTTP request.
func (ep *Endpoint) handle(s *Server, w http.ResponseWriter, r *http.Request, req *mcp.Request, p *rawParams) {
	ep.dispatch(s, inbound{r: r, stream: newResponseStream(w, s.opts.KeepAliveInterval)}, req, p)
}

// dispatch runs the admitted half of the pipeline for a request a transport
// decoded and checked: method lookup, admission, lifecycle, the request
// limiter, the method, and the response on in.stream.
func (ep *Endpoint) dispatch(s *Server, in inbound, req *mcp.Request, p *rawParams) {
	r, st := in.r, in.stream
	method, ok := ep.methods[req.Method]
	if !ok {
		s.rejectOn(ep, st, req.ID, errMethodNotFound)
		return
	}
	if perr := ep.taskGate(req.Method, p); perr != nil {
		s.rejectOn(ep, st, req.ID, perr)
		return
	}
	ctx := r.Context()
	var id Identity
	if in.identity != nil {
		id = *in.identity
	} else {
		var err error
		id, err = s.opts.Admission.Admit(ctx, &AdmissionRequest{
			Endpoint: ep.opts.Name, Method: req.Method, Tool: toolName(req.Method, p), Header: r.Header, RemoteAddr: r.RemoteAddr,
			HTTPMethod: r.Method, Host: r.Host, Path: r.URL.Path,
		})
		if err != nil {
			var (
				rej *Rejection
				me  *mcp.Error
			)
			if !errors.As(err, &rej) && !errors.As(err, &me) {
				s.logger.Error("admission controller failed", "endpoint", ep.opts.Name, "err", redactErr(err, credentials(r.Header)...))
			}
			s.rejectOn(ep, st, req.ID, asProtocolError(err))
			return
		}
	}

	info := RequestInfo{Endpoint: ep.opts.Name, Method: methodLabel(req.Method)}
	start := s.opts.now()
	var version string
	if p != nil && p.Meta != nil {
		version = p.Meta.ProtocolVersion
	}
	ctx, span := s.startTrace(ctx, r, info, version, p)
	s.opts.Observer.RequestStarted(ctx, info)
	outcome := OutcomeProtocolError
	c := &call{srv: s, ep: ep, r: r, req: req, params: p, id: id, stream: st, span: span, creationKey: in.creationKey}
	c.finish = func(outcome Outcome) {
		elapsed := s.opts.now().Sub(start)
		s.opts.Observer.RequestFinished(ctx, info, outcome, elapsed)
		s.opts.Metrics.RequestFinished(info, outcome, elapsed)
		s.toolCallFinished(ep, req.Method, p, outcome, elapsed)
		c.endTrace(outcome)
	}
	defer func() {
		if !c.detached {
			c.finish(outcome)
		}
	}()
	if !chargesAfterLookup[req.Method] {
		if perr := c.chargeRequestLimiter(); perr != nil {
			outcome = OutcomeRateLimited
			st.finishError(req.ID, perr)
			return
		}
	}
	timeout := s.opts.RequestTimeout
	if req.Method == mcp.MethodSubscriptionsListen {
		timeout = s.opts.Subscriptions.MaxLifetime
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	outcome = c.run(ctx, method)
}

// chargesAfterLookup lists the methods that charge the request limiter
// themselves, after target lookup and capability checks, so that requests
// that cannot succeed do not consume tokens.
var chargesAfterLookup = map[string]bool{
	mcp.MethodToolsCall: true, mcp.MethodPromptsGet: true, mcp.MethodResourcesRead: true,
}

// chargeRequestLimiter takes one token from the request limiter, if any.
func (c *call) chargeRequestLimiter() *protocolError {
	if lim := c.srv.opts.RequestLimiter; lim != nil {
		if ok, wait := lim.Allow(c.id.rateKey()); !ok {
			return rateLimited(wait)
		}
	}
	return nil
}

// run executes method and writes its response, returning the outcome.
func (c *call) run(ctx context.Context, method methodFunc) Outcome {
	res, outcome, perr := method(ctx, c)
	if c.detached {
		return outcome // the method answers and calls c.finish itself
	}
	return c.respond(res, outcome, perr)
}

// respond writes the response of a method that returned res, outcome and
// perr, and returns the request's outcome (see settle). A call of a
// 2025-era session the client canceled (notifications/cancelled, DELETE
// of its session, or leaving) gets no response: the 2025 transport sends
// none to a canceled request. Its errors have their session status
// (legacyStatus).
func (c *call) respond(res any, outcome Outcome, perr *protocolError) Outcome {
	if c.legacy != nil {
		if c.r.Context().Err() != nil {
			c.stream.abandon()
			return c.settle(outcome, perr, false)
		}
		perr = legacyStatus(perr)
	}
	if perr == nil {
		var body []byte
		body, perr = c.encode(res)
		if perr == nil {
			return c.settle(outcome, nil, c.stream.finishResult(c.req.ID, body))
		}
		outcome = OutcomeInternalError
	}
	return c.settle(outcome, perr, c.stream.finishError(c.req.ID, perr))
}

// settle decides the outcome of a request, in one place for both eras: the
// method reported outcome, and perr when it failed; written says whether
// this response reached the stream.
//
//   - A response that was not written went to a client that left (or a
//     detached call, or a stream that closed): canceled; otherwise the
//     deadline watcher answered first: timeout.
//   - A written result keeps the method's outcome.
//   - A written error has the outcome of its kind (outcomeOf), except
//     that a method's internal error stays one when the error is a plain
//     JSON-RPC error.
func (c *call) settle(outcome Outcome, perr *protocolError, written bool) Outcome {
	switch {
	case !written && (perr == errStreamGone || c.detached || c.r.Context().Err() != nil):
		return OutcomeCanceled
	case !written:
		return OutcomeTimeout
	case perr == nil:
		return outcome
	}
	if o := outcomeOf(perr); o != OutcomeProtocolError || outcome != OutcomeInternalError {
		return o
	}
	return OutcomeInternalError
}

// outcomeOf is the outcome of a request that fails with perr: the server's
// own errors by identity (deadline, busy, internal), then by HTTP status
// (429 rate limited, 503 busy); any other error is a protocol error.
func outcomeOf(perr *protocolError) Outcome {
	switch perr {
	case errDeadline:
		return OutcomeTimeout
	case errQueueFull, errTaskQueueTimeout:
		return OutcomeBusy
	case errInternal, errStoreUnavailable:
		return OutcomeInternalError
	}
	switch perr.status {
	case http.StatusTooManyRequests:
		return OutcomeRateLimited
	case http.StatusServiceUnavailable:
		return OutcomeBusy
	}
	return OutcomeProtocolError
}

// encode renders a result with the server info and checks the result limits.
func (c *call) encode(res any) ([]byte, *protocolError) {
	if c.legacy != nil {
		return c.encodeLegacy(res)
	}
	if raw, ok := res.(json.RawMessage); ok {
		return c.checkLimits(raw)
	}
	if r, ok := res.(*mcp.CallToolResult); ok {
		if b, ok := c.ep.appendToolResult(nil, r); ok {
			return c.checkLimits(b)
		}
	}
	b, err := json.Marshal(c.ep.withMeta(res))
	if err != nil {
		c.srv.logger.Error("result could not be encoded", "endpoint", c.ep.opts.Name, "method", methodLabel(c.req.Method), "err", err)
		return nil, errInternal
	}
	return c.checkLimits(b)
}

// checkLimits applies the size and depth limits to an encoded result.
func (c *call) checkLimits(b []byte) ([]byte, *protocolError) {
	if len(b) > c.srv.opts.MaxResultBytes || !jsonlimit.DepthWithin(b, c.srv.opts.MaxJSONDepth) {
		c.srv.logger.Warn("result exceeds the configured limits", "endpoint", c.ep.opts.Name, "method", methodLabel(c.req.Method))
		return nil, errInternal
	}
	return b, nil
}

// Handler runs an application handler for an admitted request. The result is
// one of *mcp.CallToolResult, *mcp.GetPromptResult, *mcp.ReadResourceResult
// or *mcp.CompleteResult, depending on the method.
type Handler func(ctx context.Context, req *Request) (any, error)

// Interceptor wraps every application handler. It may inspect the request,
// short-circuit with its own result or error, or call next. It runs inside
// the handler pool and under the request deadline, before input validation.
type Interceptor func(ctx context.Context, req *Request, next Handler) (any, error)

// runHandler runs h for the request inside the bounded pool, through the
// interceptor, under the request deadline; see runBounded. An
// InputRequiredError becomes the sealed input_required result.
func (c *call) runHandler(ctx context.Context, rq *Request, h Handler) (any, *protocolError) {
	res, err := c.runBoundedAs(ctx, c.taskOperation(rq), func(ctx context.Context) (any, error) {
		if rq.taskCreation != nil {
			done, perr := c.checkActiveTasks(ctx)
			if perr != nil {
				return nil, perr
			}
			defer done()
		}
		if ic := c.srv.opts.Interceptor; ic != nil {
			return ic(ctx, rq, h)
		}
		return h(ctx, rq)
	})
	if err != nil {
		var ire *InputRequiredError
		if errors.As(err, &ire) {
			return c.inputRequired(rq, ire)
		}
		return nil, asProtocolError(err)
	}
	return res, nil
}

// runBounded runs fn inside the bounded pool under the request deadline,
// turning a panic into the fixed internal error. When the deadline passes
// while fn runs, the client is answered with HTTP 504 at once and fn's
// context is canceled; fn keeps its pool slot until it returns.
func (c *call) runBounded(ctx context.Context, fn func(ctx context.Context) (any, error)) (res any, err error) {
	return c.runBoundedAs(ctx, c.taskOperation(nil), fn)
}

// runBoundedAs is runBounded for a task operation or not (see
// handlerPool).
func (c *call) runBoundedAs(ctx context.Context, taskOp bool, fn func(ctx context.Context) (any, error)) (res any, err error) {
	if err := c.srv.pool.acquire(ctx, taskOp); err != nil {
		return nil, err
	}
	defer c.srv.pool.release(taskOp)
	return c.runUnderDeadline(ctx, fn)
}

// runUnderDeadline runs fn under the request deadline like runBounded, but
// outside the handler pool: for protocol work that must not fail because
// the pool is busy, such as verifying a task that already exists.
func (c *call) runUnderDeadline(ctx context.Context, fn func(ctx context.Context) (any, error)) (res any, err error) {
	stop := context.AfterFunc(ctx, func() {
		if c.r.Context().Err() != nil {
			c.stream.abandon()
			return
		}
		c.stream.finishError(c.req.ID, errDeadline)
	})
	defer stop()
	defer func() {
		if v := recover(); v != nil {
			c.srv.logger.Error("handler panicked", "endpoint", c.ep.opts.Name, "method", methodLabel(c.req.Method), "panic", fmt.Sprintf("%T", v), "stack", string(debug.Stack()))
			res, err = nil, errInternal
		}
		if ctx.Err() != nil {
			// The deadline watcher has answered (504) or abandoned the
			// response; run reports which from the stream.
			res, err = nil, errDeadline
		}
	}()
	return fn(ctx)
}

// newRequest builds the handler-facing view of the call. When the client
// echoes a requestState, it must open under this request's binding; otherwise
// the request fails with -32602 before any handler runs.
func (c *call) newRequest(name string) (*Request, *protocolError) {
	rq := &Request{
		Method:         c.req.Method,
		Endpoint:       c.ep.opts.Name,
		Name:           name,
		Identity:       c.id,
		Meta:           c.params.Meta,
		Arguments:      c.params.Arguments,
		InputResponses: c.params.InputResponses,
		id:             c.req.ID,
		stream:         c.stream,
		creationKey:    c.creationKey,
	}
	if enc := c.params.RequestState; enc != nil {
		state, round, err := c.srv.sealer.open(*enc, c.binding(name))
		if err != nil {
			return nil, errBadState
		}
		rq.state, rq.round = state, round
	}
	return rq, nil
}

func (c *call) binding(name string) stateBinding {
	return stateBinding{
		Principal: c.id.Principal, Tenant: c.id.Tenant, Endpoint: c.ep.opts.Name,
		Method: c.req.Method, Target: name, Digest: argumentsDigest(c.params.Arguments),
	}
}

// inputRequired turns a handler's request for input into the
// input_required result: every input request must be one the client declared
// a capability for, and the application state is sealed to this request.
func (c *call) inputRequired(rq *Request, ire *InputRequiredError) (any, *protocolError) {
	if len(ire.Requests) == 0 {
		c.srv.logger.Error("handler asked for input without input requests", "endpoint", c.ep.opts.Name, "method", methodLabel(c.req.Method))
		return nil, errInternal
	}
	if missing := missingCapabilitiesOf(rq.Capabilities(), inputCapabilities(ire.Requests)); missing != nil {
		return nil, missingCapabilities(missing)
	}
	if rq.round+1 > maxStateRounds {
		return nil, invalidParams("Invalid params: too many input rounds")
	}
	sealed, err := c.srv.sealer.seal(c.binding(rq.Name), rq.round+1, ire.State)
	if err != nil {
		c.srv.logger.Error("request state could not be sealed", "endpoint", c.ep.opts.Name, "err", err)
		return nil, errInternal
	}
	return &mcp.InputRequiredResult{InputRequests: ire.Requests, RequestState: sealed}, nil
}

// inputCapabilities returns the client capabilities the input requests
// need: an elicitation mode, sampling or roots for each.
func inputCapabilities(reqs mcp.InputRequests) *mcp.ClientCapabilities {
	var need mcp.ClientCapabilities
	for _, ir := range reqs {
		if ir == nil {
			continue
		}
		switch ir.Method {
		case mcp.MethodElicitationCreate:
			if need.Elicitation == nil {
				need.Elicitation = &mcp.ElicitationCapability{}
			}
			if mode, err := ir.ElicitMode(); err == nil && mode == "url" {
				need.Elicitation.URL = mcp.Object{}
			} else {
				need.Elicitation.Form = mcp.Object{}
			}
		case mcp.MethodSamplingCreateMessage:
			need.Sampling = &mcp.SamplingCapability{}
		case mcp.MethodRootsList:
			need.Roots = &mcp.RootsCapability{}
		}
	}
	return &need
}
