package postgres

import (
	"context"

	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// sqlCountActive counts at most $4 unexpired, non-terminal tasks of one
// owner ($2 tenant, $3 principal). No index leads with the owner, so the
// planner scans the tasks table and stops at the limit: the cost is the
// rows read until limit matches are found, the whole table for an owner
// under the limit. See docs/production.md.
const sqlCountActive = `SELECT count(*) FROM (SELECT 1 FROM {{schema}}.tasks
	WHERE tenant = $2 AND principal = $3 AND status IN ('working', 'input_required') AND ` + live + `
	LIMIT $4) a`

// CountActive implements task.ActiveCounter: it counts the unexpired tasks
// of owner that are working or input_required, on any endpoint, up to
// limit.
func (s *Store) CountActive(ctx context.Context, owner task.Owner, limit int) (int, error) {
	if limit <= 0 || !taskdata.Countable(owner) {
		return 0, nil
	}
	var n int
	err := s.pool.QueryRow(ctx, s.q.expand(sqlCountActive), s.now(), owner.Tenant, owner.Principal, limit).Scan(&n)
	if err != nil {
		return 0, wrapErr("count active tasks", err)
	}
	return n, nil
}
