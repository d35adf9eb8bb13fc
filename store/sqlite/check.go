package sqlite

import (
	"context"
	"fmt"
)

// CheckWrite commits one write transaction that changes nothing a reader
// sees, to prove that the database file (and its directory, for the WAL
// files) is writable before a process reports that it is ready. It fails
// with the driver's error, wrapped, when the file or its directory is
// read-only or the disk refuses the write; like every call it is bounded by
// Options.Timeout.
func (s *Store) CheckWrite(ctx context.Context) error {
	return s.write(ctx, func(tx *wtx) ([]string, error) {
		// A no-op UPDATE still takes the write lock and dirties the page,
		// so the commit writes to the WAL (or the rollback journal).
		if _, err := tx.ExecContext(ctx, `UPDATE schema_version SET version = version
			WHERE version = (SELECT max(version) FROM schema_version)`); err != nil {
			return nil, fmt.Errorf("sqlite: write check: %w", err)
		}
		return nil, nil
	})
}
