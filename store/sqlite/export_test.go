package sqlite

import (
	"context"
	"database/sql"

	"github.com/taskwire/taskwire/store/internal/taskdata"
	"github.com/taskwire/taskwire/task"
)

// DebugQueryRow runs a query on the writer connection, for tests.
func (s *Store) DebugQueryRow(query string, args ...any) *sql.Row {
	return s.w.QueryRow(query, args...)
}

// DebugReadQueryRow runs a query on the read pool, for tests.
func (s *Store) DebugReadQueryRow(query string, args ...any) *sql.Row {
	return s.r.QueryRow(query, args...)
}

// HoldWriter takes the one writer connection, as a long write would, until
// release is called.
func (s *Store) HoldWriter() (release func(), err error) {
	c, err := s.w.Conn(context.Background())
	if err != nil {
		return nil, err
	}
	return func() { c.Close() }, nil
}

// HoldReaders takes every connection of the read pool, as long-running
// reads would, until release is called.
func (s *Store) HoldReaders() (release func(), err error) {
	var held []*sql.Conn
	release = func() {
		for _, c := range held {
			c.Close()
		}
	}
	for range s.opts.ReadConns {
		c, err := s.r.Conn(context.Background())
		if err != nil {
			release()
			return nil, err
		}
		held = append(held, c)
	}
	return release, nil
}

// DebugQueryPlan returns the detail column of EXPLAIN QUERY PLAN for query
// on the writer connection, one line per step.
func (s *Store) DebugQueryPlan(query string, args ...any) ([]string, error) {
	rows, err := s.w.Query("EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, err
		}
		plan = append(plan, detail)
	}
	return plan, rows.Err()
}

// Statements whose plans the tests check.
const (
	SQLListTasks          = sqlListTasks
	SQLCountOwnerSessions = sqlCountOwnerSessions
	SQLSweepSessions      = sqlSweepSessions
)

// DebugExec runs a statement on the writer connection, for tests that
// write as an older version of the code does.
func (s *Store) DebugExec(query string, args ...any) (sql.Result, error) {
	return s.w.Exec(query, args...)
}

// Stats are counts of a store's rows, for tests that check what the
// store keeps (monitoring reads Gauges).
type Stats struct {
	// Tasks counts tasks by status, expired ones included until deleted.
	Tasks map[task.Status]int
	// Jobs counts jobs by state: available, running, awaiting_input,
	// done.
	Jobs map[string]int
	// Outbox counts outbox rows; LastOutboxID is the newest row's ID.
	Outbox       int
	LastOutboxID int64
	// SchemaVersion is the database's schema version.
	SchemaVersion int
}

// Stats counts the store's rows from one read transaction.
func (s *Store) Stats(ctx context.Context) (Stats, error) {
	st := Stats{Tasks: map[task.Status]int{}, Jobs: map[string]int{}}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	defer tx.Rollback()
	if err := countBy(ctx, tx, `SELECT status, count(*) FROM tasks GROUP BY status`, st.Tasks); err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	if err := countBy(ctx, tx, `SELECT state, count(*) FROM jobs GROUP BY state`, st.Jobs); err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	var last sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), max(id) FROM outbox`).Scan(&st.Outbox, &last); err != nil {
		return Stats{}, wrapErr("stats", err)
	}
	st.LastOutboxID = last.Int64
	if st.SchemaVersion, err = s.version(ctx, tx); err != nil {
		return Stats{}, err
	}
	return st, nil
}

// countBy adds the rows of a grouped count query to into.
func countBy[K ~string](ctx context.Context, tx *sql.Tx, query string, into map[K]int) error {
	rows, err := tx.QueryContext(ctx, query)
	if err != nil {
		return err
	}
	defer rows.Close()
	return taskdata.CountBy(rows, into)
}
