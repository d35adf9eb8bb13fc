package server

import (
	"bytes"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// replayStream is one resumable response stream: its events (in the
// session's replay buffer) and the connection that currently carries it,
// the POST's or a resuming GET's, or none.
type replayStream struct {
	sess  *sessionReplay
	token string
	retry time.Duration

	mu   sync.Mutex // orders the connection's I/O; taken before sess.mu
	sink *attachment
	poll time.Duration // close each connection this long after it opened

	// Under sess.mu:
	events  []replayEvent
	next    uint64 // position of the next event
	first   uint64 // the lowest position still replayable
	ended   bool   // the call's response was written, or the call ended without one
	endedAt time.Time
}

// attachment is one HTTP response carrying a replayStream.
type attachment struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration // bounds each write; zero: none
	timer   *time.Timer   // the polling close, if armed
	// closer, set for a POST whose handler runs the call itself (HTTP/1),
	// ends its response while the handler goes on: it takes the
	// connection over, writes tail and the end of the body, and closes
	// it. It reports false, changing nothing, when the connection cannot
	// be taken over.
	closer func(tail []byte) bool
	// gone is closed when the stream leaves this connection: byServer is
	// set first when the server let it go (closed it, handed it to
	// another connection, or the call ended); otherwise a write failed.
	gone     chan struct{}
	byServer atomic.Bool
}

func newAttachment(w http.ResponseWriter, timeout time.Duration) *attachment {
	return &attachment{w: w, rc: http.NewResponseController(w), timeout: timeout, gone: make(chan struct{})}
}

// writeLocked writes b to the connection, if any, and flushes it; a
// failed write lets the connection go. Under rs.mu.
func (rs *replayStream) writeLocked(b []byte) error {
	a := rs.sink
	if a == nil {
		return errStreamClosed
	}
	if a.timeout > 0 {
		a.rc.SetWriteDeadline(time.Now().Add(a.timeout))
	}
	_, err := a.w.Write(b)
	if err == nil {
		err = a.rc.Flush()
	}
	if err != nil {
		rs.detachLocked(false)
	}
	return err
}

// detachLocked lets the current connection go. Under rs.mu.
func (rs *replayStream) detachLocked(byServer bool) {
	a := rs.sink
	if a == nil {
		return
	}
	rs.sink = nil
	if a.timer != nil {
		a.timer.Stop()
	}
	a.byServer.Store(byServer)
	close(a.gone)
}

// closeLocked sends a retry field and lets the connection go, ending its
// response (SEP-1699 polling). It fails with ErrNotResumable, changing
// nothing, when the connection's response cannot be ended early. Under
// rs.mu.
func (rs *replayStream) closeLocked(retry time.Duration) error {
	a := rs.sink
	if a == nil {
		return nil
	}
	if retry <= 0 {
		retry = rs.retry
	}
	if a.closer != nil {
		if !a.closer(appendRetry(nil, retry)) {
			return ErrNotResumable
		}
	} else {
		rs.writeLocked(appendRetry(nil, retry))
	}
	rs.detachLocked(true)
	return nil
}

// letGoLocked ends the current connection's response, if it can, and lets
// it go, for a resumption that takes the stream over. Under rs.mu.
func (rs *replayStream) letGoLocked() {
	if a := rs.sink; a != nil && a.closer != nil {
		a.closer(nil)
	}
	rs.detachLocked(true)
}

// appendRetry appends an SSE block with only a retry field, in whole
// milliseconds (at least 1).
func appendRetry(b []byte, retry time.Duration) []byte {
	b = append(b, "retry: "...)
	b = strconv.AppendInt(b, max(1, retry.Milliseconds()), 10)
	return append(b, "\n\n"...)
}

// armLocked starts the polling close of the current connection. Under
// rs.mu.
func (rs *replayStream) armLocked() {
	a := rs.sink
	if a == nil || rs.poll <= 0 || a.timer != nil {
		return
	}
	a.timer = time.AfterFunc(rs.poll, func() {
		rs.mu.Lock()
		if rs.sink == a {
			rs.closeLocked(0)
		}
		rs.mu.Unlock()
	})
}

// setPoll makes every connection of the stream close d after it opened,
// starting with the current one.
func (rs *replayStream) setPoll(d time.Duration) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.poll = d
	rs.armLocked()
}

// eventID appends the ID of the event at seq.
func (rs *replayStream) appendID(b []byte, seq uint64) []byte {
	b = append(b, "id: "...)
	b = append(b, rs.token...)
	b = append(b, '.')
	b = strconv.AppendUint(b, seq, 10)
	return append(b, '\n')
}

// prime sends the priming event: an ID, the retry field and empty data.
func (rs *replayStream) prime() {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.sess.mu.Lock()
	seq := rs.next
	rs.next++
	rs.sess.mu.Unlock()
	b := rs.appendID(nil, seq)
	b = append(b, "retry: "...)
	b = strconv.AppendInt(b, max(1, rs.retry.Milliseconds()), 10)
	b = append(b, "\ndata:\n\n"...)
	rs.writeLocked(b)
}

// emit takes one frame the call's responseStream wrote: an event ("data:
// ...") gets the next ID, is kept in the replay buffer and sent on the
// connection, if any; anything else (a keep-alive comment) is only sent.
// It fails only for an event that was neither kept nor sent.
func (rs *replayStream) emit(frame []byte) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if !bytes.HasPrefix(frame, sseData) {
		rs.writeLocked(frame)
		return nil
	}
	sr := rs.sess
	sr.mu.Lock()
	seq := rs.next
	rs.next++
	ev := replayEvent{seq: seq, frame: append(rs.appendID(make([]byte, 0, len(frame)+48), seq), frame...)}
	sr.retainLocked(rs, ev)
	kept := len(rs.events) > 0 && rs.events[len(rs.events)-1].seq == seq
	sr.mu.Unlock()
	if err := rs.writeLocked(ev.frame); err != nil && !kept {
		return err
	}
	return nil
}

// lostLocked records that the event at seq could not be kept: no
// resumption may continue from before it, so the events before it are
// dropped. Under sess.mu.
func (rs *replayStream) lostLocked(seq uint64) {
	rs.sess.dropLocked(rs, len(rs.events))
	rs.first = seq + 1
}

// end records that the call ended (its final response is written, or it
// ended without one) and ends the resuming connection, if any; the POST
// ends with its handler.
func (rs *replayStream) end(post *attachment) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.sess.mu.Lock()
	rs.ended, rs.endedAt = true, rs.sess.l.now()
	rs.sess.mu.Unlock()
	if rs.sink != nil && rs.sink != post {
		rs.detachLocked(true)
	}
}

var errUnknownEventID = newProtocolError(http.StatusBadRequest, mcp.NewError(mcp.CodeInvalidRequest,
	"Bad Request: Last-Event-ID names no stream of this session that can be resumed here"))

// attach makes a a resuming connection of the stream: it answers 200 with
// SSE, replays the events after position after and, unless the call has
// ended, carries the rest of the stream until the server lets it go (the
// call ends, a polling close, another resumption, the end of the
// session) or a write fails. A connection that carried the stream so far
// is let go first. It fails with errUnknownEventID, writing nothing, when
// after is not a position of the stream or an event after it is no longer
// kept.
func (rs *replayStream) attach(a *attachment, after uint64) *protocolError {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	sr := rs.sess
	sr.mu.Lock()
	if after >= rs.next || after+1 < rs.first || sr.closed {
		sr.mu.Unlock()
		return errUnknownEventID
	}
	var frames [][]byte
	for _, ev := range rs.events {
		if ev.seq > after {
			frames = append(frames, ev.frame)
		}
	}
	ended := rs.ended
	sr.mu.Unlock()
	rs.letGoLocked()
	h := a.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	a.w.WriteHeader(http.StatusOK)
	rs.sink = a
	if len(frames) == 0 {
		if err := a.rc.Flush(); err != nil {
			rs.detachLocked(false)
			return nil
		}
	}
	for _, f := range frames {
		if rs.writeLocked(f) != nil {
			return nil
		}
	}
	if ended {
		rs.detachLocked(true)
		return nil
	}
	rs.armLocked()
	return nil
}

// release lets a go if it still carries the stream (its handler returns).
func (rs *replayStream) release(a *attachment) {
	rs.mu.Lock()
	if rs.sink == a {
		rs.detachLocked(true)
	}
	rs.mu.Unlock()
}

// resumeWriter is the http.ResponseWriter under the responseStream of a
// request of a 2025-11-25 session. Until the response becomes SSE it
// passes everything to the POST's response. When it does, it registers a
// replayStream in the session's replay buffer, sends the priming event,
// and hands each flushed frame (the responseStream flushes after every
// event and comment) to the stream, which numbers, keeps and sends it on
// whatever connection carries the stream then. It is used only under the
// responseStream's lock, except for rs, which CloseSSEStream and the POST
// handler read.
type resumeWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	open    func() *replayStream // registers the stream; nil when it cannot
	post    *attachment
	rs      atomic.Pointer[replayStream]
	async   bool // the call runs on a goroutine of its own (HTTP/2)
	sse     bool
	pending []byte
}

func (rw *resumeWriter) Header() http.Header { return rw.w.Header() }

func (rw *resumeWriter) WriteHeader(code int) {
	if rw.sse || code != http.StatusOK || rw.w.Header().Get("Content-Type") != "text/event-stream" {
		rw.w.WriteHeader(code)
		return
	}
	rw.sse = true
	rw.w.WriteHeader(code)
	rs := rw.open()
	if rs == nil {
		return
	}
	rs.mu.Lock()
	rs.sink = rw.post
	rs.mu.Unlock()
	rw.rs.Store(rs)
	rs.prime()
}

func (rw *resumeWriter) Write(b []byte) (int, error) {
	if !rw.sse || rw.rs.Load() == nil {
		return rw.w.Write(b)
	}
	rw.pending = append(rw.pending, b...)
	return len(b), nil
}

// FlushError hands the frame written since the last flush to the stream.
func (rw *resumeWriter) FlushError() error {
	rs := rw.rs.Load()
	if !rw.sse || rs == nil {
		return rw.rc.Flush()
	}
	frame := rw.pending
	rw.pending = rw.pending[:0]
	if len(frame) == 0 {
		return nil
	}
	return rs.emit(frame)
}

// SetWriteDeadline applies to the POST's response until the stream is
// resumable; after that each connection has its own.
func (rw *resumeWriter) SetWriteDeadline(t time.Time) error {
	if rw.rs.Load() == nil {
		return rw.rc.SetWriteDeadline(t)
	}
	return nil
}

// closeStream is Request.CloseSSEStream.
func (rw *resumeWriter) closeStream(st *responseStream, retry time.Duration) error {
	if err := st.beginSSE(); err != nil {
		return nil // the final response is written: nothing to close
	}
	rs := rw.rs.Load()
	if rs == nil {
		return ErrNotResumable
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.closeLocked(retry)
}

// ended runs when the call's responseStream finishes (onFinish).
func (rw *resumeWriter) ended() {
	if rs := rw.rs.Load(); rs != nil {
		rs.end(rw.post)
	}
}

// releasedByServer reports whether the server let the POST's response go
// (closed it, or handed the stream to a resuming GET): the call then goes
// on without it.
func (rw *resumeWriter) releasedByServer() bool {
	select {
	case <-rw.post.gone:
		return rw.post.byServer.Load()
	default:
		return false
	}
}

// release lets the POST's response go as its handler returns.
func (rw *resumeWriter) release() {
	if rs := rw.rs.Load(); rs != nil {
		rs.release(rw.post)
	}
}

// resumable returns the stream's resumeWriter, or nil for a stream that
// cannot be resumed.
func (st *responseStream) resumable() *resumeWriter {
	st.mu.Lock()
	defer st.mu.Unlock()
	rw, _ := st.w.(*resumeWriter)
	return rw
}

// newResumeWriter returns the writer of a request r of a 2025-11-25
// session whose store key is key, or nil when resumability is off. Over
// HTTP/1 the handler runs the call itself and a close takes the
// connection over (see attachment.closer); over HTTP/2, which cannot end
// a response before its handler returns, the call runs on a goroutine of
// its own (async) and the handler returns at the close.
func (l *legacyServer) newResumeWriter(w http.ResponseWriter, r *http.Request, key string) *resumeWriter {
	if l.resume.opts.Disabled {
		return nil
	}
	rw := &resumeWriter{w: w, rc: http.NewResponseController(w), post: newAttachment(w, 0), async: r.ProtoMajor >= 2}
	if !rw.async {
		chunked := r.ProtoAtLeast(1, 1)
		rw.post.closer = func(tail []byte) bool { return endHijacked(rw.rc, tail, chunked) }
	}
	rw.open = func() *replayStream {
		var sr *sessionReplay
		if l.live.with(key, func(ls *nodeSession) *protocolError {
			if ls.ended {
				return errSessionNotFound
			}
			if ls.replay == nil {
				ls.replay = &sessionReplay{l: l.resume}
			}
			sr = ls.replay
			return nil
		}) != nil {
			return nil
		}
		return sr.open(l.resume.opts.Retry)
	}
	return rw
}

// serveResume answers a GET with Last-Event-ID: it carries the stream the
// ID names (see replayStream.attach) until the server or the client lets
// it go. Anything but a position of a stream of this session kept on this
// node is errUnknownEventID.
func (s *Server) serveResume(ep *Endpoint, w http.ResponseWriter, r *http.Request, cs *cachedSession, lastID []string) {
	rs := s.findStream(cs, lastID)
	if rs == nil {
		s.reject(ep, w, mcp.ID{}, errUnknownEventID)
		return
	}
	_, after, _ := parseEventID(lastID[0])
	a := newAttachment(w, getStreamWriteTimeout)
	if perr := rs.attach(a, after); perr != nil {
		s.reject(ep, w, mcp.ID{}, perr)
		return
	}
	defer rs.release(a)
	select {
	case <-a.gone:
	case <-r.Context().Done():
	}
}

// findStream returns the stream lastID names in the session cs, or nil.
func (s *Server) findStream(cs *cachedSession, lastID []string) *replayStream {
	if s.legacy.resume.opts.Disabled || cs.rec.ProtocolVersion < mcp.ProtocolVersion20251125 || len(lastID) != 1 {
		return nil
	}
	token, _, ok := parseEventID(lastID[0])
	if !ok {
		return nil
	}
	ls := s.legacy.live.lookup(cs.rec.Key)
	if ls == nil {
		return nil
	}
	ls.mu.Lock()
	sr := ls.replay
	ls.mu.Unlock()
	if sr == nil {
		return nil
	}
	return sr.find(token)
}

// pollInline applies ResumeOptions.InlinePollInterval to the resumable
// stream of an inline wait, if it has one.
func (c *call) pollInline() {
	if c.legacy == nil {
		return
	}
	d := c.srv.legacy.resume.opts.InlinePollInterval
	if d <= 0 {
		return
	}
	if rw := c.stream.resumable(); rw != nil {
		if rs := rw.rs.Load(); rs != nil {
			rs.setPoll(d)
		}
	}
}

// endHijacked takes an HTTP/1 response over from net/http (which flushes
// what it buffers), writes tail and, for a chunked body, its end, and
// closes the connection, under a write deadline. The request's context
// stays valid until its handler returns. It reports false when the
// response cannot be taken over.
func endHijacked(rc *http.ResponseController, tail []byte, chunked bool) bool {
	conn, buf, err := rc.Hijack()
	if err != nil {
		return false
	}
	defer conn.Close()
	conn.SetWriteDeadline(time.Now().Add(getStreamWriteTimeout))
	if buf.Flush() != nil {
		return true
	}
	var out []byte
	if chunked {
		if len(tail) > 0 {
			out = appendChunk(out, tail)
		}
		out = append(out, lastChunk...)
	} else {
		out = tail
	}
	conn.Write(out)
	return true
}
