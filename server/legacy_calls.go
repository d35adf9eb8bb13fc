package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/session"
)

// legacyCall is what a 2025-era request carries besides its call: the
// session it runs in and the server-to-client channel of its POST. It is
// the seam the 2025-11-25 tasks layer (server/legacy_tasks*.go) builds on:
//
//   - session: the session record (negotiated version, log level, owner)
//     and the client's capabilities as declared in initialize
//     (session.legacyCaps, including the experimental tasks capability);
//   - c.stream: the POST's response stream; notifications and
//     server-to-client requests go there (c.stream.sendMessage);
//   - request / ask: send server-to-client requests on that stream and wait,
//     under ctx, for the client's answers (separate POSTs, or forwarded by
//     the AnswerRelay from another node);
//   - notifySession: an unsolicited notification on the session's GET
//     stream (best effort: dropped when no GET stream is open on this node
//     or its queue is full); Server.notifyLegacySession does the same by
//     session key, outside any call (task status events);
//   - c.id, c.params, c.req: the admitted identity and the request, as for
//     modern calls; c.params.Meta is synthesized from the session
//     (ProtocolVersion, ClientCapabilities, LogLevel) with the request's
//     progressToken and trace context.
//
// The tasks layer plugs in through legacyHooks (capabilities, tools/list
// view, tools/call of task tools, extra methods, the request deadline).
type legacyCall struct {
	c       *call
	session *cachedSession
}

// version returns the revision the session negotiated.
func (lc *legacyCall) version() string { return lc.session.rec.ProtocolVersion }

// notifySession queues a notification for the session's GET stream and
// reports whether it was taken.
func (lc *legacyCall) notifySession(method string, params []byte) bool {
	return lc.c.srv.notifyLegacySession(lc.session.rec.Key, method, params)
}

// notifyLegacySession queues a notification for the GET stream of the
// session whose store key is key, if that stream is open on this node, and
// reports whether it was taken. It never blocks: a full queue drops it.
func (s *Server) notifyLegacySession(key, method string, params []byte) bool {
	if s.legacy == nil {
		return false
	}
	ls := s.legacy.live.lookup(key)
	if ls == nil {
		return false
	}
	return ls.enqueue(mcp.AppendNotification(nil, method, params))
}

// legacyHooks are the seams the 2025-11-25 tasks layer fills in
// (Endpoint.legacyTaskHooks, server/legacy_tasks.go); a nil member keeps the
// default behaviour described on it.
type legacyHooks struct {
	// capabilities may add to the capabilities of an initialize result
	// (such as tasks) for a session of version whose client declared
	// client. Default: nothing added.
	capabilities func(version string, client *mcp.LegacyClientCapabilities, caps *mcp.LegacyServerCapabilities)
	// toolView decides how tools/list shows a tool that may create tasks
	// (optional or required) in the session: its execution member and
	// whether it is listed at all. Default: task-optional tools are listed
	// as ordinary ones; task-required tools are left out.
	toolView func(lc *legacyCall, t *toolEntry) (exec *mcp.ToolExecution, visible bool)
	// callTool runs tools/call of a tool that may create tasks in the
	// session. Default: a task-optional tool runs inline like any other; a
	// task-required one is refused with -32602 naming the reason.
	callTool func(ctx context.Context, lc *legacyCall, t *toolEntry) (any, Outcome, *protocolError)
	// methods are further legacy methods (tasks/get, tasks/result, ...).
	methods map[string]methodFunc
	// timeout may give a request a deadline other than
	// Options.RequestTimeout (def), such as the longer wait of a tool
	// call that waits inline for its task. It runs before the method,
	// with the request's params decoded. Default: def.
	timeout func(c *call, def time.Duration) time.Duration
}

// legacyMethodTable is the method table of legacy sessions: the endpoint's
// own methods (results re-encoded in 2025 shape) minus those of the modern
// era only, and the methods of the 2025 era.
func (ep *Endpoint) legacyMethodTable() map[string]methodFunc {
	m := map[string]methodFunc{
		mcp.MethodPing:            legacyPing,
		mcp.MethodLoggingSetLevel: legacySetLevel,
	}
	for name, f := range ep.methods {
		switch name {
		case mcp.MethodServerDiscover, mcp.MethodSubscriptionsListen,
			mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
			continue
		}
		m[name] = f
	}
	if ep.servesTools() {
		m[mcp.MethodToolsList] = ep.legacyListTools
		m[mcp.MethodToolsCall] = ep.legacyCallTool
	}
	if ep.servesResources() {
		m[mcp.MethodResourcesSubscribe] = legacySubscribe
		m[mcp.MethodResourcesUnsubscribe] = legacyUnsubscribe
	}
	for name, f := range ep.legacyHooks.methods {
		m[name] = f
	}
	return m
}

// legacyCapabilities are what an initialize result offers. List changes
// are announced on the GET stream (Server.NotifyListChanged).
func (ep *Endpoint) legacyCapabilities(version string, client *mcp.LegacyClientCapabilities) *mcp.LegacyServerCapabilities {
	c := &mcp.LegacyServerCapabilities{Logging: mcp.Object{}}
	if ep.servesTools() {
		c.Tools = &mcp.ToolsCapability{ListChanged: true}
	}
	if ep.servesResources() {
		c.Resources = &mcp.ResourcesCapability{Subscribe: true, ListChanged: true}
	}
	if ep.servesPrompts() {
		c.Prompts = &mcp.PromptsCapability{ListChanged: true}
	}
	if ep.completion != nil {
		c.Completions = mcp.Object{}
	}
	c.Extensions = ep.extensionCapabilities(nil)
	if h := ep.legacyHooks.capabilities; h != nil {
		h(version, client, c)
	}
	return c
}

// negotiate picks the revision of a new session: the requested one when
// the endpoint serves it, else the endpoint's latest 2025 revision.
func (ep *Endpoint) negotiate(requested string) string {
	if slices.Contains(ep.legacyVersions, requested) {
		return requested
	}
	return slices.Max(ep.legacyVersions)
}

var errBadInitialize = newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: initialize needs protocolVersion, capabilities and clientInfo"))

// legacyInitialize opens a session: it negotiates the revision, stores the
// session bound to the admitted identity and answers with its ID in
// Mcp-Session-Id. It charges the request limiter like any admitted
// request, which bounds how fast one caller can open sessions.
func (ep *Endpoint) legacyInitialize(s *Server, w http.ResponseWriter, r *http.Request, req *mcp.Request) {
	ip, perr := decodeInitialize(req)
	if perr != nil {
		s.reject(ep, w, req.ID, perr)
		return
	}
	id, perr := s.admit(ep, r, req.Method, "")
	if perr != nil {
		s.reject(ep, w, req.ID, perr)
		return
	}
	sid, res, perr := ep.openSession(r.Context(), r, s, ip, id)
	if perr != nil {
		writeError(w, req.ID, perr)
		return
	}
	w.Header().Set(mcp.HeaderSessionID, sid)
	writeResult(w, req.ID, res)
}

// decodeInitialize reads the params of an initialize request.
func decodeInitialize(req *mcp.Request) (*mcp.InitializeParams, *protocolError) {
	var ip mcp.InitializeParams
	if req.Params == nil || json.Unmarshal(req.Params, &ip) != nil || ip.ProtocolVersion == "" {
		return nil, errBadInitialize
	}
	return &ip, nil
}

// openSession runs an admitted initialize for every transport: the
// observer, metrics and tracer, the request limiter, the negotiation and
// the new session in the store. r is the HTTP request, whose headers carry
// the client's trace context, or nil (stdio). It returns the session's ID
// and the encoded initialize result, or the error to answer with.
func (ep *Endpoint) openSession(ctx context.Context, r *http.Request, s *Server, ip *mcp.InitializeParams, id Identity) (sid string, res []byte, perr *protocolError) {
	info := RequestInfo{Endpoint: ep.opts.Name, Method: methodLabel(mcp.MethodInitialize)}
	start := s.opts.now()
	ctx, span := s.startTrace(ctx, r, info, ip.ProtocolVersion, nil)
	s.opts.Observer.RequestStarted(ctx, info)
	outcome := OutcomeProtocolError
	defer func() {
		elapsed := s.opts.now().Sub(start)
		s.opts.Observer.RequestFinished(ctx, info, outcome, elapsed)
		s.opts.Metrics.RequestFinished(info, outcome, elapsed)
		span.End(FinishedRequest{Outcome: outcome, Principal: id.Principal, Tenant: id.Tenant})
	}()
	if lim := s.opts.RequestLimiter; lim != nil {
		if ok, wait := lim.Allow(id.rateKey()); !ok {
			outcome = OutcomeRateLimited
			return "", nil, rateLimited(wait)
		}
	}
	if ip.Capabilities == nil {
		ip.Capabilities = &mcp.LegacyClientCapabilities{}
	}
	caps, err := json.Marshal(ip.Capabilities)
	clientInfo, err2 := json.Marshal(ip.ClientInfo)
	if err != nil || err2 != nil || len(caps)+len(clientInfo) > maxCapabilityJSON {
		return "", nil, errBadInitialize
	}
	version := ep.negotiate(ip.ProtocolVersion)
	sid, perr = s.legacy.sessions.create(ctx, session.Record{
		Endpoint: ep.opts.Name, Tenant: id.Tenant, Principal: id.Principal,
		ProtocolVersion: version, ClientCapabilities: caps, ClientInfo: clientInfo,
	}, id.Source, ip.Capabilities, ip.ClientInfo)
	if perr != nil {
		outcome = outcomeOf(perr)
		return "", nil, perr
	}
	res, err = json.Marshal(&mcp.InitializeResult{
		ProtocolVersion: version,
		Capabilities:    ep.legacyCapabilities(version, ip.Capabilities),
		ServerInfo:      ep.serverInfo,
		Instructions:    ep.opts.Instructions,
	})
	if err != nil {
		outcome = OutcomeInternalError
		return "", nil, errInternal
	}
	outcome = OutcomeComplete
	return sid, res, nil
}

// handleLegacy runs a request inside a session through the same admitted
// pipeline as handle: the method table, the request limiter, the request
// deadline, the observer and metrics. Admission has already run (the
// session is bound to its identity). The request's context is canceled by
// notifications/cancelled naming it, by DELETE of the session, or when the
// client leaves.
func (ep *Endpoint) handleLegacy(s *Server, w http.ResponseWriter, r *http.Request, req *mcp.Request, p *rawParams, cs *cachedSession, id Identity) {
	out := w
	if cs.rec.ProtocolVersion >= mcp.ProtocolVersion20251125 {
		if rw := s.legacy.newResumeWriter(w, r, cs.rec.Key); rw != nil {
			out = rw // a resumable stream (legacy_resume.go)
		}
	}
	ep.dispatchLegacy(s, inbound{r: r, stream: newResponseStream(out, s.opts.KeepAliveInterval), charged: true}, req, p, cs, id)
}

// dispatchLegacy is handleLegacy for a request any transport decoded (see
// inbound; in.identity is not used: the session is bound to id; in.charged
// says the transport charged the request limiter already).
func (ep *Endpoint) dispatchLegacy(s *Server, in inbound, req *mcp.Request, p *rawParams, cs *cachedSession, id Identity) {
	r := in.r
	method, ok := ep.legacyMethods[req.Method]
	if !ok {
		s.rejectOn(ep, in.stream, req.ID, errMethodNotFound.asStatus(http.StatusOK))
		return
	}
	sessionParams(cs, p)
	// A request with a resumable stream over HTTP/2 (2025-11-25) runs on
	// a goroutine of its own (owned by the call, ended by its deadline), so
	// that the server can end the POST's response while it goes on; over
	// HTTP/1 the close takes the connection over instead, whose request
	// context stays valid until this handler returns.
	st := in.stream
	rw := st.resumable()
	async := rw != nil && rw.async
	base := r.Context()
	if async {
		base = context.WithoutCancel(base)
	}
	ctx, cancelCall := context.WithCancel(base)
	// A client may reuse an ID once it has read the response, which can
	// come before this call has deregistered: every call counts.
	reqKey := string(req.ID.Raw())
	me := &inflightCall{cancel: cancelCall}
	var done chan struct{} // closed when an asynchronous call's goroutine has run it
	if async {
		done = make(chan struct{})
		me.done = done
	}
	if perr := s.legacy.live.with(cs.rec.Key, func(ls *nodeSession) *protocolError {
		if ls.calls >= maxInflightPerSession {
			return errTooManyInflight
		}
		ls.addInflightLocked(reqKey, me)
		return nil
	}); perr != nil {
		cancelCall()
		s.rejectOn(ep, st, req.ID, perr)
		return
	}
	// A canceled call abandons its response.
	c := &call{srv: s, ep: ep, r: r.WithContext(ctx), req: req, params: p, id: id, stream: st, finish: func(Outcome) {}}
	c.legacy = &legacyCall{c: c, session: cs}
	body := func() {
		defer cancelCall()
		defer s.legacy.live.release(cs.rec.Key, func(ls *nodeSession) { ls.removeInflightLocked(reqKey, me) })
		ep.runLegacy(s, ctx, c, method, in.charged)
	}
	if rw != nil {
		st.onFinish = rw.ended
		defer rw.release()
	}
	if !async {
		body()
		return
	}
	// The goroutine is owned by this handler until the server releases
	// the POST stream, then by the node's released calls, which
	// Server.Close cancels and waits for; the session's DELETE waits for
	// it too (done).
	var (
		jmu      sync.Mutex
		finished bool
		joined   func() // set once released
	)
	go func() {
		defer close(done)
		body()
		jmu.Lock()
		finished = true
		j := joined
		jmu.Unlock()
		if j != nil {
			j()
		}
	}()
	select {
	case <-done:
		return
	case <-rw.post.gone:
	case <-r.Context().Done():
	}
	if rw.releasedByServer() {
		// Closed by the server or resumed by GET: the call goes on.
		jmu.Lock()
		if !finished {
			joined, _ = s.legacy.released.start("released 2025-era call", cancelCall) // the group never refuses
		}
		jmu.Unlock()
		return
	}
	// The client left the POST while it carried the stream.
	cancelCall()
	<-done
}

// sessionParams gives the params of a session's request the _meta its
// session implies: the session's revision, capabilities, client and log
// level, with the request's own progress token and trace context.
func sessionParams(cs *cachedSession, p *rawParams) {
	// Until logging/setLevel, a session receives every log message, as
	// 2025 clients expect (the suite's tools-call-with-logging sets none).
	level := mcp.LoggingLevel(cs.rec.LogLevel)
	if level == "" {
		level = mcp.LevelDebug
	}
	meta := &mcp.RequestMeta{
		ProtocolVersion:    cs.rec.ProtocolVersion,
		ClientCapabilities: cs.caps,
		ClientInfo:         cs.clientInfo,
		LogLevel:           level,
	}
	if p.Meta != nil {
		meta.ProgressToken = p.Meta.ProgressToken
		meta.TraceParent, meta.TraceState, meta.Baggage = p.Meta.TraceParent, p.Meta.TraceState, p.Meta.Baggage
	}
	p.Meta = meta
	// Input answers come only as responses to this server's own requests
	// (legacyCall.run), never from the params of a 2025 request.
	p.InputResponses, p.RequestState = nil, nil
}

// runLegacy runs an admitted call of a session under the request limiter
// (unless the transport charged it already), the deadline, the observer
// and metrics; ctx is canceled by notifications/cancelled, DELETE of the
// session, or the client leaving.
func (ep *Endpoint) runLegacy(s *Server, ctx context.Context, c *call, method methodFunc, charged bool) {
	req, st := c.req, c.stream
	info := RequestInfo{Endpoint: ep.opts.Name, Method: methodLabel(req.Method)}
	start := s.opts.now()
	ctx, c.span = s.startTrace(ctx, c.r, info, c.legacy.version(), c.params)
	s.opts.Observer.RequestStarted(ctx, info)
	outcome := OutcomeProtocolError
	defer func() {
		elapsed := s.opts.now().Sub(start)
		s.opts.Observer.RequestFinished(ctx, info, outcome, elapsed)
		s.opts.Metrics.RequestFinished(info, outcome, elapsed)
		s.toolCallFinished(ep, req.Method, c.params, outcome, elapsed)
		c.endTrace(outcome)
	}()
	if !chargesAfterLookup[req.Method] && !charged {
		if perr := c.chargeRequestLimiter(); perr != nil {
			outcome = OutcomeRateLimited
			st.finishError(req.ID, perr)
			return
		}
	}
	timeout := s.opts.RequestTimeout
	if h := ep.legacyHooks.timeout; h != nil {
		timeout = h(c, timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	outcome = c.legacy.run(ctx, method)
}

// run executes method and writes its response. A handler's request for
// input becomes real server-to-client requests on the POST's stream; the
// handler is run again with the client's answers and its sealed state,
// exactly as a modern client's retry would run it, so handlers are written
// once for both eras.
func (lc *legacyCall) run(ctx context.Context, method methodFunc) Outcome {
	c := lc.c
	var held int64 // bytes of the answers c.params holds, charged to the body budget
	defer func() { c.srv.budget.give(held) }()
	for round := 0; ; round++ {
		res, outcome, perr := method(ctx, c)
		ir, ok := res.(*mcp.InputRequiredResult)
		if !ok || perr != nil {
			return c.respond(res, outcome, perr)
		}
		if round >= maxStateRounds || ir.RequestState == "" {
			return c.respond(nil, OutcomeInternalError, errInternal)
		}
		answers, charged, perr := lc.ask(ctx, ir.InputRequests)
		if perr != nil {
			return c.respond(nil, outcomeOf(perr), perr)
		}
		c.srv.budget.give(held) // the previous round's answers, replaced below
		held = charged
		state := ir.RequestState
		c.params.InputResponses, c.params.RequestState = answers, &state
	}
}

// legacyStatus is the HTTP status a JSON-RPC error of a method has in a
// session: 200, so that a 2025 client reads the error rather than taking a
// 404 for the end of its session. Busy, rate-limit, deadline and size
// errors keep their status, and so does a header that disagrees with the
// body (400, as the transport's own checks send it).
func legacyStatus(perr *protocolError) *protocolError {
	if perr == nil || (perr.status != http.StatusBadRequest && perr.status != http.StatusNotFound) ||
		perr.err.Code == mcp.CodeHeaderMismatch {
		return perr
	}
	return perr.asStatus(http.StatusOK)
}

// encodeLegacy renders a result in 2025 shape: no resultType, no
// io.modelcontextprotocol/serverInfo in _meta (withMeta is not applied),
// and none of the 2026 cache members.
func (c *call) encodeLegacy(res any) ([]byte, *protocolError) {
	if r, ok := res.(*mcp.CallToolResult); ok {
		// The common shapes without reflection, as on the modern path.
		if b, ok := mcp.AppendToolResult(nil, r, nil); ok && bytes.HasPrefix(b, completePrefix) {
			b = b[len(completePrefix)-1:]
			b[0] = '{'
			return c.checkLimits(b)
		}
	}
	b, ok := res.(json.RawMessage)
	if !ok {
		var err error
		if b, err = json.Marshal(res); err != nil {
			c.srv.logger.Error("result could not be encoded", "endpoint", c.ep.opts.Name, "method", methodLabel(c.req.Method), "err", err)
			return nil, errInternal
		}
	}
	return c.checkLimits(legacyShape(b))
}

// completePrefix starts every result mcp.AppendToolResult encodes.
var completePrefix = []byte(`{"resultType":"complete",`)

// modernOnlyMembers are the result members of the 2026 revision alone.
var modernOnlyMembers = [][]byte{[]byte(`"resultType"`), []byte(`"ttlMs"`), []byte(`"cacheScope"`)}

// legacyShape drops the 2026-only members from the top level of an
// encoded result object.
func legacyShape(b []byte) []byte {
	found := false
	for _, m := range modernOnlyMembers {
		if bytes.Contains(b, m) {
			found = true
			break
		}
	}
	if !found || len(b) == 0 || b[0] != '{' {
		return b
	}
	out := make([]byte, 0, len(b))
	out = append(out, '{')
	err := mcp.EachMember(b, func(name, raw []byte) error {
		switch string(name) {
		case "resultType", "ttlMs", "cacheScope":
			return nil
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = mcp.AppendString(out, string(name))
		out = append(out, ':')
		out = append(out, raw...)
		return nil
	})
	if err != nil {
		return b
	}
	return append(out, '}')
}

// emptyResult is the {} result of ping and the other acknowledgements.
var emptyResult = json.RawMessage(`{}`)

func legacyPing(context.Context, *call) (any, Outcome, *protocolError) {
	return emptyResult, OutcomeComplete, nil
}

func legacySetLevel(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	var p mcp.SetLevelParams
	if c.req.Params == nil || json.Unmarshal(c.req.Params, &p) != nil {
		return nil, OutcomeProtocolError, invalidParams("Invalid params: level is required")
	}
	if _, ok := p.Level.Severity(); !ok {
		return nil, OutcomeProtocolError, invalidParams("Invalid params: unknown log level")
	}
	if perr := c.srv.legacy.sessions.setLogLevel(ctx, c.legacy.session, string(p.Level)); perr != nil {
		return nil, outcomeOf(perr), perr
	}
	return emptyResult, OutcomeComplete, nil
}

func subscribeURI(c *call) (string, *protocolError) {
	uri := c.params.URI
	if uri == "" || len(uri) > maxSubscriptionURI {
		return "", invalidParams("Invalid params: uri is required")
	}
	return uri, nil
}

func legacySubscribe(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	uri, perr := subscribeURI(c)
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	key := c.legacy.session.rec.Key
	if ls := c.srv.legacy.live.lookup(key); ls != nil {
		ls.mu.Lock()
		_, had := ls.subs[uri]
		full := len(ls.subs) >= maxSubscriptionsPerSession
		ls.mu.Unlock()
		switch {
		case had:
			return emptyResult, OutcomeComplete, nil
		case full:
			return nil, OutcomeProtocolError, invalidParams("Invalid params: too many subscriptions in this session")
		}
	}
	sub := c.ep.resourceSubscriber()
	if perr := c.subscribeWith(ctx, sub, uri); perr != nil {
		return nil, outcomeOf(perr), perr
	}
	perr = c.srv.legacy.live.with(key, func(ls *nodeSession) *protocolError {
		if _, had := ls.subs[uri]; !had && len(ls.subs) >= maxSubscriptionsPerSession {
			return invalidParams("Invalid params: too many subscriptions in this session")
		}
		if !ls.addSubLocked(uri, sub) && sub != nil {
			sub.UnsubscribeResource(uri) // a concurrent subscribe of the same URI came first
		}
		return nil
	})
	if perr != nil {
		if sub != nil {
			sub.UnsubscribeResource(uri)
		}
		return nil, OutcomeProtocolError, perr
	}
	return emptyResult, OutcomeComplete, nil
}

func legacyUnsubscribe(_ context.Context, c *call) (any, Outcome, *protocolError) {
	uri, perr := subscribeURI(c)
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	c.srv.legacy.live.release(c.legacy.session.rec.Key, func(ls *nodeSession) {
		if sub, ok := ls.subs[uri]; ok {
			delete(ls.subs, uri)
			if sub != nil {
				sub.UnsubscribeResource(uri)
			}
		}
	})
	return emptyResult, OutcomeComplete, nil
}

// legacyListTools is tools/list in a session: the tools the caller may see,
// in 2025 shape, with execution for 2025-11-25 sessions.
func (ep *Endpoint) legacyListTools(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	lc := c.legacy
	withExecution := lc.version() >= mcp.ProtocolVersion20251125
	tools := ep.live.load().list
	visible := make([]mcp.LegacyTool, 0, len(tools))
	for _, t := range tools {
		if p := c.srv.opts.CatalogPolicy; p != nil {
			ok, err := p.ToolVisible(ctx, c.id, ep.opts.Name, t.tool.Name)
			if err != nil {
				c.srv.logger.Error("catalog policy failed", "endpoint", ep.opts.Name, "err", c.redactErr(err))
				return nil, OutcomeInternalError, errInternal
			}
			if !ok {
				continue
			}
		}
		var exec *mcp.ToolExecution
		if t.mode != taskNever {
			if h := ep.legacyHooks.toolView; h != nil {
				var ok bool
				if exec, ok = h(lc, t); !ok {
					continue
				}
			} else if t.mode == taskRequired {
				continue
			}
		}
		if exec == nil && withExecution {
			exec = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportForbidden}
		}
		if !withExecution {
			exec = nil
		}
		visible = append(visible, mcp.LegacyTool{Tool: t.tool, Execution: exec})
	}
	items, next, perr := pageOf(ep, c.params.Cursor, visible, func(t mcp.LegacyTool) mcp.LegacyTool { return t })
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	return &mcp.LegacyListToolsResult{Tools: items, NextCursor: next}, OutcomeComplete, nil
}

var errNeedsTasks = invalidParams("Invalid params: this tool runs only as a task, which this session cannot receive")

// legacyCallTool is tools/call in a session; tools that may create tasks
// go to the tasks layer's hook (see legacyHooks.callTool).
func (ep *Endpoint) legacyCallTool(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	t, ok := ep.live.load().index[c.params.Name]
	if ok && t.mode == taskNever && ep.legacyHooks.callTool != nil {
		// 2025-11-25: a tool whose taskSupport is forbidden, called as a
		// task by a client that has tasks, is -32601.
		if _, perr := c.lookupTool(ctx, t.tool.Name); perr != nil {
			return nil, OutcomeProtocolError, perr
		}
		if perr := ep.refuseForbiddenTask(c.legacy); perr != nil {
			return nil, OutcomeProtocolError, perr
		}
	}
	if ok && t.mode != taskNever {
		if _, perr := c.lookupTool(ctx, t.tool.Name); perr != nil {
			return nil, OutcomeProtocolError, perr
		}
		if h := ep.legacyHooks.callTool; h != nil {
			return h(ctx, c.legacy, t)
		}
		if t.mode == taskRequired {
			return nil, OutcomeProtocolError, errNeedsTasks
		}
	}
	return ep.callTool(ctx, c)
}
