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
// Every statement that makes a change a client can observe calls
// task_event, which inserts an outbox row and sends NOTIFY on the schema's
// channel with the payload "<node> <outbox id> <task id>"; PostgreSQL
// delivers it at commit, and never for a rolled-back transaction. The
// writing Store publishes the task ID on its own broadcaster right after
// commit, so local subscribers never depend on the database round trip, and
// its listener skips the notifications that carry its own node ID.
//
// Each Store holds one dedicated connection that LISTENs on the channel and
// publishes every notification from another node on its broadcaster. When
// the connection drops, the listener reconnects with capped, jittered
// exponential backoff, LISTENs again, and only then replays the outbox rows
// after the highest ID it saw, so a hint committed during the outage
// arrives late rather than never, and may arrive twice. Outbox IDs are taken
// at insert, not at commit, so the replay starts catchUpOverlap IDs early to
// cover transactions that committed out of ID order around the outage. A
// replay is bounded (catchUpMax rows); hints beyond it, and any the overlap
// misses, are lost, which only delays subscribers: tasks/get stays the
// truth.

const (
	// notifyTimeout bounds one NOTIFY round trip of Publish.
	notifyTimeout = 2 * time.Second
	// publishQueue bounds the Publish hints waiting for NOTIFY; beyond it
	// hints to other nodes are dropped.
	publishQueue = 1024
	// notifyBatch bounds the hints sent in one NOTIFY statement.
	notifyBatch = 256
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

// publisher is the Store's task.EventPublisher: subscribers hear the
// store's local broadcaster; Publish reaches it at once and other nodes
// through NOTIFY, sent asynchronously so that Publish never waits for the
// database.
type publisher struct {
	s   *Store
	out chan string
}

func newPublisher(s *Store) *publisher {
	return &publisher{s: s, out: make(chan string, publishQueue)}
}

// Subscribe implements task.EventPublisher.
func (p *publisher) Subscribe(fn func(taskID string)) (unsubscribe func()) {
	return p.s.bc.Subscribe(fn)
}

// Publish implements task.EventPublisher. Local subscribers are called
// before it returns; other nodes get the hint when the NOTIFY queue has room
// and the database answers within a short timeout.
func (p *publisher) Publish(taskID string) {
	p.s.bc.Publish(taskID)
	select {
	case p.out <- taskID:
	default: // full: other nodes miss this hint, which only delays them
	}
}

// run sends queued hints as NOTIFYs until ctx ends.
func (p *publisher) run(ctx context.Context) {
	batch := make([]string, 0, notifyBatch)
	for {
		select {
		case <-ctx.Done():
			return
		case id := <-p.out:
			batch = append(batch[:0], id)
		}
	drain:
		for len(batch) < notifyBatch {
			select {
			case id := <-p.out:
				batch = append(batch, id)
			default:
				break drain
			}
		}
		nctx, cancel := context.WithTimeout(ctx, notifyTimeout)
		_, err := p.s.pool.Exec(nctx, `SELECT pg_notify($1, $2 || ' 0 ' || id) FROM unnest($3::text[]) AS id`,
			p.s.channel, p.s.node, batch)
		cancel()
		if err != nil && ctx.Err() == nil {
			p.s.log.Warn("postgres: task event hints not sent to other nodes", "hints", len(batch), "err", err)
		}
	}
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
	if _, err := conn.Exec(ctx, "LISTEN "+pgx.Identifier{l.s.channel}.Sanitize()); err != nil {
		conn.Close(context.Background())
		return wrapErr("listen", err)
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
		node, id, taskID, ok := parsePayload(n.Payload)
		if !ok {
			continue
		}
		l.lastID = max(l.lastID, id)
		if node != l.s.node {
			l.s.bc.Publish(taskID)
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
		n := 0
		_, err = pgx.ForEachRow(rows, []any{&id, &taskID}, func() error {
			n++
			from = id
			l.s.bc.Publish(taskID)
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

// parsePayload splits a notification payload "<node> <outbox id> <task
// id>". Payloads of other shapes are ignored.
func parsePayload(p string) (node string, id int64, taskID string, ok bool) {
	node, rest, ok1 := strings.Cut(p, " ")
	idText, taskID, ok2 := strings.Cut(rest, " ")
	if !ok1 || !ok2 || node == "" || taskID == "" {
		return "", 0, "", false
	}
	id, err := strconv.ParseInt(idText, 10, 64)
	if err != nil || id < 0 {
		return "", 0, "", false
	}
	return node, id, taskID, true
}
