package server

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/taskwire/taskwire/internal/stdioframe"
	"github.com/taskwire/taskwire/mcp"
)

// The 2025 era on stdio. An initialize makes the connection one implicit
// session: the session is created in the server's session store exactly as
// over HTTP (bound to the connection's identity, counted against the
// session limits), but its ID never leaves the process; the connection
// names it for every later message. Requests then run through the same
// legacy pipeline as HTTP (dispatchLegacy: the legacy method table, the
// 2025 result shapes, the tasks layer's hooks); server-to-client requests
// (elicitation, sampling, roots) are written to the output and the
// client's responses, read from the input, are delivered to the waiting
// request; notifications for the session (list changes, resource updates,
// task status) are written as they come. The session ends with the
// connection.

// stdioSession is the implicit session of a stdio connection.
type stdioSession struct {
	key  string
	stop chan struct{} // closed to end the pump
	done chan struct{} // closed when the pump has ended
}

var (
	errAlreadyInitialized = invalidRequest("Invalid Request: this connection is already initialized")
	errNotInitialized     = newProtocolError(http.StatusBadRequest, mcp.InvalidParams("Invalid params: send initialize first, or carry _meta with io.modelcontextprotocol/protocolVersion and io.modelcontextprotocol/clientCapabilities"))
)

// legacyMessage serves a message without modern _meta: initialize opens
// the implicit session; anything else belongs to it.
func (sc *stdioConn) legacyMessage(req *mcp.Request, p *rawParams) {
	s, ep := sc.srv, sc.ep
	if req.Method == mcp.MethodInitialize && !req.IsNotification() {
		if ep.legacyMethods == nil {
			perr := refuseLegacyInitialize(ep, req)
			if perr == nil {
				perr = errMethodNotFound
			}
			sc.sendError(req.ID, perr)
			return
		}
		sc.initialize(req)
		return
	}
	sc.mu.Lock()
	ls := sc.legacy
	sc.mu.Unlock()
	if ls == nil {
		if !req.IsNotification() {
			sc.sendError(req.ID, errNotInitialized)
		}
		return
	}
	id := *sc.opts.Identity
	if req.IsNotification() {
		return // notifications/initialized and the rest: accepted, ignored
	}
	sc.start(req, false, func(in inbound) {
		cs, perr := s.legacy.sessions.find(in.r.Context(), ls.key, ep.opts.Name, id)
		if perr != nil {
			s.rejectOn(ep, in.stream, req.ID, perr)
			return
		}
		ep.dispatchLegacy(s, in, req, p, cs, id)
	})
}

// initialize opens the connection's session and starts the pump that
// writes the session's notifications and keeps it alive.
func (sc *stdioConn) initialize(req *mcp.Request) {
	s, ep := sc.srv, sc.ep
	sc.mu.Lock()
	already := sc.legacy != nil
	sc.mu.Unlock()
	if already {
		sc.sendError(req.ID, errAlreadyInitialized)
		return
	}
	ip, perr := decodeInitialize(req)
	if perr != nil {
		sc.sendError(req.ID, perr)
		return
	}
	// initialize runs on the reader, in order: the client's next message
	// finds the session.
	sid, res, perr := ep.openSession(sc.ctx, nil, s, ip, *sc.opts.Identity)
	if perr != nil {
		sc.sendError(req.ID, perr)
		return
	}
	key := sessionKey(sid)
	gs := &getStream{ch: make(chan []byte, getStreamQueue), done: make(chan struct{})}
	if perr := s.legacy.live.openStream(key, ep.opts.Name, gs); perr != nil {
		s.legacy.sessions.delete(sc.ctx, key)
		sc.sendError(req.ID, perr)
		return
	}
	ls := &stdioSession{key: key, stop: make(chan struct{}), done: make(chan struct{})}
	sc.mu.Lock()
	sc.legacy = ls
	sc.mu.Unlock()
	go sc.pump(ls, gs) // owned by the connection: closeSession ends it
	bp := getBuf()
	*bp = mcp.AppendResult((*bp)[:0], req.ID, res)
	sc.reply(*bp)
	putBuf(bp)
}

// pump writes the notifications queued for the session (what a GET stream
// carries over HTTP) and keeps the session alive in its store while the
// connection lasts, until closeSession or the end of the session.
func (sc *stdioConn) pump(ls *stdioSession, gs *getStream) {
	defer close(ls.done)
	s := sc.srv
	defer s.legacy.live.release(ls.key, func(l *nodeSession) {
		if l.get == gs {
			l.get = nil
		}
	})
	touch := time.NewTicker(s.legacy.sessions.touchInterval())
	defer touch.Stop()
	for {
		select {
		case <-ls.stop:
			return
		case <-gs.done:
			return
		case msg := <-gs.ch:
			// closeSession must not wait on a full queue.
			if !sc.w.Enqueue(stdioframe.Frame(msg), ls.stop, sc.ctx.Done()) {
				return
			}
		case <-touch.C:
			// find touches the record once per touch interval; a session
			// that reached its end is gone (its requests then get -32001).
			if _, perr := s.legacy.sessions.find(sc.ctx, ls.key, sc.ep.opts.Name, *sc.opts.Identity); perr == errSessionNotFound {
				return
			}
		}
	}
}

// closeSession ends the connection's session, if any: the pump stops and
// the session is deleted from its store. Its requests have ended.
func (sc *stdioConn) closeSession() {
	sc.mu.Lock()
	ls := sc.legacy
	sc.legacy = nil
	sc.mu.Unlock()
	if ls == nil {
		return
	}
	close(ls.stop)
	<-ls.done
	l := sc.srv.legacy
	ctx, cancel := context.WithTimeout(context.Background(), storeCallTimeout)
	defer cancel()
	l.sessions.delete(ctx, ls.key)
	l.live.end(ls.key)
	l.pending.dropSession(ls.key)
	l.tasks.endSession(ls.key)
}

// answer delivers a client's response to a server-to-client request of
// the connection's session; any other response is dropped (the stdio
// transport answers no response).
func (sc *stdioConn) answer(body []byte, id mcp.ID) {
	sc.mu.Lock()
	ls := sc.legacy
	sc.mu.Unlock()
	if ls == nil {
		return
	}
	var sid string
	if json.Unmarshal(id.Raw(), &sid) != nil {
		return
	}
	if a, ok, _ := decodeAnswer(body); ok {
		sc.srv.deliverAnswer(sid, ls.key, a)
	}
}
