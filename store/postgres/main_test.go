package postgres

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that closed stores leave no goroutine behind: the
// listener, the publisher and the pool's.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
