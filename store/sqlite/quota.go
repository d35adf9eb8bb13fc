package sqlite

import (
	"context"

	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// countActive counts at most $4 unexpired, non-terminal tasks of one owner.
// No index leads with the owner, so SQLite scans the tasks table and stops
// at the limit: the cost is the rows read until limit matches are found,
// the whole table for an owner under the limit. See docs/production.md.
const countActive = `SELECT count(*) FROM (SELECT 1 FROM tasks
	WHERE tenant = ? AND principal = ? AND status IN ('working', 'input_required')
	AND (expires_at IS NULL OR expires_at > ?) LIMIT ?)`

// CountActive implements task.ActiveCounter on the read-only pool: it counts
// the unexpired tasks of owner that are working or input_required, on any
// endpoint, up to limit.
func (s *Store) CountActive(ctx context.Context, owner task.Owner, limit int) (int, error) {
	if limit <= 0 || !taskdata.Countable(owner) {
		return 0, nil
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	var n int
	err := s.rs.QueryRowContext(ctx, countActive, owner.Tenant, owner.Principal, s.now().UnixMilli(), limit).Scan(&n)
	if err != nil {
		return 0, wrapErr("count active tasks", err)
	}
	return n, nil
}
