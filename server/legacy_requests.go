package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/session"
)

// Server-to-client requests of 2025-era sessions (elicitation/create,
// sampling/createMessage, roots/list). They go out on the response stream
// of the POST that needs them; the client answers each with a JSON-RPC
// response in a POST of its own, which may reach any node. Request IDs are
// strings "tw.<node>.<128 random bits in hex>": the node that waits for
// the answer, and a token only the client that received the request knows.

// AnswerRelay forwards a client's JSON-RPC response to a server-to-client
// request to the node that holds the request. The bytes are opaque to the
// relay: the server adds the store key of the session the answer came in
// (never the session ID), and the receiving node delivers it only to a
// request of that session.
type AnswerRelay interface {
	// Forward delivers one encoded JSON-RPC response (≤ 1 MiB) to node. It
	// returns once the response is durably handed over or ctx ends;
	// delivery to a node that is gone is silently dropped.
	Forward(ctx context.Context, node string, response []byte) error
	// Receive registers fn for responses forwarded to node and returns
	// stop. fn must not block. At most one Receive per node ID per relay.
	Receive(node string, fn func(response []byte)) (stop func(), err error)
}

// localRelay is the default AnswerRelay of a single node: answers naming
// another node are dropped.
type localRelay struct{}

func (localRelay) Forward(context.Context, string, []byte) error { return nil }

func (localRelay) Receive(string, func([]byte)) (func(), error) { return func() {}, nil }

// Bounds of server-to-client requests.
const (
	maxPendingAnswers    = 4096    // requests waiting for an answer on this node
	maxPendingPerSession = 64      // of them, requests of one session
	maxInputRequests     = 16      // requests of one input round
	maxForwardedAnswer   = 1 << 20 // bytes of a response the relay carries
	requestIDPrefix      = "tw."
	maxNodeIDLen         = 32
	requestIDTokenBytes  = 16
)

// validNodeID reports whether a node ID may appear in request IDs.
func validNodeID(s string) bool {
	if s == "" || len(s) > maxNodeIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func randomNodeID() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// answer is a client's response to a server-to-client request.
type answer struct {
	result  json.RawMessage
	err     *mcp.Error
	charged int64 // bytes of result charged to the server's body budget
}

// pendingAnswer is one server-to-client request waiting for its answer.
type pendingAnswer struct {
	sessionKey string
	ch         chan answer // buffered 1; written once
}

// pendingTable holds this node's server-to-client requests by ID, and
// their IDs by session, so that one session cannot fill the node's table
// (maxPendingPerSession) and its end forgets only its own.
type pendingTable struct {
	mu        sync.Mutex
	byID      map[string]*pendingAnswer
	bySession map[string]map[string]struct{}
}

// errTooManyPending refuses an input round that would take a session past
// maxPendingPerSession requests waiting for answers.
var errTooManyPending = newProtocolError(http.StatusTooManyRequests, mcp.NewError(CodeRateLimited, "Too many server requests waiting for answers in this session"))

// addRound registers the requests of one input round of the session key,
// all or none: errTooManyPending beyond the session's bound, errQueueFull
// beyond the node's.
func (t *pendingTable) addRound(key string, ids []string, ps []*pendingAnswer) *protocolError {
	t.mu.Lock()
	defer t.mu.Unlock()
	mine := t.bySession[key]
	if len(mine)+len(ids) > maxPendingPerSession {
		return errTooManyPending
	}
	if len(t.byID)+len(ids) > maxPendingAnswers {
		return errQueueFull
	}
	if mine == nil {
		if t.bySession == nil {
			t.bySession = map[string]map[string]struct{}{}
		}
		mine = make(map[string]struct{}, len(ids))
		t.bySession[key] = mine
	}
	for i, id := range ids {
		t.byID[id] = ps[i]
		mine[id] = struct{}{}
	}
	return nil
}

// forgetLocked removes the request id of p, under t.mu.
func (t *pendingTable) forgetLocked(id string, p *pendingAnswer) {
	delete(t.byID, id)
	if mine := t.bySession[p.sessionKey]; mine != nil {
		delete(mine, id)
		if len(mine) == 0 {
			delete(t.bySession, p.sessionKey)
		}
	}
}

func (t *pendingTable) remove(id string) {
	t.mu.Lock()
	if p := t.byID[id]; p != nil {
		t.forgetLocked(id, p)
	}
	t.mu.Unlock()
}

// deliver hands a to the request id names, if it waits and belongs to the
// session sessionKey names. It reports whether it did; otherwise nothing
// changes. The answer is in the request's channel before deliver returns
// (under t.mu), so a request removed later finds it there.
func (t *pendingTable) deliver(id, sessionKey string, a answer) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.byID[id]
	if p == nil || p.sessionKey != sessionKey {
		return false
	}
	t.forgetLocked(id, p)
	p.ch <- a // buffered 1, written once
	return true
}

// dropSession forgets the requests of a deleted session (their calls are
// canceled with it).
func (t *pendingTable) dropSession(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for id := range t.bySession[key] {
		delete(t.byID, id)
	}
	delete(t.bySession, key)
}

// newRequestID returns a fresh server-to-client request ID of this node.
func (l *legacyServer) newRequestID() string {
	b := make([]byte, requestIDTokenBytes)
	rand.Read(b)
	return requestIDPrefix + l.nodeID + "." + hex.EncodeToString(b)
}

// requestIDNode returns the node a server-to-client request ID names.
func requestIDNode(id string) (string, bool) {
	rest, ok := strings.CutPrefix(id, requestIDPrefix)
	if !ok {
		return "", false
	}
	node, token, ok := strings.Cut(rest, ".")
	if !ok || !validNodeID(node) || len(token) != 2*requestIDTokenBytes {
		return "", false
	}
	return node, true
}

var (
	errUnknownAnswer = invalidRequest("Invalid Request: no server request with this id is waiting for an answer")
	errAnswerTooBig  = invalidRequest("Invalid Request: response too large")
)

// maxAnswerBytes bounds the result of one answer (as the relay carries).
const maxAnswerBytes = maxForwardedAnswer

var errAnswerTooLarge = errors.New("answer too large")

// decodeAnswer reads the result or error of an encoded response; ok is
// false for a malformed one and tooBig true for a result beyond
// maxAnswerBytes (not copied).
func decodeAnswer(body []byte) (a answer, ok, tooBig bool) {
	err := mcp.EachMember(body, func(name, raw []byte) error {
		switch string(name) {
		case "result":
			if len(raw) > maxAnswerBytes {
				return errAnswerTooLarge
			}
			a.result = append(json.RawMessage(nil), raw...)
		case "error":
			a.err = &mcp.Error{}
			return json.Unmarshal(raw, a.err)
		}
		return nil
	})
	if err == errAnswerTooLarge {
		return answer{}, false, true
	}
	return a, err == nil && (a.result != nil) != (a.err != nil), false
}

// chargeAnswer charges a's result to the body budget, which bounds what
// every waiting call holds together; the call refunds it when the answers
// are no longer needed (legacyCall.run). It reports false, charging
// nothing, when the budget is spent.
func (s *Server) chargeAnswer(a *answer) bool {
	n := int64(len(a.result))
	if !s.budget.take(n) {
		return false
	}
	a.charged = n
	return true
}

// deliverAnswer charges a and hands it to the request id of the session
// key names; it reports errUnknownAnswer or errQueueFull (the budget is
// spent) otherwise, changing nothing.
func (s *Server) deliverAnswer(id, key string, a answer) *protocolError {
	if !s.chargeAnswer(&a) {
		return errQueueFull
	}
	if !s.legacy.pending.deliver(id, key, a) {
		s.budget.give(a.charged)
		return errUnknownAnswer
	}
	return nil
}

// legacyResponse takes a client's JSON-RPC response to a server-to-client
// request: 202 when it is delivered here or forwarded to the node that
// waits for it, 400 (changing nothing) for an ID no request of this
// session waits for.
func (s *Server) legacyResponse(ep *Endpoint, w http.ResponseWriter, r *http.Request, body []byte, id mcp.ID) {
	key, present, valid := presentedKey(r.Header)
	if !present {
		s.reject(ep, w, mcp.ID{}, errSessionRequired)
		return
	}
	ident, perr := s.admit(ep, r, "", "")
	if perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	if !valid {
		s.reject(ep, w, mcp.ID{}, errSessionNotFound)
		return
	}
	// Every response costs a token, before the store is read: a client
	// cannot flood the relay (or guess session IDs) past its rate.
	if perr := s.chargeLegacyLimiter(ident); perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	if _, perr := s.legacy.sessions.find(r.Context(), key, ep.opts.Name, ident); perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	var sid string
	if json.Unmarshal(id.Raw(), &sid) != nil {
		s.reject(ep, w, mcp.ID{}, errUnknownAnswer)
		return
	}
	node, ok := requestIDNode(sid)
	if !ok {
		s.reject(ep, w, mcp.ID{}, errUnknownAnswer)
		return
	}
	if node != s.legacy.nodeID {
		fwd, ok := withSessionKey(body, key)
		if !ok || len(fwd) > maxForwardedAnswer {
			s.reject(ep, w, mcp.ID{}, errAnswerTooBig)
			return
		}
		ctx, cancel := storeCtx(r.Context())
		err := s.legacy.relay.Forward(ctx, node, fwd)
		cancel()
		if err != nil {
			s.logger.Warn("answer relay failed", "endpoint", ep.opts.Name, "err", redactErr(err))
			s.reject(ep, w, mcp.ID{}, errQueueFull)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	a, ok, tooBig := decodeAnswer(body)
	if tooBig {
		s.reject(ep, w, mcp.ID{}, errAnswerTooBig)
		return
	}
	if !ok {
		s.reject(ep, w, mcp.ID{}, invalidRequest("Invalid Request: malformed response"))
		return
	}
	if perr := s.deliverAnswer(sid, key, a); perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// forwardedSessionMember carries, in a forwarded response, the store key
// of the session the forwarding node admitted it in, so that the node
// holding the request accepts only an answer from that request's session.
// The key is what session stores see; the session ID never travels.
const forwardedSessionMember = "io.taskwire/sessionKey"

// withSessionKey appends the session key member to an encoded response
// object.
func withSessionKey(body []byte, key string) ([]byte, bool) {
	body = bytes.TrimSpace(body)
	if len(body) < 2 || body[len(body)-1] != '}' {
		return nil, false
	}
	out := make([]byte, 0, len(body)+len(forwardedSessionMember)+len(key)+8)
	out = append(out, body[:len(body)-1]...)
	out = append(out, `,"`+forwardedSessionMember+`":"`...)
	out = append(out, key...)
	return append(out, `"}`...), true
}

// receiveForwarded takes a response another node forwarded through the
// AnswerRelay: it is delivered only to a request of the session named by
// the forwarded session key; anything else is dropped.
func (s *Server) receiveForwarded(body []byte) {
	env, perr := decodeEnvelope(body)
	if perr != nil || !env.response {
		return
	}
	var sid, key string
	if json.Unmarshal(env.id.Raw(), &sid) != nil {
		return
	}
	err := mcp.EachMember(bytes.TrimSpace(body), func(name, raw []byte) error {
		if string(name) == forwardedSessionMember {
			return json.Unmarshal(raw, &key)
		}
		return nil
	})
	if err != nil || len(key) != session.KeyLength {
		return
	}
	if a, ok, _ := decodeAnswer(body); ok {
		s.deliverAnswer(sid, key, a)
	}
}

// sendMessage writes one encoded JSON-RPC message (a server-to-client
// request) as an SSE event, switching the response to SSE if needed.
func (st *responseStream) sendMessage(msg []byte) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished {
		return errStreamClosed
	}
	if !st.sse {
		st.startSSELocked()
	}
	return st.writeEventLocked(msg)
}

// errInputFailed is the answer to a call whose client answered a
// server-to-client request with an error.
func errInputFailed(e *mcp.Error) *protocolError {
	return newProtocolError(http.StatusOK, mcp.NewError(e.Code, "Input request failed: the client answered with an error"))
}

// request sends one server-to-client request on the call's POST stream and
// waits for the client's answer under ctx. params is the encoded params
// object, or nil.
func (lc *legacyCall) request(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *protocolError) {
	answers, charged, perr := lc.ask(ctx, mcp.InputRequests{"": {Method: method, Params: params}})
	if perr != nil {
		return nil, perr
	}
	// One answer (≤ maxAnswerBytes) stays with the caller, uncharged.
	lc.c.srv.budget.give(charged)
	return answers[""], nil
}

// ask sends each input request as a real server-to-client request on the
// call's POST stream and waits for all the answers under ctx, returning
// them under the input requests' keys with the bytes they hold charged to
// the body budget, which the caller refunds once it no longer needs them.
// A client error answer fails the call; the deadline gives errDeadline;
// on failure nothing stays charged.
func (lc *legacyCall) ask(ctx context.Context, reqs mcp.InputRequests) (_ mcp.InputResponses, charged int64, _ *protocolError) {
	if len(reqs) == 0 || len(reqs) > maxInputRequests {
		return nil, 0, errInternal
	}
	budget := &lc.c.srv.budget
	l := lc.c.srv.legacy
	keys := make([]string, 0, len(reqs))
	for k := range reqs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	ids := make([]string, len(keys))
	waits := make([]chan answer, len(keys))
	ps := make([]*pendingAnswer, len(keys))
	msgs := make([][]byte, len(keys))
	for i, k := range keys {
		ir := reqs[k]
		if ir == nil || ir.Method == "" {
			return nil, 0, errInternal
		}
		ids[i] = l.newRequestID()
		waits[i] = make(chan answer, 1)
		ps[i] = &pendingAnswer{sessionKey: lc.session.rec.Key, ch: waits[i]}
		msg, err := encodeServerRequest(ids[i], ir.Method, ir.Params)
		if err != nil {
			return nil, 0, errInternal
		}
		msgs[i] = msg
	}
	// The whole round is admitted before any request is sent.
	if perr := l.pending.addRound(lc.session.rec.Key, ids, ps); perr != nil {
		return nil, 0, perr
	}
	defer func() {
		for i, id := range ids {
			l.pending.remove(id)
			select {
			case a := <-waits[i]: // delivered but not read: refund it
				budget.give(a.charged)
			default:
			}
		}
	}()
	for _, msg := range msgs {
		if err := lc.c.stream.sendMessage(msg); err != nil {
			return nil, 0, errStreamGone
		}
	}
	out := make(mcp.InputResponses, len(keys))
	for i, k := range keys {
		select {
		case a := <-waits[i]:
			charged += a.charged
			if a.err != nil {
				budget.give(charged)
				return nil, 0, errInputFailed(a.err)
			}
			out[k] = a.result
		case <-ctx.Done():
			budget.give(charged)
			return nil, 0, errDeadline
		}
	}
	return out, charged, nil
}

// encodeServerRequest encodes a JSON-RPC request of the server.
func encodeServerRequest(id, method string, params json.RawMessage) ([]byte, error) {
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      string          `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params,omitempty"`
	}{mcp.JSONRPCVersion, id, method, params})
}
