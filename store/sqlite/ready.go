package sqlite

import (
	"context"
	"fmt"

	"github.com/taskwire/taskwire/store/internal/opsdata"
)

// Ready reports whether the store can serve: a write transaction commits
// (the file and its directory are writable and the disk accepts the write)
// and the database's schema is at the version of this code. It is bounded
// by Options.Timeout and by ctx. The error is wrapped with the cause; its
// readiness reason (see package admin) is one of "store read-only or
// unwritable", "store timed out", "schema outdated" or "schema too new".
func (s *Store) Ready(ctx context.Context) error {
	if err := s.CheckWrite(ctx); err != nil {
		return opsdata.NotReady(opsdata.Category(err, "store read-only or unwritable"), err)
	}
	ctx, cancel := s.bound(ctx)
	defer cancel()
	v, err := s.version(ctx, s.r)
	if err != nil {
		return opsdata.NotReady(opsdata.Category(err, "store unavailable"), err)
	}
	switch known := SchemaVersion(); {
	case v < known:
		return opsdata.NotReady(opsdata.ReasonOutdated, fmt.Errorf("%w: database version %d, code version %d", ErrSchemaOutdated, v, known))
	case v > known:
		return opsdata.NotReady(opsdata.ReasonTooNew, fmt.Errorf("%w: database version %d, code version %d", ErrSchemaTooNew, v, known))
	}
	return nil
}
