package postgres

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/storetest"
)

// TestStore runs the shared behavioural suite, each backend on a schema of
// its own (recycled once its subtest ended).
func TestStore(t *testing.T) {
	t.Parallel()
	schemas := newSchemaPool(t)
	storetest.Run(t, func(t *testing.T, now func() time.Time) backend.Store {
		return openStore(t, schemas.get(t), now)
	})
}
