package postgres

import (
	"context"
	"fmt"

	"github.com/taskwire/taskwire/store/internal/opsdata"
)

// Ready reports whether the store can serve: a query answers within
// Options.Timeout (and ctx), and the schema is at the version of this
// code. The error is wrapped with the cause; its readiness reason (see
// package admin) is one of "store timed out", "store unreachable",
// "schema outdated" or "schema too new", never a host, user or driver
// message.
func (s *Store) Ready(ctx context.Context) error {
	v, err := s.version(ctx, s.pool)
	if err != nil {
		return opsdata.NotReady(opsdata.Category(err, "store unreachable"), err)
	}
	switch known := SchemaVersion(); {
	case v < known:
		return opsdata.NotReady(opsdata.ReasonOutdated, fmt.Errorf("%w: schema %q is at version %d, code at version %d", ErrSchemaOutdated, s.opts.Schema, v, known))
	case v > known:
		return opsdata.NotReady(opsdata.ReasonTooNew, fmt.Errorf("%w: schema %q is at version %d, code at version %d", ErrSchemaTooNew, s.opts.Schema, v, known))
	}
	return nil
}
