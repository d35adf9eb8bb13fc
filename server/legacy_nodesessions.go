package server

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Bounds of a session's node-local state.
const (
	maxSubscriptionsPerSession = 64
	maxSubscriptionURI         = 2048
	maxInflightPerSession      = 256
	getStreamQueue             = 64 // notifications waiting for a GET stream's writer
)

var (
	// errSessionNotFound is the one answer for an unknown, expired,
	// malformed or another identity's session ID: the same bytes always.
	errSessionNotFound = newProtocolError(http.StatusNotFound, mcp.NewError(mcp.CodeSessionNotFound, "Session not found"))
	errSessionRequired = newProtocolError(http.StatusBadRequest, mcp.NewError(mcp.CodeInvalidRequest, "Bad Request: Mcp-Session-Id header is required"))
	errBatch           = newProtocolError(http.StatusBadRequest, mcp.NewError(mcp.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported"))
	errStreamOpen      = newProtocolError(http.StatusConflict, mcp.NewError(mcp.CodeInvalidRequest, "Conflict: the session already has a GET stream"))
	errTooManyInflight = newProtocolError(http.StatusTooManyRequests, mcp.NewError(CodeRateLimited, "Too many requests in flight for this session"))
)

// decodeLegacyCaps decodes the capabilities stored with a session; a
// record it cannot read grants nothing.
func decodeLegacyCaps(raw []byte) *mcp.LegacyClientCapabilities {
	c := &mcp.LegacyClientCapabilities{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, c); err != nil {
			return &mcp.LegacyClientCapabilities{}
		}
	}
	return c
}

// decodeClientInfo decodes the clientInfo stored with a session; nil when
// absent or unreadable.
func decodeClientInfo(raw []byte) *mcp.Implementation {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var info mcp.Implementation
	if json.Unmarshal(raw, &info) != nil {
		return nil
	}
	return &info
}

// nodeSession is the node-local state of a session: its GET stream, its
// resource subscriptions and its requests in flight. It exists only on the
// node that holds them and only while it holds any (see nodeSessions); it
// ends when the store no longer has the session, and state held by
// subscriptions alone is swept once idle. The session itself lives in the
// store. In a fleet, a client's GET stream,
// subscriptions and cancellations therefore reach only the node that
// received them; NotifyResourceUpdated must be called on every node.
type nodeSession struct {
	key string

	mu       sync.Mutex
	lastSeen time.Time                     // when a request last used this state (server clock)
	endpoint string                        // the session's endpoint, set with its GET stream
	get      *getStream                    // nil when no GET stream is open
	subs     map[string]ResourceSubscriber // by URI; nil values for an endpoint whose source does not follow them
	inflight map[string][]*inflightCall    // by request ID spelling; every call of a reused ID
	calls    int                           // requests in inflight, all IDs together
	replay   *sessionReplay                // resumable POST streams (legacy_resume.go); nil until one opens
	ended    bool
}

// addInflightLocked registers a request under its ID spelling, under
// ls.mu. A reused ID keeps the calls that still run (a client may reuse
// an ID once it has read the response, before the call has deregistered),
// so every call counts against maxInflightPerSession and stays reachable
// by notifications/cancelled and DELETE.
func (ls *nodeSession) addInflightLocked(id string, ic *inflightCall) {
	if ls.inflight == nil {
		ls.inflight = map[string][]*inflightCall{}
	}
	ls.inflight[id] = append(ls.inflight[id], ic)
	ls.calls++
}

// removeInflightLocked deregisters a request added by addInflightLocked,
// under ls.mu; it does nothing when ic is no longer registered (the
// session ended).
func (ls *nodeSession) removeInflightLocked(id string, ic *inflightCall) {
	calls := ls.inflight[id]
	i := slices.Index(calls, ic)
	if i < 0 {
		return
	}
	ls.calls--
	if len(calls) == 1 {
		delete(ls.inflight, id)
		return
	}
	ls.inflight[id] = slices.Delete(calls, i, i+1)
}

// cancelInflightLocked cancels every call registered under id, under ls.mu.
func (ls *nodeSession) cancelInflightLocked(id string) {
	for _, ic := range ls.inflight[id] {
		ic.cancel()
	}
}

// addSubLocked records a resource subscription that sub (nil: none)
// follows, under ls.mu. It reports false when the session had it already.
func (ls *nodeSession) addSubLocked(uri string, sub ResourceSubscriber) bool {
	if _, ok := ls.subs[uri]; ok {
		return false
	}
	if ls.subs == nil {
		ls.subs = map[string]ResourceSubscriber{}
	}
	ls.subs[uri] = sub
	return true
}

// inflightCall is a request running in a session on this node.
type inflightCall struct {
	cancel context.CancelFunc
	done   <-chan struct{} // closed when an asynchronous call has ended; nil for a call its handler runs
}

// getStream is a session's standalone SSE stream: notifications queue in
// ch (bounded; a full queue drops the notification) and the GET handler,
// which owns the stream, writes them.
type getStream struct {
	ch   chan []byte
	done chan struct{} // closed to end the stream (DELETE, server close)
}

// empty reports whether ls holds nothing, under ls.mu.
func (ls *nodeSession) emptyLocked() bool {
	return ls.get == nil && len(ls.subs) == 0 && len(ls.inflight) == 0 &&
		(ls.replay == nil || ls.replay.empty(ls.replay.l.now()))
}

// enqueue offers an encoded notification to the GET stream; it reports
// whether the stream took it.
func (ls *nodeSession) enqueue(msg []byte) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if ls.get == nil {
		return false
	}
	select {
	case ls.get.ch <- msg:
		return true
	default:
		return false
	}
}

// nodeSessions is the node's table of live session state, bounded by
// SessionOptions.MaxSessions. It holds no session records: those are in
// sessionRecords, which decides whether a session exists.
type nodeSessions struct {
	max int
	now func() time.Time

	mu       sync.Mutex
	sessions map[string]*nodeSession
	closed   bool
}

func newNodeSessions(max int, now func() time.Time) *nodeSessions {
	return &nodeSessions{max: max, now: now, sessions: map[string]*nodeSession{}}
}

// with returns the live state of key, creating it, and runs fn on it
// under its lock; fn's error is returned. It fails with errSessionsFull
// when the table is full.
func (t *nodeSessions) with(key string, fn func(ls *nodeSession) *protocolError) *protocolError {
	t.mu.Lock()
	ls := t.sessions[key]
	if ls == nil {
		if len(t.sessions) >= t.max {
			t.mu.Unlock()
			return errSessionsFull
		}
		ls = &nodeSession{key: key}
		t.sessions[key] = ls
	}
	ls.mu.Lock()
	ls.lastSeen = t.now()
	perr := fn(ls)
	empty := ls.emptyLocked()
	ls.mu.Unlock()
	if empty {
		delete(t.sessions, key)
	}
	t.mu.Unlock()
	return perr
}

// openStream registers gs as the GET stream of key: errStreamOpen when the
// session has one on this node, errSessionsFull once the server is closed
// (Close ends GET streams; requests keep being served).
func (t *nodeSessions) openStream(key, endpoint string, gs *getStream) *protocolError {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return errSessionsFull
	}
	return t.with(key, func(ls *nodeSession) *protocolError {
		if ls.get != nil {
			return errStreamOpen
		}
		ls.get, ls.endpoint = gs, endpoint
		return nil
	})
}

// release runs fn on the live state of key, if any, and drops the state
// once it holds nothing.
func (t *nodeSessions) release(key string, fn func(ls *nodeSession)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ls := t.sessions[key]
	if ls == nil {
		return
	}
	ls.mu.Lock()
	fn(ls)
	empty := ls.emptyLocked()
	ls.mu.Unlock()
	if empty {
		delete(t.sessions, key)
	}
}

// lookup returns the live state of key or nil.
func (t *nodeSessions) lookup(key string) *nodeSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.sessions[key]
}

// end drops the live state of a deleted session: its GET stream ends and
// its requests in flight are canceled. It returns the done channels of the
// canceled calls that run on goroutines of their own (see
// awaitCalls).
func (t *nodeSessions) end(key string) []<-chan struct{} {
	t.mu.Lock()
	ls := t.sessions[key]
	delete(t.sessions, key)
	t.mu.Unlock()
	if ls == nil {
		return nil
	}
	sr, running := ls.endAll()
	if sr != nil {
		sr.close()
	}
	return running
}

// endAll ends the session's GET stream and requests in flight and returns
// its replay buffer, which the caller closes, and the done channels of the
// asynchronous calls it canceled.
func (ls *nodeSession) endAll() (*sessionReplay, []<-chan struct{}) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.ended = true
	sr := ls.replay
	ls.replay = nil
	if ls.get != nil {
		close(ls.get.done)
		ls.get = nil
	}
	var running []<-chan struct{}
	for _, calls := range ls.inflight {
		for _, ic := range calls {
			ic.cancel()
			if ic.done != nil {
				running = append(running, ic.done)
			}
		}
	}
	clear(ls.inflight)
	ls.calls = 0
	ls.releaseSubsLocked()
	return sr, running
}

// close ends every GET stream (Server.Close); later GETs are refused.
// Requests in flight and subscriptions are left alone.
func (t *nodeSessions) close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.each(func(ls *nodeSession) {
		ls.mu.Lock()
		if ls.get != nil {
			close(ls.get.done)
			ls.get = nil
		}
		ls.mu.Unlock()
	})
}

// sweep drops the state that only subscriptions hold (no GET stream, no
// request in flight) and that no request has used for idle: its session
// has expired idle by then, whether or not this node has noticed.
func (t *nodeSessions) sweep(now time.Time, idle time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for key, ls := range t.sessions {
		ls.mu.Lock()
		stale := ls.get == nil && len(ls.inflight) == 0 && now.Sub(ls.lastSeen) > idle &&
			(ls.replay == nil || ls.replay.empty(now))
		ls.mu.Unlock()
		if stale {
			ls.mu.Lock()
			ls.releaseSubsLocked()
			ls.mu.Unlock()
			delete(t.sessions, key)
		}
	}
}

// each calls fn for every live session (a snapshot).
func (t *nodeSessions) each(fn func(ls *nodeSession)) {
	t.mu.Lock()
	all := make([]*nodeSession, 0, len(t.sessions))
	for _, ls := range t.sessions {
		all = append(all, ls)
	}
	t.mu.Unlock()
	for _, ls := range all {
		fn(ls)
	}
}

// NotifyResourceUpdated sends notifications/resources/updated for uri to
// every 2025-era session on this node that subscribed to it
// (resources/subscribe), on the session's GET stream, and to every
// 2026-07-28 subscriptions/listen on this node that acknowledged it in
// resourceSubscriptions, of every endpoint (Endpoint.NotifyResourceUpdated
// names one). Sessions without an open GET stream, or whose stream's queue
// is full, miss it: delivery is best effort, as the 2025 transport allows.
// Subscriptions are node-local, so in a fleet call it on every node. It
// never blocks on a client.
func (s *Server) NotifyResourceUpdated(uri string) { s.notifyResourceUpdated("", uri) }

// ListKind names a catalog list whose change NotifyListChanged announces.
type ListKind int

// The lists of an endpoint.
const (
	ListTools ListKind = iota
	ListPrompts
	ListResources
)

// NotifyListChanged announces that the named endpoint's list of the given
// kind changed: it sends notifications/tools/list_changed (or the prompts
// or resources one) to every 2025-era session of the endpoint that has its
// GET stream open on this node, and to every 2026-07-28
// subscriptions/listen stream of the endpoint on this node whose filter
// asked for that list (toolsListChanged, promptsListChanged,
// resourcesListChanged), for example after a CatalogPolicy starts showing
// a caller other tools. Endpoint.UpdateTools calls it for its endpoint.
// Delivery is best effort, as with NotifyResourceUpdated (a listen
// coalesces changes it has not written yet into one notification per
// list), and node-local: in a fleet call it on every node. It never blocks
// on a client. An unknown kind does nothing.
func (s *Server) NotifyListChanged(endpoint string, kind ListKind) {
	method := kind.method()
	if method == "" {
		return
	}
	if s.subs != nil {
		s.subs.listChanged(endpoint, kind)
	}
	if s.legacy == nil {
		return
	}
	msg := mcp.AppendNotification(nil, method, nil)
	s.legacy.live.each(func(ls *nodeSession) {
		ls.mu.Lock()
		match := ls.get != nil && ls.endpoint == endpoint
		ls.mu.Unlock()
		if match {
			ls.enqueue(msg)
		}
	})
}

// awaitCalls waits until every channel of running is closed: the calls a
// session's DELETE canceled that run on goroutines of their own. It waits
// at most CloseGrace and no longer than ctx; calls whose callbacks ignore
// the cancellation past that are left to end by themselves, and counted
// in a warning (no IDs).
func (s *Server) awaitCalls(ctx context.Context, running []<-chan struct{}) {
	if len(running) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, CloseGrace)
	defer cancel()
	for i, done := range running {
		select {
		case <-done:
		case <-ctx.Done():
			s.logger.Warn("session deleted with calls still running", "at_most", len(running)-i, "err", ErrStillRunning)
			return
		}
	}
}
