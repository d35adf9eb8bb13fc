package taskdata

import (
	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// CountRows is what CountBy reads: the rows of a "SELECT key, count(*) ...
// GROUP BY key" query, as database/sql and pgx both return them.
type CountRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// CountBy adds the (key, count) rows of a grouped count to into, for a
// store's gauges. The caller closes rows.
func CountBy[K ~string](rows CountRows, into map[K]int) error {
	for rows.Next() {
		var k string
		var n int
		if err := rows.Scan(&k, &n); err != nil {
			return err
		}
		into[K(k)] += n
	}
	return rows.Err()
}

// TaskCounts reads the (tool, status, count) rows of an operator's count
// of tasks by tool and status (backend.Operator.Counts). The
// caller closes rows and wraps the error.
func TaskCounts(rows CountRows) ([]backend.TaskCount, error) {
	var out []backend.TaskCount
	for rows.Next() {
		var c backend.TaskCount
		var status string
		if err := rows.Scan(&c.Tool, &status, &c.N); err != nil {
			return nil, err
		}
		c.Status = task.Status(status)
		out = append(out, c)
	}
	return out, rows.Err()
}
