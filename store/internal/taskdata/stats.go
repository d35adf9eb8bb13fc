package taskdata

// CountRows is what CountBy reads: the rows of a "SELECT key, count(*) ...
// GROUP BY key" query, as database/sql and pgx both return them.
type CountRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// CountBy adds the (key, count) rows of a grouped count to into, for a
// store's Stats. The caller closes rows.
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
