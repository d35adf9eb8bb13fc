package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/backend"
)

// Answer forwarding.
//
// In a fleet, a 2025-era client's answer to a server-to-client request
// (elicitation/create, sampling/createMessage, roots/list) may be POSTed to
// another node than the one whose handler waits for it. The server names
// the holding node in the request's ID and hands the answer to
// AnswerRelay.Forward, which sends it to that node through PostgreSQL:
//
//   - An answer that fits a notification (at most inlineMax bytes, and text
//     the database's encoding carries unchanged) is the payload of a NOTIFY
//     on the channel Schema+"_answers": "i <node> <response>".
//   - A larger one (up to MaxAnswerSize) is inserted into the answers table
//     and the NOTIFY, sent by the same statement and so delivered only after
//     the row commits, carries its key: "r <node> <id>". The receiving node
//     deletes the row as it reads it, so a row is delivered at most once.
//     Rows nobody reads (the node is gone) are deleted after the relay's
//     TTL by later large Forwards, and are never delivered once expired.
//
// Every node's store LISTENs on the answers channel on the connection it
// already holds for task events, so forwarding costs no connection, and
// reconnects with that listener. The listener only parses a notification
// and appends it to the bounded queue of the receiver registered for its
// node (dropping it, with a warning, when the queue is full), so a slow
// receiver never holds the LISTEN connection; a goroutine per non-empty
// queue reads rows and calls the receiver's function. An inline answer
// sent while the target's listener is reconnecting is lost (the client's
// request then times out on the holding node, as if the answer never
// came); after reconnecting, each receiver reads the rows addressed to its
// node, so a large one is delivered late rather than never.
//
// Node IDs are chosen by the server: 1 to MaxNodeIDLen bytes of visible
// ASCII. Response bodies are never logged.

const (
	// MaxAnswerSize bounds one forwarded response.
	MaxAnswerSize = 1 << 20
	// MaxNodeIDLen bounds a node ID.
	MaxNodeIDLen = 64
	// DefaultAnswerQueue is the default bound of each receiver's queue.
	DefaultAnswerQueue = 64
	// DefaultAnswerTTL is the default lifetime of an answer stored as a
	// row.
	DefaultAnswerTTL = 2 * time.Minute

	// answersSuffix names the answers channel after the schema; no
	// longer than channelSuffix, so it fits the identifier limit too.
	answersSuffix = "_answers"
	// inlineMax bounds a notification payload sent inline; PostgreSQL's
	// limit is 8000 bytes.
	inlineMax = maxPayload
	// maxAnswerQueue bounds AnswerRelayOptions.QueueSize.
	maxAnswerQueue = 1 << 16
	// sweepBatch bounds the expired rows one large Forward deletes.
	sweepBatch = 100
	// catchUpAnswers bounds the rows one receiver reads after a
	// reconnection.
	catchUpAnswers = 1000
)

// answersSuffix must not be longer than channelSuffix (a negative array
// length does not compile).
var _ [len(channelSuffix) - len(answersSuffix)]struct{}

// Errors of the answer relay.
var (
	// ErrBadNodeID: a node ID is empty, longer than MaxNodeIDLen, or
	// holds bytes other than visible ASCII.
	ErrBadNodeID = errors.New("postgres: node ID must be 1 to 64 bytes of visible ASCII")
	// ErrAnswerTooLarge: a response is larger than MaxAnswerSize.
	ErrAnswerTooLarge = errors.New("postgres: forwarded response larger than 1 MiB")
	// ErrNodeReceiving: Receive was called again for a node whose
	// previous registration was not stopped.
	ErrNodeReceiving = errors.New("postgres: node already has a receiver on this relay")
	// ErrRelayExists: the store already has an AnswerRelay.
	ErrRelayExists = errors.New("postgres: the store already has an answer relay")
)

// AnswerRelayOptions configure NewAnswerRelay. Zero values mean the
// defaults.
type AnswerRelayOptions struct {
	// QueueSize bounds the forwarded responses waiting for each
	// receiver's function; beyond it they are dropped with a warning.
	// A queued response holds at most 8 KB (larger ones wait in their row
	// until their turn), so a queue holds at most QueueSize × 8 KB.
	// Default DefaultAnswerQueue; at most 65,536.
	QueueSize int
	// TTL is how long a response stored as a row waits for its node;
	// older rows are never delivered and are deleted. Default
	// DefaultAnswerTTL; whole milliseconds.
	TTL time.Duration
	// Logger receives warnings (drops, failed reads); never response
	// bodies. Default: the store's logger.
	Logger *slog.Logger
}

// AnswerRelay forwards clients' responses to server-to-client requests
// between the nodes of a fleet sharing one PostgreSQL schema. It
// implements the server's AnswerRelay interface and is safe for concurrent
// use. It lives as long as its store; Close detaches it.
type AnswerRelay struct {
	s       *Store
	log     *slog.Logger
	queue   int
	ttlMS   int64
	utf8    bool // the database encoding is UTF8: valid UTF-8 goes inline
	forward string
	take    string
	pending string

	mu        sync.Mutex
	receivers map[string]*receiver
	closed    bool
}

// NewAnswerRelay returns the answer relay of s, which delivers the
// responses forwarded to nodes registered with Receive on this relay. A
// store has at most one relay (ErrRelayExists otherwise, until Close). It
// reads the database's encoding once, under the store's timeout, and fails
// on invalid options or when the database does not answer.
func NewAnswerRelay(ctx context.Context, s *Store, opts AnswerRelayOptions) (*AnswerRelay, error) {
	if opts.QueueSize == 0 {
		opts.QueueSize = DefaultAnswerQueue
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultAnswerTTL
	}
	if opts.Logger == nil {
		opts.Logger = s.log
	}
	switch {
	case opts.QueueSize < 0 || opts.QueueSize > maxAnswerQueue:
		return nil, fmt.Errorf("postgres: AnswerRelayOptions.QueueSize must be 1 to %d", maxAnswerQueue)
	case opts.TTL < time.Millisecond || opts.TTL%time.Millisecond != 0:
		return nil, errors.New("postgres: AnswerRelayOptions.TTL must be positive whole milliseconds")
	}
	var enc string
	if err := s.pool.QueryRow(ctx, `SELECT current_setting('server_encoding')`).Scan(&enc); err != nil {
		return nil, wrapErr("answer relay: server encoding", err)
	}
	r := &AnswerRelay{
		s:         s,
		log:       opts.Logger,
		queue:     opts.QueueSize,
		ttlMS:     opts.TTL.Milliseconds(),
		utf8:      enc == "UTF8",
		forward:   s.q.expand(relaySQL(sqlForwardAnswer, s.answers)),
		take:      s.q.expand(sqlTakeAnswer),
		pending:   s.q.expand(sqlPendingAnswers),
		receivers: map[string]*receiver{},
	}
	if !s.relay.CompareAndSwap(nil, r) {
		return nil, ErrRelayExists
	}
	return r, nil
}

// Forward delivers one encoded JSON-RPC response (at most MaxAnswerSize
// bytes) to the node's receiver, on whichever node of the fleet it is
// registered. It returns nil once PostgreSQL has committed the hand-over
// (a notification, or a row and its notification), before the receiver
// runs; a node that is gone, or not receiving, silently drops it. It fails
// with ErrBadNodeID, ErrAnswerTooLarge, or the database's error when it
// does not commit within the store's timeout or before ctx ends. response
// is not retained.
func (r *AnswerRelay) Forward(ctx context.Context, node string, response []byte) error {
	if !validNode(node) {
		return ErrBadNodeID
	}
	if len(response) > MaxAnswerSize {
		return ErrAnswerTooLarge
	}
	if payload, ok := r.inline(node, response); ok {
		_, err := r.s.pool.Exec(ctx, `SELECT pg_notify($1, $2)`, r.s.answers, payload)
		return wrapErr("forward answer", err)
	}
	_, err := r.s.pool.Exec(ctx, r.forward, r.s.now(), node, response, r.ttlMS, sweepBatch)
	return wrapErr("forward answer", err)
}

// inline returns the notification payload carrying response, when it fits
// one and the database passes its text through unchanged: ASCII without
// NUL, or any valid UTF-8 without NUL when the database's encoding is
// UTF8.
func (r *AnswerRelay) inline(node string, response []byte) (string, bool) {
	if 2+len(node)+1+len(response) > inlineMax {
		return "", false
	}
	ascii := true
	for _, b := range response {
		if b == 0 {
			return "", false
		}
		if b >= utf8.RuneSelf {
			ascii = false
		}
	}
	if !ascii && (!r.utf8 || !utf8.Valid(response)) {
		return "", false
	}
	return "i " + node + " " + string(response), true
}

// Receive registers fn for the responses forwarded to node and returns
// stop, which unregisters it and waits until fn is no longer running.
// Responses are delivered in the order their forwards committed, each at
// most once, on a goroutine of the relay; fn must not block (a queue of
// AnswerRelayOptions.QueueSize responses waits for it, and further ones
// are dropped with a warning). fn owns the slice it gets; stop must not be
// called from fn, since it waits for fn to return. Receive fails
// with ErrBadNodeID, with ErrNodeReceiving when node already has a
// receiver on this relay, and after Close.
func (r *AnswerRelay) Receive(node string, fn func(response []byte)) (stop func(), err error) {
	if !validNode(node) {
		return nil, ErrBadNodeID
	}
	if fn == nil {
		return nil, errors.New("postgres: Receive needs a function")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, errors.New("postgres: answer relay closed")
	}
	if r.receivers[node] != nil {
		return nil, ErrNodeReceiving
	}
	rc := &receiver{r: r, node: node, fn: fn, idle: make(chan struct{})}
	rc.ctx, rc.cancel = context.WithCancel(context.Background())
	close(rc.idle)
	r.receivers[node] = rc
	return sync.OnceFunc(func() {
		r.mu.Lock()
		if r.receivers[node] == rc {
			delete(r.receivers, node)
		}
		r.mu.Unlock()
		rc.stop()
	}), nil
}

// Close stops every receiver, waiting for their functions to return, and
// detaches the relay from its store, which may then get a new one. Later
// Forwards still work; Receive fails.
func (r *AnswerRelay) Close() error {
	r.mu.Lock()
	r.closed = true
	rcs := r.receivers
	r.receivers = map[string]*receiver{}
	r.mu.Unlock()
	for _, rc := range rcs {
		rc.stop()
	}
	r.s.relay.CompareAndSwap(r, nil)
	return nil
}

// notified handles one notification on the answers channel; it runs on
// the listener's goroutine and never blocks.
func (r *AnswerRelay) notified(payload string) {
	a, ok := parseAnswer(payload)
	if !ok {
		return
	}
	r.mu.Lock()
	rc := r.receivers[a.node]
	r.mu.Unlock()
	if rc != nil {
		rc.enqueue(a)
	}
}

// reconnected runs on the listener's goroutine after it LISTENs again:
// each receiver then reads the rows forwarded to it during the outage.
func (r *AnswerRelay) reconnected() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rc := range r.receivers {
		rc.enqueue(answer{node: rc.node, catchUp: true})
	}
}

// validNode reports whether node is 1 to MaxNodeIDLen bytes of visible
// ASCII (so it never contains the payload's separator).
func validNode(node string) bool {
	if node == "" || len(node) > MaxNodeIDLen {
		return false
	}
	for i := range len(node) {
		if node[i] <= ' ' || node[i] > '~' {
			return false
		}
	}
	return true
}

// answer is one parsed notification: an inline body, a row key, or (after
// a reconnection) a request to read the node's pending rows.
type answer struct {
	node    string
	body    []byte
	row     int64
	catchUp bool
}

// parseAnswer parses "i <node> <body>" or "r <node> <id>"; any other
// payload is ignored.
func parseAnswer(p string) (answer, bool) {
	if len(p) < 4 || p[1] != ' ' {
		return answer{}, false
	}
	kind, rest := p[0], p[2:]
	node, tail, ok := cutSpace(rest)
	if !ok || !validNode(node) {
		return answer{}, false
	}
	switch kind {
	case 'i':
		return answer{node: node, body: []byte(tail)}, true
	case 'r':
		id, err := strconv.ParseInt(tail, 10, 64)
		if err != nil || id <= 0 {
			return answer{}, false
		}
		return answer{node: node, row: id}, true
	}
	return answer{}, false
}

// cutSpace splits s at its first space.
func cutSpace(s string) (before, after string, ok bool) {
	for i := range len(s) {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

// NewAnswerRelay returns the store's answer relay with the default
// options (the package's NewAnswerRelay), for a program that holds the
// store as a backend.Store: it implements backend.AnswerRelayer.
func (s *Store) NewAnswerRelay(ctx context.Context) (backend.AnswerRelay, error) {
	return NewAnswerRelay(ctx, s, AnswerRelayOptions{})
}

var _ backend.AnswerRelayer = (*Store)(nil)
