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
