package client

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
)

func TestParamHeaders(t *testing.T) {
	decls, err := mcp.ParseParamHeaders(json.RawMessage(`{"properties":{"r":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"},"q":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := paramHeaders(decls, json.RawMessage(`{"r":"eu","n":42.0,"b":false,"q":"select"}`))
	want := http.Header{"Mcp-Param-Region": {"eu"}, "Mcp-Param-N": {"42"}, "Mcp-Param-B": {"false"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got := paramHeaders(decls, json.RawMessage(`{"r":null,"n":"7","b":1}`)); len(got) != 0 {
		t.Errorf("null and mistyped values must send no header, got %v", got)
	}
}

func TestWithDefaults(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"name":{"type":"string","default":"Ada"},"age":{"type":"integer","default":30},"x":{"type":"string"}}}`)
	got := withDefaults(schema, map[string]any{"age": 41})
	want := map[string]any{"name": "Ada", "age": 41}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
