package gateway

import (
	"testing"
	"time"
)

// TestRestartDelay: the delay doubles from restartBase, is capped at
// restartCap, and the jitter takes at most half of it off.
func TestRestartDelay(t *testing.T) {
	for _, tc := range []struct {
		failures int
		jitter   float64
		want     time.Duration
	}{
		{0, 1, restartBase},
		{0, 0, restartBase / 2},
		{1, 1, 2 * restartBase},
		{3, 0.5, 8 * restartBase * 3 / 4},
		{9, 1, restartCap},
		{1000, 0, restartCap / 2},
	} {
		if got := restartDelay(tc.failures, func() float64 { return tc.jitter }); got != tc.want {
			t.Errorf("restartDelay(%d, jitter %v) = %v, want %v", tc.failures, tc.jitter, got, tc.want)
		}
	}
}
