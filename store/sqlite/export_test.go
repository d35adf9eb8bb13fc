package sqlite

import "database/sql"

// DebugQueryRow runs a query on the writer connection, for tests.
func (s *Store) DebugQueryRow(query string, args ...any) *sql.Row {
	return s.w.QueryRow(query, args...)
}

// DebugReadQueryRow runs a query on the read pool, for tests.
func (s *Store) DebugReadQueryRow(query string, args ...any) *sql.Row {
	return s.r.QueryRow(query, args...)
}
