package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Resumable POST streams of 2025-11-25 sessions (SEP-1699, "Resumability
// and Redelivery" and polling in the 2025-11-25 Streamable HTTP
// transport).
//
// When the response to a request of a 2025-11-25 session becomes an SSE
// stream, the stream opens with a priming event (an event ID, a retry
// field and empty data) and every later event carries an ID
// "<stream token>.<position>": the token is 128 random bits minted for
// the stream, the position counts the stream's events from 0 (the
// priming event). The events are kept, bounded, in the session's replay
// buffer on the node that runs the call. The server may close the stream
// before the response (Request.CloseSSEStream, or the inline-wait polling
// interval): it sends a retry field and ends the HTTP response while the
// call goes on. A GET carrying the session's Mcp-Session-Id and a
// Last-Event-ID of that stream replays the events after it and then
// carries the rest of the call, final response included, and ends.
//
// Streams are looked up by session and token: an ID presented in another
// session, an unknown or malformed one, one whose events were evicted or
// expired, and one held by another node all get the same HTTP 400, and
// nothing is replayed. 2025-06-18 sessions (whose transport says the
// server should not close a stream before the response) keep plain SSE
// streams without IDs.

// ResumeOptions configure the resumable POST streams of 2025-11-25
// sessions (SessionOptions.Resume).
type ResumeOptions struct {
	// Disabled turns resumability off: 2025-11-25 streams then have no
	// event IDs, Request.CloseSSEStream fails, and a GET with
	// Last-Event-ID is refused.
	Disabled bool
	// Retry is the reconnection delay sent in the retry field of each
	// priming event. Zero means 1 s.
	Retry time.Duration
	// MaxEvents bounds the events one session's replay buffer keeps,
	// across its streams. Zero means 512. When a new event would exceed
	// it (or MaxBytes), the session's oldest events are evicted, those of
	// ended streams first; a resumption that would need an evicted event
	// is refused.
	MaxEvents int
	// MaxBytes bounds the bytes of one session's replay buffer. Zero
	// means 1 MiB.
	MaxBytes int
	// MaxNodeBytes bounds the bytes of every replay buffer of this node
	// together. Zero means 64 MiB. An event beyond it is still sent on an
	// open connection but not kept: its stream can no longer be resumed
	// from before it.
	MaxNodeBytes int64
	// Retention is how long a stream's events are kept after its call
	// ended (its final response was written, or the call was canceled),
	// for a client to fetch what it missed. Zero means 2 min. While the
	// call runs its events are kept (within the bounds above).
	Retention time.Duration
	// InlinePollInterval, when positive, makes a tool call that waits
	// inline for a task (WithWaitInline) in a 2025-11-25 session close
	// each connection of its stream that long after it was opened (the
	// POST, then each GET that resumes it), with a retry field, so that
	// proxies that cut long responses do not cut the wait: the client
	// resumes with GET and Last-Event-ID and the wait goes on. Zero (the
	// default) keeps the POST open for the whole wait, because a client
	// that does not resume would then lose the result.
	InlinePollInterval time.Duration
}

func (o *ResumeOptions) validate(c *optionChecker) {
	c.counts("ResumeOptions",
		named{"MaxEvents", int64(o.MaxEvents)},
		named{"MaxBytes", int64(o.MaxBytes)},
		named{"MaxNodeBytes", o.MaxNodeBytes})
	c.durations("ResumeOptions",
		named{"Retry", int64(o.Retry)},
		named{"Retention", int64(o.Retention)},
		named{"InlinePollInterval", int64(o.InlinePollInterval)})
	if o.Retry > maxRetry {
		c.bad("ResumeOptions.Retry (%v) exceeds %v", o.Retry, maxRetry)
	}
}

const maxRetry = time.Hour

func (o *ResumeOptions) withDefaults() ResumeOptions {
	c := ResumeOptions{}
	if o != nil {
		c = *o
	}
	if c.Retry == 0 {
		c.Retry = time.Second
	}
	if c.MaxEvents == 0 {
		c.MaxEvents = 512
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = 1 << 20
	}
	if c.MaxNodeBytes == 0 {
		c.MaxNodeBytes = 64 << 20
	}
	if c.Retention == 0 {
		c.Retention = 2 * time.Minute
	}
	return c
}

// ErrNotResumable is returned by Request.CloseSSEStream for a request
// whose stream cannot be resumed: not a request of a 2025-11-25 session
// over HTTP (2026-07-28 requests, 2025-06-18 sessions, stdio), a server
// with ResumeOptions.Disabled, or a session whose replay buffer could not
// take the stream.
var ErrNotResumable = errors.New("server: this request's response stream cannot be resumed")

// CloseSSEStream ends the HTTP response of a request of a 2025-11-25
// session before its final response, while the request goes on: the
// stream is switched to SSE if it is not yet (with its priming event), a
// retry field of retry (rounded to milliseconds; zero means
// ResumeOptions.Retry) is sent, and the connection's response ends. The
// client reconnects with GET and Last-Event-ID and receives what the
// handler sends from then on, final response included; until then it is
// kept in the session's replay buffer. A stream already closed, or whose
// final response was written, is left as it is (nil). The handler's
// context is not canceled by this close, nor by the client leaving the
// closed connection; notifications/cancelled, DELETE of the session and
// the request deadline still cancel it. It returns ErrNotResumable for
// any other request (see ErrNotResumable), and when the HTTP/1
// connection cannot be taken over from net/http (a ResponseWriter that can
// neither hijack nor unwrap), changing nothing.
func (r *Request) CloseSSEStream(retry time.Duration) error {
	if r.stream == nil {
		return ErrNotResumable
	}
	rw := r.stream.resumable()
	if rw == nil {
		return ErrNotResumable
	}
	return rw.closeStream(r.stream, retry)
}

// replayEvent is one event of a stream, framed with its ID.
type replayEvent struct {
	seq   uint64
	frame []byte
}

// sessionReplay is the replay buffer of one session on this node: its
// resumable streams and their events, within the session and node
// bounds. mu guards every stream's event state (replayStream's fields
// marked so); a stream's own mu, taken before this one, orders its
// connection I/O.
type sessionReplay struct {
	l *resumeState

	mu      sync.Mutex
	streams []*replayStream // in creation order
	events  int
	bytes   int
	closed  bool
}

// resumeState is the node's resumability state: the options and the
// bytes every session's replay buffer holds.
type resumeState struct {
	opts  ResumeOptions
	now   func() time.Time
	bytes atomic.Int64
}

func newResumeState(o *ResumeOptions, now func() time.Time) *resumeState {
	return &resumeState{opts: o.withDefaults(), now: now}
}

// streamTokenBytes are the random bytes of a stream token.
const streamTokenBytes = 16

// maxEventIDLen bounds a Last-Event-ID that is read at all.
const maxEventIDLen = 2*streamTokenBytes + 1 + 20

// parseEventID splits an event ID into its stream token and position.
func parseEventID(id string) (token string, seq uint64, ok bool) {
	if len(id) > maxEventIDLen {
		return "", 0, false
	}
	token, n, ok := strings.Cut(id, ".")
	if !ok || len(token) != 2*streamTokenBytes || len(n) == 0 || len(n) > 20 {
		return "", 0, false
	}
	if _, err := hex.DecodeString(token); err != nil || token != strings.ToLower(token) {
		return "", 0, false
	}
	seq, err := strconv.ParseUint(n, 10, 64)
	if err != nil || strconv.FormatUint(seq, 10) != n {
		return "", 0, false
	}
	return token, seq, true
}

func newStreamToken() string {
	b := make([]byte, streamTokenBytes)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// open registers a new stream, evicting ended streams past their
// retention first. It returns nil when the buffer is closed (the session
// ended).
func (sr *sessionReplay) open(retry time.Duration) *replayStream {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if sr.closed {
		return nil
	}
	sr.expireLocked(sr.l.now())
	rs := &replayStream{sess: sr, token: newStreamToken(), retry: retry}
	sr.streams = append(sr.streams, rs)
	return rs
}

// find returns the stream token names, if this buffer holds it.
func (sr *sessionReplay) find(token string) *replayStream {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.expireLocked(sr.l.now())
	for _, rs := range sr.streams {
		if rs.token == token {
			return rs
		}
	}
	return nil
}

// empty reports whether the buffer holds no stream, dropping the expired
// ones first.
func (sr *sessionReplay) empty(now time.Time) bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	sr.expireLocked(now)
	return len(sr.streams) == 0
}

// expireLocked drops the streams that ended more than Retention ago, and
// ended streams with no event left (nothing to replay: a resumption of
// one is refused, as after its events were evicted). Running streams are
// bounded by the session's requests in flight, ended ones by MaxEvents.
func (sr *sessionReplay) expireLocked(now time.Time) {
	keep := sr.streams[:0]
	for _, rs := range sr.streams {
		if rs.ended && (len(rs.events) == 0 || now.Sub(rs.endedAt) >= sr.l.opts.Retention) {
			sr.dropLocked(rs, len(rs.events))
			continue
		}
		keep = append(keep, rs)
	}
	clear(sr.streams[len(keep):])
	sr.streams = keep
}

// dropLocked evicts the first n events of rs.
func (sr *sessionReplay) dropLocked(rs *replayStream, n int) {
	freed := 0
	for _, ev := range rs.events[:n] {
		freed += len(ev.frame)
	}
	if n > 0 {
		rs.first = rs.events[n-1].seq + 1
	}
	rs.events = append(rs.events[:0], rs.events[n:]...)
	sr.events -= n
	sr.bytes -= freed
	sr.l.bytes.Add(-int64(freed))
}

// retainLocked keeps ev for rs within the bounds, evicting the session's
// oldest events (those of ended streams first) as needed. An event that
// the node budget cannot take, or larger than the session budget, is not
// kept and makes rs unresumable from before it.
func (sr *sessionReplay) retainLocked(rs *replayStream, ev replayEvent) {
	o := &sr.l.opts
	size := len(ev.frame)
	if sr.closed || size > o.MaxBytes {
		rs.lostLocked(ev.seq)
		return
	}
	over := func() bool { return sr.events+1 > o.MaxEvents || sr.bytes+size > o.MaxBytes }
	for over() && sr.evictOneLocked() {
	}
	if over() {
		rs.lostLocked(ev.seq)
		return
	}
	if sr.l.bytes.Add(int64(size)) > o.MaxNodeBytes {
		sr.l.bytes.Add(-int64(size))
		rs.lostLocked(ev.seq)
		return
	}
	rs.events = append(rs.events, ev)
	sr.events++
	sr.bytes += size
}

// evictOneLocked evicts the oldest event of the oldest ended stream, else
// of the oldest stream; it reports false when there is none.
func (sr *sessionReplay) evictOneLocked() bool {
	for _, ended := range []bool{true, false} {
		for _, rs := range sr.streams {
			if rs.ended == ended && len(rs.events) > 0 {
				sr.dropLocked(rs, 1)
				return true
			}
		}
	}
	return false
}

// close drops every stream and ends their connections (the session
// ended).
func (sr *sessionReplay) close() {
	sr.mu.Lock()
	sr.closed = true
	streams := sr.streams
	sr.streams = nil
	for _, rs := range streams {
		sr.dropLocked(rs, len(rs.events))
	}
	sr.mu.Unlock()
	for _, rs := range streams {
		rs.mu.Lock()
		rs.detachLocked(true)
		rs.mu.Unlock()
	}
}
