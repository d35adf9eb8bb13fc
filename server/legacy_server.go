package server

import (
	"fmt"
	"net/http"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// legacyServer is the server's 2025-era state: sessions, their node-local
// live state, the server-to-client requests waiting for answers and the
// relay that carries answers between nodes. It exists when an endpoint
// serves a 2025 revision.
type legacyServer struct {
	sessions  *sessionRecords
	live      *nodeSessions
	pending   *pendingTable
	nodeID    string
	relay     AnswerRelay
	stopRelay func()
	tasks     legacyTaskState // the 2025-11-25 tasks layer (legacy_tasks_status.go)
	resume    *resumeState    // resumable POST streams (legacy_resume.go)
	// released counts the calls running on after the server released
	// their POST stream (legacy_calls.go); close cancels them and
	// Server.Close waits for them, bounded.
	released joinGroup
}

// getStreamWriteTimeout bounds each write to a GET stream, so that a
// client that stops reading ends its own stream only.
const getStreamWriteTimeout = 30 * time.Second

func newLegacyServer(o Options) (*legacyServer, error) {
	m, err := newSessionRecords(o.Sessions, o.now, o.Logger)
	if err != nil {
		return nil, err
	}
	l := &legacyServer{
		sessions: m,
		live:     newNodeSessions(m.opts.MaxSessions, o.now),
		pending:  &pendingTable{byID: map[string]*pendingAnswer{}},
		nodeID:   o.NodeID,
		relay:    o.AnswerRelay,
		resume:   newResumeState(m.opts.Resume, o.now),
	}
	if l.nodeID == "" {
		l.nodeID = randomNodeID()
	}
	if l.relay == nil {
		l.relay = localRelay{}
	}
	m.gone = func(key string) {
		l.live.end(key)
		l.pending.dropSession(key)
		l.tasks.endSession(key)
	}
	idle := m.opts.IdleTimeout
	m.swept = func(now time.Time) { l.live.sweep(now, idle) }
	return l, nil
}

// start registers the node for forwarded answers.
func (l *legacyServer) start(s *Server) error {
	stop, err := l.relay.Receive(l.nodeID, s.receiveForwarded)
	if err != nil {
		return fmt.Errorf("server: answer relay: %w", err)
	}
	l.stopRelay = stop
	return nil
}

// close ends every GET stream of the node's sessions, cancels the calls
// whose POST stream was released (their output could only be resumed by
// a GET) and stops receiving forwarded answers. Sessions stay in the store
// and their other requests keep being served.
func (l *legacyServer) close() {
	l.released.cancel()
	l.live.close()
	l.tasks.close()
	if l.stopRelay != nil {
		l.stopRelay()
	}
}

// serveGetStream holds a session's standalone SSE stream open: one per
// session on this node (a second GET is 409). It carries the
// notifications queued for the session (notifications/resources/updated,
// list changes) and keep-alive comments, and it keeps the session alive
// (and notices its end through another node) by naming it in the store
// every touch interval. It ends when the client leaves, the session is
// deleted or reaches its absolute end, or the server closes.
func (s *Server) serveGetStream(ep *Endpoint, w http.ResponseWriter, r *http.Request, cs *cachedSession) {
	key := cs.rec.Key
	gs := &getStream{ch: make(chan []byte, getStreamQueue), done: make(chan struct{})}
	if perr := s.legacy.live.openStream(key, cs.rec.Endpoint, gs); perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	defer s.legacy.live.release(key, func(ls *nodeSession) {
		if ls.get == gs {
			ls.get = nil
		}
	})
	st := newResponseStream(w, s.opts.KeepAliveInterval)
	st.ownKeepAlive = true
	st.writeTimeout = getStreamWriteTimeout
	st.mu.Lock()
	st.startSSELocked()
	err := st.rc.Flush()
	st.mu.Unlock()
	if err != nil {
		st.abandon()
		return
	}
	defer st.abandon()
	keepAlive := time.NewTicker(s.opts.KeepAliveInterval)
	defer keepAlive.Stop()
	end := time.NewTimer(cs.rec.ExpiresAt.Sub(s.opts.now()))
	defer end.Stop()
	lastTouch := s.opts.now()
	id := Identity{Tenant: cs.rec.Tenant, Principal: cs.rec.Principal}
	for {
		select {
		case <-r.Context().Done():
			return
		case <-gs.done:
			return
		case <-end.C:
			return
		case msg := <-gs.ch:
			if st.sendMessage(msg) != nil {
				return
			}
		case <-keepAlive.C:
			if st.comment() != nil {
				return
			}
			if now := s.opts.now(); now.Sub(lastTouch) >= s.legacy.sessions.touchInterval() {
				lastTouch = now
				if _, perr := s.legacy.sessions.find(r.Context(), key, ep.opts.Name, id); perr == errSessionNotFound {
					return
				}
			}
		}
	}
}
