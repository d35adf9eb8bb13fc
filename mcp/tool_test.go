package mcp

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWithStructuredText pins the one rule for mirroring structured content
// as text, which the server's typed tools, the task validator and the
// worker's typed handlers share.
func TestWithStructuredText(t *testing.T) {
	obj := json.RawMessage(`{"n":1}`)
	tests := []struct {
		name string
		in   *CallToolResult
		want *CallToolResult
		same bool // the value itself comes back
	}{
		{"structured only", &CallToolResult{StructuredContent: obj, IsError: true},
			&CallToolResult{StructuredContent: obj, IsError: true, Content: []Content{&TextContent{Text: `{"n":1}`}}}, false},
		{"content kept", &CallToolResult{StructuredContent: obj, Content: []Content{&TextContent{Text: "mine"}}},
			&CallToolResult{StructuredContent: obj, Content: []Content{&TextContent{Text: "mine"}}}, true},
		{"nothing structured", &CallToolResult{}, &CallToolResult{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := *tt.in
			got := tt.in.WithStructuredText()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if (got == tt.in) != tt.same {
				t.Errorf("returned the same value: %v, want %v", got == tt.in, tt.same)
			}
			if diff := cmp.Diff(&before, tt.in); diff != "" {
				t.Errorf("the receiver changed (-before +after):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff(tests[0].want.Content, StructuredResult(obj).Content); diff != "" {
		t.Errorf("StructuredResult content (-want +got):\n%s", diff)
	}
}
