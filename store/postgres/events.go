package postgres

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// Event delivery.
//
// Every statement that makes a change a client can observe inserts an
// outbox row per changed task, in the same transaction, and returns the
// rows. After commit the writing Store publishes the task IDs on its own
// broadcaster, so local subscribers never depend on a database round trip,
// and queues them for its publisher, which sends them to the other nodes as
// NOTIFYs on the schema's channel, many hints per payload: "<node> <outbox
// id> <task id> <outbox id> <task id> ...", at most maxPayload bytes (task
// IDs never contain spaces: the store makes them). Notifying after commit
// instead of in the writing transaction matters: PostgreSQL serialises the
// commits of
// notifying transactions on one lock, held across the WAL flush, so a
// NOTIFY in every write would cap writes at one commit per flush. A hint
// lost in between (the process dies, or the queue is full) only delays
// other nodes' subscribers: tasks/get reads the tables.
//
// Each Store holds one dedicated connection that LISTENs on the channel and
// publishes every notification from another node on its broadcaster (its
// own carry its node ID and are skipped). When the connection drops, the
// listener reconnects with capped, jittered exponential backoff, LISTENs
// again, and only then replays the outbox rows after the highest ID it saw,
// so a hint committed during the outage arrives late rather than never, and
// may arrive twice. Outbox IDs are taken at insert, not at commit, so the
// replay starts catchUpOverlap IDs early to cover transactions that
// committed out of ID order around the outage. A replay is bounded
// (catchUpMax rows); hints beyond it, and any the overlap misses, are lost,
// which only delays subscribers.

const (
	// notifyTimeout bounds one NOTIFY round trip of Publish.
	notifyTimeout = 2 * time.Second
	// publishQueue bounds the hints waiting for NOTIFY; beyond it hints
	// to other nodes are dropped.
	publishQueue = 4096
	// notifyBatch bounds the hints sent in one transaction.
	notifyBatch = 1024
	// maxPayload bounds one notification's payload; PostgreSQL's limit is
	// 8000 bytes.
	maxPayload = 7900
	// maxHintID bounds the task IDs sent to other nodes; longer ones (and
	// IDs with spaces, which no store creates) reach local subscribers only.
	maxHintID = 200
	// catchUpBatch and catchUpMax bound the outbox rows replayed after a
	// reconnection; catchUpOverlap re-reads that many IDs before the last
	// one seen, for transactions that committed out of ID order.
	catchUpBatch   = 500
	catchUpMax     = 10_000
	catchUpOverlap = 100
	// connectTimeout bounds one connection attempt of the listener.
	connectTimeout = 10 * time.Second
	// Reconnection backoff: from backoffMin, doubling, up to backoffMax.
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

// event is one committed change: its outbox row and its task.
type event struct {
	id     int64 // outbox row; 0 for a hint published by a caller
	taskID string
}

// emit publishes committed changes: to this store's subscribers before it
// returns, and to other nodes through the publisher's queue.
func (s *Store) emit(evs ...event) {
	for _, ev := range evs {
		s.bc.Publish(ev.taskID)
		s.pub.send(ev)
	}
}

// publisher is the Store's task.EventPublisher: subscribers hear the
// store's local broadcaster; Publish reaches it at once and other nodes
// through NOTIFY, sent asynchronously so that Publish never waits for the
// database.
type publisher struct {
	s   *Store
	out chan event
}

func newPublisher(s *Store) *publisher {
	return &publisher{s: s, out: make(chan event, publishQueue)}
}

// Subscribe implements task.EventPublisher.
func (p *publisher) Subscribe(fn func(taskID string)) (unsubscribe func()) {
	return p.s.bc.Subscribe(fn)
}

// Publish implements task.EventPublisher. Local subscribers are called
// before it returns; other nodes get the hint when the NOTIFY queue has room
// and the database answers within a short timeout.
func (p *publisher) Publish(taskID string) {
	p.s.emit(event{taskID: taskID})
}

// send queues a hint for other nodes without blocking.
func (p *publisher) send(ev event) {
	if len(ev.taskID) > maxHintID || strings.Contains(ev.taskID, " ") {
		return
	}
	select {
	case p.out <- ev:
	default: // full: other nodes miss this hint, which only delays them
	}
}

// run sends queued hints as NOTIFYs until ctx ends, up to notifyBatch in
// one transaction. The transaction commits without waiting for the WAL
// flush: a hint lost in a crash only delays subscribers, and the
// notification lock is then held for microseconds rather than a flush.
func (p *publisher) run(ctx context.Context) {
	batch := make([]event, 0, notifyBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-p.out:
			batch = append(batch[:0], ev)
		}
	drain:
		for len(batch) < notifyBatch {
			select {
			case ev := <-p.out:
				batch = append(batch, ev)
			default:
				break drain
			}
		}
		payloads := packPayloads(p.s.node, batch)
		nctx, cancel := context.WithTimeout(ctx, notifyTimeout)
		// One statement, one implicit transaction; set_config is local
		// to it and still in force at its commit.
		_, err := p.s.pool.Exec(nctx, `SELECT set_config('synchronous_commit', 'off', true),
			pg_notify($1, p) FROM unnest($2::text[]) AS p`, p.s.channel, payloads)
		cancel()
		if err != nil && ctx.Err() == nil {
			p.s.log.Warn("postgres: task event hints not sent to other nodes", "hints", len(batch), "err", err)
		}
	}
}

// packPayloads packs events into as few payloads of at most maxPayload
// bytes as it can, each "<node>( <outbox id> <task id>)+".
func packPayloads(node string, evs []event) []string {
	var out []string
	var b []byte
	for _, ev := range evs {
		if len(b) > 0 && len(b)+22+len(ev.taskID) > maxPayload {
			out = append(out, string(b))
			b = b[:0]
		}
		if len(b) == 0 {
			b = append(b, node...)
		}
		b = append(b, ' ')
		b = strconv.AppendInt(b, ev.id, 10)
		b = append(b, ' ')
		b = append(b, ev.taskID...)
	}
	if len(b) > 0 {
		out = append(out, string(b))
	}
	return out
}

// listener owns the LISTEN connection.
type listener struct {
	s      *Store
	conn   *pgx.Conn
	lastID int64 // highest outbox ID seen
}

// newListener connects and LISTENs, so that every change committed after
// Open returns reaches the store's subscribers.
func (s *Store) newListener(ctx context.Context) (*listener, error) {
	l := &listener{s: s}
	if err := l.connect(ctx); err != nil {
		return nil, err
	}
	if err := l.conn.QueryRow(ctx, s.q.outboxLast).Scan(&l.lastID); err != nil {
		l.close()
		return nil, wrapErr("listen", err)
	}
	return l, nil
}

// connect opens the connection and LISTENs on the channel.
func (l *listener) connect(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, l.s.listenCfg)
	if err != nil {
		return wrapErr("listen: connect", err)
	}
	for _, ch := range []string{l.s.channel, l.s.answers} {
		if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{ch}.Sanitize()); err != nil {
			conn.Close(context.Background())
			return wrapErr("listen", err)
		}
	}
	l.conn = conn
	if h := l.s.hooks.connected; h != nil {
		h(conn.PgConn().PID())
	}
	return nil
}

func (l *listener) close() {
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		l.conn.Close(ctx)
		cancel()
		l.conn = nil
	}
}

// run delivers notifications until ctx ends, reconnecting when the
// connection fails.
func (l *listener) run(ctx context.Context) {
	defer l.close()
	for {
		err := l.receive(ctx)
		l.close()
		if ctx.Err() != nil {
			return
		}
		l.s.log.Warn("postgres: task event listener disconnected; reconnecting", "err", err)
		if !l.reconnect(ctx) {
			return
		}
	}
}

// receive publishes notifications until the connection fails.
func (l *listener) receive(ctx context.Context) error {
	for {
		n, err := l.conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if n.Channel == l.s.answers {
			if r := l.s.relay.Load(); r != nil {
				r.notified(n.Payload)
			}
			continue
		}
		node, evs, ok := parsePayload(n.Payload)
		if !ok {
			continue
		}
		for _, ev := range evs {
			l.lastID = max(l.lastID, ev.id)
			if node != l.s.node {
				l.s.bc.Publish(ev.taskID)
			}
		}
	}
}

// reconnect retries with backoff until it is listening again and has
// replayed the outbox, or ctx ends (then it returns false).
func (l *listener) reconnect(ctx context.Context) bool {
	delay := backoffMin
	for {
		// Full jitter around the delay keeps a fleet from reconnecting
		// in step after a database restart.
		wait := delay/2 + rand.N(delay/2+1)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		delay = min(2*delay, backoffMax)
		if h := l.s.hooks.beforeReconnect; h != nil {
			h()
		}
		if err := l.connect(ctx); err != nil {
			if ctx.Err() != nil {
				return false
			}
			l.s.log.Warn("postgres: task event listener reconnection failed", "err", err)
			continue
		}
		if err := l.catchUp(ctx); err != nil {
			l.close()
			if ctx.Err() != nil {
				return false
			}
			l.s.log.Warn("postgres: task event catch-up failed", "err", err)
			continue
		}
		l.s.log.Info("postgres: task event listener reconnected")
		if r := l.s.relay.Load(); r != nil {
			r.reconnected()
		}
		return true
	}
}

// catchUp publishes the outbox rows after the last ID seen (less the
// overlap), at most catchUpMax of them; beyond that it skips to the newest
// row.
func (l *listener) catchUp(ctx context.Context) error {
	from := max(l.lastID-catchUpOverlap, 0)
	for replayed := 0; ; {
		rows, err := l.conn.Query(ctx, l.s.q.outboxAfter, from, catchUpBatch)
		if err != nil {
			return err
		}
		var id int64
		var taskID string
		var batch []string
		n := 0
		_, err = pgx.ForEachRow(rows, []any{&id, &taskID, &batch}, func() error {
			n++
			from = id
			if taskID != "" {
				l.s.bc.Publish(taskID)
			}
			for _, t := range batch {
				l.s.bc.Publish(t)
			}
			return nil
		})
		if err != nil {
			return err
		}
		l.lastID = max(l.lastID, from)
		replayed += n
		if n < catchUpBatch {
			return nil
		}
		if replayed >= catchUpMax {
			var last int64
			if err := l.conn.QueryRow(ctx, l.s.q.outboxLast).Scan(&last); err != nil {
				return err
			}
			l.s.log.Warn("postgres: task event catch-up bounded; later hints of the outage are dropped",
				"replayed", replayed, "skipped", last-l.lastID)
			l.lastID = max(l.lastID, last)
			return nil
		}
	}
}

// parsePayload splits a notification payload "<node>( <outbox id> <task
// id>)+". Payloads of other shapes are ignored.
func parsePayload(p string) (node string, evs []event, ok bool) {
	fields := strings.Split(p, " ")
	if len(fields) < 3 || len(fields)%2 == 0 || fields[0] == "" {
		return "", nil, false
	}
	evs = make([]event, 0, len(fields)/2)
	for i := 1; i < len(fields); i += 2 {
		id, err := strconv.ParseInt(fields[i], 10, 64)
		if err != nil || id < 0 || fields[i+1] == "" {
			return "", nil, false
		}
		evs = append(evs, event{id: id, taskID: fields[i+1]})
	}
	return fields[0], evs, true
}
