package sqlite

import (
	"context"
	"fmt"
	"math"

	"github.com/taskwire/taskwire/store/internal/listcursor"
	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

var _ task.Lister = (*Store)(nil)

// sqlListTasks reads one page of a listing: the unexpired tasks of one
// endpoint and tenant ($1, $2; unexpired at $3) after the position
// ($4 created_at, $5 id) in listing order, at most $6 rows. tasks_list
// (endpoint, tenant, created_at, id), walked backwards from the position,
// yields them in order without a sort, and never visits another endpoint's
// or tenant's rows; the caller's own expired rows are read and skipped
// (DeleteExpired removes them).
const sqlListTasks = `SELECT ` + taskColumns + ` FROM tasks INDEXED BY tasks_list
	WHERE endpoint = ? AND tenant = ? AND (expires_at IS NULL OR expires_at > ?) AND (created_at, id) < (?, ?)
	ORDER BY created_at DESC, id DESC LIMIT ?`

// sqlCursorKey reads the key of the list cursors' MAC (migration 004).
const sqlCursorKey = `SELECT value FROM secrets WHERE name = 'list_cursor'`

// loadCursors reads the database's cursor key: every process on the file
// accepts the cursors of the others.
func (s *Store) loadCursors(ctx context.Context) error {
	var key []byte
	if err := s.w.QueryRowContext(ctx, sqlCursorKey).Scan(&key); err != nil {
		return wrapErr("read list cursor key", err)
	}
	c, err := listcursor.New(key)
	if err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	s.cursors = c
	return nil
}

// ListTasks implements task.Lister on the read-only pool. It lists the
// unexpired tasks FindTask would return for q.Request (same endpoint and
// tenant), newest first and, among tasks created in the same millisecond,
// by descending ID; a page holds at most q.Limit tasks, clamped to
// [1, 100]. Cursors are keyset positions authenticated (HMAC-SHA-256, key
// in the database) together with the caller's endpoint, tenant and
// principal: another caller's, an altered or a made-up cursor gets
// task.ErrBadCursor. Tasks created after a listing began never appear in
// its later pages.
func (s *Store) ListTasks(ctx context.Context, q task.ListQuery) (task.ListPage, error) {
	after := listcursor.Position{At: math.MaxInt64}
	if q.Cursor != "" {
		p, err := s.cursors.Decode(q.Request, q.Cursor)
		if err != nil {
			return task.ListPage{}, err
		}
		after = p
	}
	if !taskdata.Listable(q.Request) {
		return task.ListPage{}, nil // no stored task has this binding
	}
	limit := listcursor.Limit(q.Limit)
	ctx, cancel := s.bound(ctx)
	defer cancel()
	rows, err := s.rs.QueryContext(ctx, sqlListTasks, q.Request.Endpoint, q.Request.Tenant, s.now().UnixMilli(),
		after.At, after.ID, limit+1)
	if err != nil {
		return task.ListPage{}, wrapErr("list tasks", err)
	}
	defer rows.Close()
	var page task.ListPage
	var last *taskRow
	for rows.Next() {
		r, err := scanTask(rows)
		if err != nil {
			return task.ListPage{}, wrapErr("list tasks", err)
		}
		if len(page.Tasks) == limit {
			cur, err := s.cursors.Encode(q.Request, listcursor.Position{At: last.CreatedAt.UnixMilli(), ID: last.ID})
			if err != nil {
				return task.ListPage{}, fmt.Errorf("sqlite: %w", err)
			}
			page.NextCursor = cur
			break
		}
		t, err := r.snapshot()
		if err != nil {
			return task.ListPage{}, err
		}
		page.Tasks, last = append(page.Tasks, t), r
	}
	if err := rows.Err(); err != nil {
		return task.ListPage{}, wrapErr("list tasks", err)
	}
	return page, nil
}
