package server

import (
	"bytes"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// responseStream writes the response to one request. It answers with a
// single application/json body unless the handler sends a notification
// first, in which case it switches to text/event-stream, sends each message
// as one SSE event, keeps the stream alive with comments, and ends with the
// final response. Exactly one final response is written; later writes are
// dropped. Safe for concurrent use.
type responseStream struct {
	// sink, when set, carries every message whole instead of an HTTP
	// response (a transport without HTTP framing, such as stdio; see
	// newMessageStream); w and rc are then nil.
	sink messageSink

	w         http.ResponseWriter
	rc        *http.ResponseController
	keepAlive time.Duration

	// writeTimeout, when set, bounds each write so that a client that
	// stops reading closes its own stream only.
	writeTimeout time.Duration
	// ownKeepAlive means the caller sends keep-alives itself (listen
	// streams), so no keep-alive goroutine is started.
	ownKeepAlive bool

	// onFinish, when set, runs once after the final response is written
	// or the stream is abandoned, outside the lock. It may block: the
	// request does not finish (nor, unless the stream was taken over, its
	// handler return) before it does.
	onFinish func()

	mu       sync.Mutex
	deadline int64 // the write deadline last set (writeTimeout), in Unix nanoseconds
	// conn is the connection once the stream has been taken over from
	// net/http (see hijack); w and rc are then nil, and every write is a
	// chunk of the response's chunked body.
	conn net.Conn
	// raw is conn's descriptor when it has one (plain TCP), for the
	// fan-out's writes that must never wait (tryNotifyTask); rawWrite
	// writes wbuf through it, leaving the result in wn and werr.
	raw      syscall.RawConn
	rawWrite func(fd uintptr) bool
	wbuf     []byte
	wn       int
	werr     error
	// pending is the unwritten tail of a frame tryNotifyTask could only
	// partly write; every later write sends it first. At most one frame.
	pending  []byte
	gone     chan struct{} // closed by the reader when the client has left (hijacked streams)
	read     chan struct{} // closed when the reader has ended
	sse      bool
	finished bool
	status   int           // status of the final response, for the observer
	stop     chan struct{} // closes the keep-alive goroutine
	done     chan struct{} // closed when the keep-alive goroutine has ended
}

func newResponseStream(w http.ResponseWriter, keepAlive time.Duration) *responseStream {
	return &responseStream{w: w, rc: http.NewResponseController(w), keepAlive: keepAlive}
}

// messageSink is the message half of a transport that frames messages
// itself (stdio): send writes, or queues in order, one complete encoded
// JSON-RPC message; msg is reused once send returns. It fails once the
// transport can carry no more.
type messageSink interface {
	send(msg []byte) error
}

// newMessageStream returns a stream whose messages all go to sink: the
// notifications, server-to-client requests and final response of one
// request, with no HTTP status, headers, SSE framing or keep-alives.
func newMessageStream(sink messageSink) *responseStream {
	return &responseStream{sink: sink, sse: true}
}

// notify sends a notification related to the request, switching the
// response to SSE if needed. It fails once the final response is written.
func (st *responseStream) notify(method string, params []byte) error {
	bp := getBuf()
	defer putBuf(bp)
	*bp = mcp.AppendNotification((*bp)[:0], method, params)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished {
		return errStreamClosed
	}
	if !st.sse {
		st.startSSELocked()
	}
	return st.writeEventLocked(*bp)
}

// taskNotificationStart is a notifications/tasks message up to its params.
var taskNotificationStart = func() []byte {
	b := mcp.AppendNotification(nil, mcp.NotificationTasks, nil)
	return append(b[:len(b)-1], `,"params":`...) // reopen the object
}()

var (
	sseData      = []byte("data: ")
	sseEventEnd  = []byte("\n\n")
	sseKeepAlive = []byte(": keep-alive\n\n")
)

// notifyTask sends a notifications/tasks message whose params are the
// concatenation of parts, framed as one SSE event and written at once.
func (st *responseStream) notifyTask(parts ...string) error {
	bp := getBuf()
	defer putBuf(bp)
	b := append((*bp)[:0], sseData...)
	b = append(b, taskNotificationStart...)
	for _, p := range parts {
		b = append(b, p...)
	}
	b = append(b, '}')
	*bp = append(b, sseEventEnd...)
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished {
		return errStreamClosed
	}
	if !st.sse {
		st.startSSELocked()
	}
	return st.writeLocked(*bp)
}

func (st *responseStream) startSSELocked() {
	st.sse = true
	h := st.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	h.Del("Content-Length")
	st.w.WriteHeader(http.StatusOK)
	st.status = http.StatusOK
	if st.ownKeepAlive {
		return
	}
	st.stop = make(chan struct{})
	st.done = make(chan struct{})
	go st.keepAliveLoop()
}

// comment sends an SSE keep-alive comment.
func (st *responseStream) comment() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished || !st.sse {
		return errStreamClosed
	}
	return st.writeLocked(sseKeepAlive)
}

// writeLocked writes b at once under the write deadline and flushes it:
// through net/http, or as one chunk straight to a hijacked connection.
func (st *responseStream) writeLocked(b []byte) error {
	if st.sink != nil {
		// A message transport carries messages, not SSE: a comment
		// (keep-alive) is dropped, an event's data is sent whole.
		if msg, ok := bytes.CutPrefix(b, sseData); ok {
			return st.sink.send(bytes.TrimSuffix(msg, sseEventEnd))
		}
		return nil
	}
	st.setWriteDeadlineLocked()
	if st.conn == nil {
		if _, err := st.w.Write(b); err != nil {
			return err
		}
		return st.rc.Flush()
	}
	if len(st.pending) > 0 {
		if _, err := st.conn.Write(st.pending); err != nil {
			return err
		}
		st.pending = nil
	}
	bp := getBuf()
	defer putBuf(bp)
	*bp = appendChunk((*bp)[:0], b)
	_, err := st.conn.Write(*bp)
	return err
}

// tryResult is what tryNotifyTask did.
type tryResult int

const (
	// tryRefused: nothing was written (the stream is busy, backed up, or
	// cannot be written without waiting); the caller hands the
	// notification to the listen's own goroutine.
	tryRefused tryResult = iota
	// trySent: the whole frame was written.
	trySent
	// tryPartial: the frame's head was written and its tail kept in
	// pending; the listen's goroutine must be woken to write it
	// (flushPending) under the write deadline.
	tryPartial
	// tryFinished: the final response is written; nothing more is sent.
	tryFinished
)

// tryNotifyTask sends a notifications/tasks message whose params are
// prefix, id and suffix, like notifyTask, but never waits: not for the
// stream's lock (held by a keep-alive, a blocking write or the final
// response), nor for room in the socket's send buffer. It writes only to
// a stream taken over from net/http with a descriptor, and only when no
// earlier frame's tail is pending, so frames never interleave.
func (st *responseStream) tryNotifyTask(prefix, id, suffix string) tryResult {
	if !st.mu.TryLock() {
		return tryRefused
	}
	defer st.mu.Unlock()
	if st.finished {
		return tryFinished
	}
	if st.rawWrite == nil || len(st.pending) > 0 {
		return tryRefused
	}
	bp := getBuf()
	defer putBuf(bp)
	n := len(sseData) + len(taskNotificationStart) + len(prefix) + len(id) + len(suffix) + 1 + len(sseEventEnd)
	b := strconv.AppendInt((*bp)[:0], int64(n), 16)
	b = append(b, "\r\n"...)
	b = append(b, sseData...)
	b = append(b, taskNotificationStart...)
	b = append(b, prefix...)
	b = append(b, id...)
	b = append(b, suffix...)
	b = append(b, '}')
	b = append(b, sseEventEnd...)
	*bp = append(b, "\r\n"...)
	// A write deadline that has passed (set by an earlier blocking write)
	// would refuse the write; renewing it costs a clock read, and a call
	// into the poller about once per eighth of WriteTimeout.
	st.setWriteDeadlineLocked()
	st.wbuf, st.wn, st.werr = *bp, 0, nil
	err := st.raw.Write(st.rawWrite)
	st.wbuf = nil
	w := st.wn
	if err != nil || st.werr != nil || w <= 0 {
		return tryRefused
	}
	if w < len(*bp) {
		st.pending = append([]byte(nil), (*bp)[w:]...)
		return tryPartial
	}
	return trySent
}

// flushPending writes the tail tryNotifyTask left, under the write
// deadline.
func (st *responseStream) flushPending() error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished || len(st.pending) == 0 {
		return nil
	}
	st.setWriteDeadlineLocked()
	_, err := st.conn.Write(st.pending)
	st.pending = nil
	return err
}

// appendChunk appends b framed as one chunk of a chunked HTTP/1.1 body.
func appendChunk(dst, b []byte) []byte {
	dst = strconv.AppendInt(dst, int64(len(b)), 16)
	dst = append(dst, "\r\n"...)
	dst = append(dst, b...)
	return append(dst, "\r\n"...)
}

// lastChunk ends a chunked HTTP/1.1 body without trailers.
var lastChunk = []byte("0\r\n\r\n")

// setWriteDeadlineLocked gives the next write at least writeTimeout. The
// deadline is set to writeTimeout and an eighth ahead, and set again only
// once less than writeTimeout remains, so a stream that writes often (a
// fan-out, keep-alives) sets it about once per eighth of the timeout, not
// on every write: each SetWriteDeadline reschedules a runtime timer.
func (st *responseStream) setWriteDeadlineLocked() {
	if st.writeTimeout <= 0 {
		return
	}
	now := time.Now()
	if time.Duration(st.deadline-now.UnixNano()) >= st.writeTimeout {
		return
	}
	d := now.Add(st.writeTimeout + st.writeTimeout/8)
	st.deadline = d.UnixNano()
	if st.conn != nil {
		st.conn.SetWriteDeadline(d)
		return
	}
	st.rc.SetWriteDeadline(d)
}

// keepAliveLoop sends SSE comments until the stream finishes. It is owned by
// the stream and ends in finish.
func (st *responseStream) keepAliveLoop() {
	defer close(st.done)
	t := time.NewTicker(st.keepAlive)
	defer t.Stop()
	for {
		select {
		case <-st.stop:
			return
		case <-t.C:
			st.mu.Lock()
			if !st.finished {
				st.w.Write(sseKeepAlive)
				st.rc.Flush()
			}
			st.mu.Unlock()
		}
	}
}

func (st *responseStream) writeEventLocked(msg []byte) error {
	if st.sink != nil {
		return st.sink.send(msg)
	}
	if st.conn != nil {
		bp := getBuf()
		defer putBuf(bp)
		b := append((*bp)[:0], sseData...)
		b = append(b, msg...)
		*bp = append(b, sseEventEnd...)
		return st.writeLocked(*bp)
	}
	st.setWriteDeadlineLocked()
	if _, err := st.w.Write(sseData); err != nil {
		return err
	}
	if _, err := st.w.Write(msg); err != nil {
		return err
	}
	if _, err := st.w.Write(sseEventEnd); err != nil {
		return err
	}
	return st.rc.Flush()
}

// finishResult writes the final successful response. It reports false if a
// final response was already written.
func (st *responseStream) finishResult(id mcp.ID, result []byte) bool {
	st.mu.Lock()
	if st.finished {
		st.mu.Unlock()
		return false
	}
	if st.sse {
		bp := getBuf()
		*bp = mcp.AppendResult((*bp)[:0], id, result)
		if st.writeEventLocked(*bp) == nil && st.conn != nil {
			st.conn.Write(lastChunk)
		}
		putBuf(bp)
	} else {
		writeResult(st.w, id, result)
		st.status = http.StatusOK
	}
	st.finishLocked()
	return true
}

// finishError writes the final error response. On an SSE stream the HTTP
// status is already 200, so the error travels as the final event.
func (st *responseStream) finishError(id mcp.ID, pe *protocolError) bool {
	st.mu.Lock()
	if st.finished {
		st.mu.Unlock()
		return false
	}
	if st.sse {
		bp := getBuf()
		*bp = mcp.AppendError((*bp)[:0], id, pe.err)
		if st.writeEventLocked(*bp) == nil && st.conn != nil {
			st.conn.Write(lastChunk)
		}
		putBuf(bp)
	} else {
		writeError(st.w, id, pe)
		st.rc.Flush()
		st.status = pe.status
	}
	st.finishLocked()
	return true
}

// finishLocked marks the stream finished, unlocks it, waits for the
// keep-alive goroutine to end, and runs onFinish.
func (st *responseStream) finishLocked() {
	st.finished = true
	stop, done, after := st.stop, st.done, st.onFinish
	conn, read := st.conn, st.read
	st.mu.Unlock()
	if stop != nil {
		close(stop)
		<-done
	}
	if conn != nil {
		conn.Close() // ends the reader
		<-read
	}
	if after != nil {
		after()
	}
}

// abandon marks the stream finished without writing, for a client that has
// gone away. It reports false if a final response was already written.
func (st *responseStream) abandon() bool {
	st.mu.Lock()
	if st.finished {
		st.mu.Unlock()
		return false
	}
	st.finishLocked()
	return true
}

// hijack takes an HTTP/1.1 SSE stream over from net/http once its
// headers and first events are flushed, so that its handler can return:
// an idle stream then holds no handler goroutine and none of net/http's
// connection buffers. Later events are written as chunks straight to the
// connection, and the final response ends the chunked body and closes the
// connection. A reader goroutine, owned by the stream and ended by closing
// the connection in finish, watches for the client leaving: it closes
// gone and calls left. hijack reports false, leaving the stream as it
// was, when the response cannot be taken over (HTTP/2, a recorder).
func (st *responseStream) hijack(left func()) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.finished || !st.sse || st.stop != nil || st.sink != nil {
		return false
	}
	conn, _, err := st.rc.Hijack() // flushes what net/http still buffers
	if err != nil {
		return false
	}
	st.takeOverLocked(conn)
	st.deadline = 0 // Hijack cleared the connection's deadlines
	st.gone, st.read = make(chan struct{}), make(chan struct{})
	go st.readUntilGone(conn, left)
	return true
}

// takeOverLocked makes conn the stream's connection, written without
// net/http, and keeps its descriptor for tryNotifyTask when it has one.
func (st *responseStream) takeOverLocked(conn net.Conn) {
	st.conn, st.w, st.rc = conn, nil, nil
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return // TLS, or a wrapped connection: every write may wait
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	st.raw = raw
	st.rawWrite = func(fd uintptr) bool { // runs under st.mu
		for {
			st.wn, st.werr = syscall.Write(int(fd), st.wbuf)
			if st.werr != syscall.EINTR {
				return true // EAGAIN too: never wait for the socket
			}
		}
	}
}

// readUntilGone reads (and drops) whatever the client sends until the
// connection fails or is closed, then reports the client gone.
func (st *responseStream) readUntilGone(conn net.Conn, left func()) {
	defer close(st.read)
	var b [1]byte
	for {
		if _, err := conn.Read(b[:]); err != nil {
			close(st.gone)
			left()
			return
		}
	}
}

type streamError string

func (e streamError) Error() string { return string(e) }

const errStreamClosed = streamError("server: the response is already complete")
