package sqlite

import (
	"context"
	"fmt"
	"time"
)

// Events across processes.
//
// Every change a client can observe inserts an outbox row, naming the Store
// that wrote it, in its transaction; after commit the Store publishes the
// task ID on its broadcaster. Other processes using the same file (an
// API-only "taskwire serve --workers 0" beside a "taskwire worker") learn of
// those changes by reading the outbox: each Store polls it every
// Options.EventPoll for rows after the last one it has seen and publishes
// the task IDs of rows other Stores wrote. SQLite commits one writer at a
// time, so row IDs grow in commit order and no row is skipped. A process
// that only writes pays one indexed range read per poll.

// DefaultEventPoll is the default Options.EventPoll.
const DefaultEventPoll = 250 * time.Millisecond

// eventPollBatch bounds the rows one poll reads; a poll that reads a full
// batch polls again at once.
const eventPollBatch = 1000

// outboxPoller publishes the changes other processes commit.
type outboxPoller struct {
	s      *Store
	lastID int64 // highest outbox ID seen
}

// newOutboxPoller starts after the newest row: history is not replayed.
func (s *Store) newOutboxPoller(ctx context.Context) (*outboxPoller, error) {
	p := &outboxPoller{s: s}
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM outbox`).Scan(&p.lastID); err != nil {
		return nil, fmt.Errorf("sqlite: outbox: %w", err)
	}
	return p, nil
}

// run polls until ctx ends.
func (p *outboxPoller) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for ctx.Err() == nil {
			n, err := p.poll(ctx)
			if err != nil {
				if ctx.Err() == nil {
					p.s.log.Warn("sqlite: reading the outbox for other processes' changes failed", "err", err)
				}
				break
			}
			if n < eventPollBatch {
				break
			}
		}
	}
}

// poll publishes the task IDs of rows other Stores wrote after lastID, at
// most eventPollBatch IDs on, and returns how far it got. Rows up to the
// newest ID it read first have all committed (one writer at a time), so
// the range it reads is complete; its own rows are skipped by the query.
func (p *outboxPoller) poll(ctx context.Context) (int, error) {
	ctx, cancel := p.s.bound(ctx)
	defer cancel()
	var newest int64
	if err := p.s.r.QueryRowContext(ctx, `SELECT coalesce(max(id), 0) FROM outbox`).Scan(&newest); err != nil {
		return 0, err
	}
	upTo := min(newest, p.lastID+eventPollBatch)
	if upTo <= p.lastID {
		return 0, nil
	}
	rows, err := p.s.r.QueryContext(ctx, `SELECT task_id FROM outbox WHERE id > ? AND id <= ? AND writer <> ?
		ORDER BY id`, p.lastID, upTo, p.s.writer)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var taskID string
		if err := rows.Scan(&taskID); err != nil {
			return 0, err
		}
		ids = append(ids, taskID)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	n := int(upTo - p.lastID)
	p.lastID = upTo
	for _, id := range ids {
		p.s.pub.Publish(id)
	}
	return n, nil
}

// outbox records an observable change of a task in tx, naming the writer.
func outbox(ctx context.Context, tx *wtx, taskID string, nowMs int64) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO outbox (task_id, created_at, writer) VALUES (?, ?, ?)`,
		taskID, nowMs, tx.writer)
	if err != nil {
		return fmt.Errorf("sqlite: outbox: %w", err)
	}
	return nil
}
