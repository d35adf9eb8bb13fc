package sqlite

import (
	"context"
	"database/sql"
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
