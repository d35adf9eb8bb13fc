package memory_test

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/store/storetest"
)

// TestStore runs the shared behavioural suite of the durable stores, each
// case on a fresh manager with the default bounds.
func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now func() time.Time) backend.Store { return openStore(t, now) })
}

// TestGauges runs the shared gauges case: the Prometheus store gauges
// read this backend as they read the durable stores.
func TestGauges(t *testing.T) {
	storetest.RunGauges(t, func(t *testing.T, now func() time.Time) storetest.GaugesBackend { return openStore(t, now) })
}

// TestOperator runs the shared operator case: the console reads this
// backend as it reads the durable stores.
func TestOperator(t *testing.T) {
	storetest.RunOperator(t, func(t *testing.T, now func() time.Time) storetest.OperatorBackend { return openStore(t, now) })
}

// openStore returns a fresh manager with the default bounds on the clock
// now.
func openStore(t *testing.T, now func() time.Time) *memory.Manager {
	m, err := memory.New(memory.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}
