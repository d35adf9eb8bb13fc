package jsonlimit

import (
	"strings"
	"testing"
)

func TestDepthWithin(t *testing.T) {
	tests := []struct {
		in   string
		max  int
		want bool
	}{
		{`{}`, 1, true},
		{`{"a":[1]}`, 1, false},
		{`{"a":[1]}`, 2, true},
		{`"[[[[["`, 1, true},
		{`{"a":"\"[["}`, 1, true},
		{strings.Repeat("[", 129) + strings.Repeat("]", 129), 128, false},
		{strings.Repeat("[", 128) + strings.Repeat("]", 128), 128, true},
	}
	for _, tt := range tests {
		if got := DepthWithin([]byte(tt.in), tt.max); got != tt.want {
			t.Errorf("DepthWithin(%q, %d) = %v, want %v", tt.in, tt.max, got, tt.want)
		}
	}
}
