package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/store/internal/listcursor"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

var _ task.Lister = (*Store)(nil)

// listStart is the position before every task: later than any creation
// time a store writes.
var listStart = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// loadCursors reads the schema's cursor key (migration 005): every node
// accepts the cursors of the others.
func (s *Store) loadCursors(ctx context.Context) error {
	var key []byte
	if err := s.pool.QueryRow(ctx, s.q.cursorKey).Scan(&key); err != nil {
		return wrapErr("read list cursor key", err)
	}
	c, err := listcursor.New(key)
	if err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	s.cursors = c
	return nil
}

// ListTasks implements task.Lister. It lists the unexpired tasks FindTask
// would return for q.Request (same endpoint and tenant), newest first and,
// among tasks created in the same millisecond, by descending ID; a page
// holds at most q.Limit tasks, clamped to [1, 100], read in one statement
// along tasks_list. Cursors are keyset positions authenticated
// (HMAC-SHA-256, key in the schema, shared by every node) together with the
// caller's endpoint, tenant and principal: another caller's, an altered or
// a made-up cursor gets task.ErrBadCursor. Tasks created after a listing
// began never appear in its later pages.
func (s *Store) ListTasks(ctx context.Context, q task.ListQuery) (task.ListPage, error) {
	at, id := listStart, ""
	if q.Cursor != "" {
		p, err := s.cursors.Decode(q.Request, q.Cursor)
		if err != nil {
			return task.ListPage{}, err
		}
		at, id = time.UnixMicro(p.At).UTC(), p.ID
	}
	if !taskdata.Listable(q.Request) {
		return task.ListPage{}, nil // no stored task has this binding
	}
	limit := listcursor.Limit(q.Limit)
	rows, err := s.pool.Query(ctx, s.q.listTasks, s.now(), q.Request.Endpoint, q.Request.Tenant, at, id, limit+1)
	if err != nil {
		return task.ListPage{}, wrapErr("list tasks", err)
	}
	defer rows.Close()
	var page task.ListPage
	var last *taskRow
	for rows.Next() {
		var r taskRow
		if err := rows.Scan(r.fields()...); err != nil {
			return task.ListPage{}, wrapErr("list tasks", err)
		}
		if len(page.Tasks) == limit {
			cur, err := s.cursors.Encode(q.Request, listcursor.Position{At: last.CreatedAt.UnixMicro(), ID: last.ID})
			if err != nil {
				return task.ListPage{}, fmt.Errorf("postgres: %w", err)
			}
			page.NextCursor = cur
			break
		}
		t, err := r.snapshot()
		if err != nil {
			return task.ListPage{}, err
		}
		page.Tasks, last = append(page.Tasks, t), &r
	}
	if err := rows.Err(); err != nil {
		return task.ListPage{}, wrapErr("list tasks", err)
	}
	return page, nil
}
