package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestUnsupportedVersionBounded: the echoed version is cut to
// MaxEchoedVersion bytes, never inside a character.
func TestUnsupportedVersionBounded(t *testing.T) {
	tests := []struct {
		name, requested, want string
	}{
		{"date", "2099-01-01", "2099-01-01"},
		{"at the bound", strings.Repeat("v", MaxEchoedVersion), strings.Repeat("v", MaxEchoedVersion)},
		{"long", strings.Repeat("v", 1<<20), strings.Repeat("v", MaxEchoedVersion)},
		{"multi-byte at the cut", strings.Repeat("v", MaxEchoedVersion-1) + "é" + "tail", strings.Repeat("v", MaxEchoedVersion-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := UnsupportedVersion([]string{LatestProtocolVersion}, tt.requested)
			var d UnsupportedVersionData
			if err := json.Unmarshal(e.Data, &d); err != nil {
				t.Fatal(err)
			}
			if d.Requested != tt.want {
				t.Errorf("requested = %q (%d bytes), want %q", d.Requested, len(d.Requested), tt.want)
			}
		})
	}
}
