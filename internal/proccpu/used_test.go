//go:build unix

package proccpu

import (
	"testing"
	"time"
)

// TestUsedGrows: busy work moves the process's CPU time forward (on a
// loaded machine slowly, so the bound is generous).
func TestUsedGrows(t *testing.T) {
	before, ok := Used()
	if !ok {
		t.Fatal("Used: not readable")
	}
	start := time.Now()
	for {
		now, ok := Used()
		if !ok {
			t.Fatal("Used: not readable")
		}
		if now-before >= 5*time.Millisecond {
			return
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("Used grew by %v over 10 s of busy work", now-before)
		}
	}
}
