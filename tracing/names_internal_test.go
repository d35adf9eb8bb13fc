package tracing

import (
	"strconv"
	"testing"
)

// TestSpanNamesBounded checks that span names are "mcp " and the method
// whether or not they are kept, and that at most maxSpanNames are kept.
func TestSpanNamesBounded(t *testing.T) {
	var s spanNames
	for round := range 2 {
		for i := range maxSpanNames + 5 {
			m := "m" + strconv.Itoa(i)
			if got := s.name(m); got != "mcp "+m {
				t.Fatalf("round %d: name(%q) = %q", round, m, got)
			}
		}
	}
	if got := s.n.Load(); got != maxSpanNames {
		t.Errorf("%d names kept, want %d", got, maxSpanNames)
	}
}
