package postgres

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/store/storetest"
)

func TestGauges(t *testing.T) {
	t.Parallel()
	storetest.RunGauges(t, func(t *testing.T, now func() time.Time) storetest.GaugesBackend {
		return openStore(t, newSchema(t), now)
	})
}

func TestOperator(t *testing.T) {
	t.Parallel()
	storetest.RunOperator(t, func(t *testing.T, now func() time.Time) storetest.OperatorBackend {
		return openStore(t, newSchema(t), now)
	})
}
