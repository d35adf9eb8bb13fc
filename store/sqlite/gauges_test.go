package sqlite_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/store/storetest"
)

func TestGauges(t *testing.T) {
	storetest.RunGauges(t, func(t *testing.T, now func() time.Time) storetest.GaugesBackend {
		return open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Now: now})
	})
}

func TestOperator(t *testing.T) {
	storetest.RunOperator(t, func(t *testing.T, now func() time.Time) storetest.OperatorBackend {
		return open(t, sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Now: now})
	})
}
