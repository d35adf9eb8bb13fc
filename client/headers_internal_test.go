package client

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestEncodeHeaderValue(t *testing.T) {
	for in, want := range map[string]string{
		"us-west1":        "us-west1",
		"us west 1":       "us west 1",
		"":                "",
		" padded ":        "=?base64?IHBhZGRlZCA=?=",
		"\tindented":      "=?base64?CWluZGVudGVk?=",
		"line1\nline2":    "=?base64?bGluZTEKbGluZTI=?=",
		"Hello, 世界":       "=?base64?SGVsbG8sIOS4lueVjA==?=",
		"=?base64?abc?=":  "=?base64?PT9iYXNlNjQ/YWJjPz0=?=",
		"=?base64?no-end": "=?base64?no-end",
	} {
		if got := encodeHeaderValue(in); got != want {
			t.Errorf("encodeHeaderValue(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestToolHeaders(t *testing.T) {
	for name, tc := range map[string]struct {
		schema string
		ok     bool
	}{
		"valid":          {`{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"}}}`, true},
		"no schema":      {``, true},
		"property named": {`{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}`, true},
		"empty":          {`{"properties":{"v":{"type":"string","x-mcp-header":""}}}`, false},
		"number":         {`{"properties":{"v":{"type":"number","x-mcp-header":"V"}}}`, false},
		"object":         {`{"properties":{"v":{"type":"object","x-mcp-header":"V"}}}`, false},
		"duplicate case": {`{"properties":{"a":{"type":"string","x-mcp-header":"My"},"b":{"type":"string","x-mcp-header":"my"}}}`, false},
		"space":          {`{"properties":{"v":{"type":"string","x-mcp-header":"My Region"}}}`, false},
		"nested":         {`{"properties":{"v":{"type":"object","properties":{"w":{"type":"string","x-mcp-header":"W"}}}}}`, false},
		"in items":       {`{"properties":{"v":{"type":"array","items":{"type":"string","x-mcp-header":"W"}}}}`, false},
		"in $defs":       {`{"$defs":{"d":{"type":"string","x-mcp-header":"D"}},"properties":{}}`, false},
		"not an object":  {`[1]`, false},
	} {
		_, err := toolHeaders(json.RawMessage(tc.schema))
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", name, err, tc.ok)
		}
	}
}

func TestParamHeaders(t *testing.T) {
	decls, err := toolHeaders(json.RawMessage(`{"properties":{"r":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"},"q":{"type":"string"}}}`))
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
