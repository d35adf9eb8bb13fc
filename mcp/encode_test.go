package mcp

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// checkFastEncoding asserts that MarshalJSON's direct encoding, where it
// applies, is byte-identical to encoding/json's, also when encoding/json
// calls MarshalJSON for a nested value.
func checkFastEncoding(t testing.TB, r *CallToolResult) {
	t.Helper()
	want, werr := r.marshalReflect()
	got, ok := AppendToolResult(nil, r, nil)
	if !ok {
		return // not the direct shape
	}
	if werr != nil {
		t.Fatalf("direct encoding accepted a result encoding/json rejects: %v", werr)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Fatalf("direct encoding differs from encoding/json (-want +got):\n%s", diff)
	}
	viaJSON, err := json.Marshal(r)
	if err != nil || string(viaJSON) != string(want) {
		t.Fatalf("json.Marshal = %s, %v; want %s", viaJSON, err, want)
	}
}

func TestAppendToolResult(t *testing.T) {
	for _, r := range []*CallToolResult{
		{},
		{Content: []Content{&TextContent{Text: "plain"}}},
		{Content: []Content{&TextContent{Text: "a\"b\\c\n\r\t\b\f\x00\x1f<>&\u2028\u2029é日本\xff\xfe"}}},
		{Content: []Content{&TextContent{Text: "x"}, &TextContent{Text: ""}}, IsError: true},
		{StructuredContent: json.RawMessage(` { "a" : [ 1 , 2.50 ] , "b" : "s p <&>" } `)},
		{ResultType: ResultComplete, Content: []Content{&TextContent{Text: "ok"}}},
	} {
		if _, ok := AppendToolResult(nil, r, nil); !ok {
			t.Errorf("direct encoding refused %+v", r)
		}
		checkFastEncoding(t, r)
	}
	for _, r := range []*CallToolResult{
		{Meta: Meta{"k": 1}},
		{ResultType: ResultTask},
		{Content: []Content{&ImageContent{Data: []byte{1}, MIMEType: "image/png"}}},
		{Content: []Content{&TextContent{Text: "x", Meta: Meta{"k": 1}}}},
		{StructuredContent: json.RawMessage(`{bad`)},
	} {
		if b, ok := AppendToolResult([]byte("x"), r, nil); ok || string(b) != "x" {
			t.Errorf("direct encoding accepted %+v (%q)", r, b)
		}
	}
}

func FuzzAppendToolResult(f *testing.F) {
	f.Add("hello", `{"a":1}`, false)
	f.Add("<\u2028\xff>", ` [ 1 , "x y" ] `, true)
	f.Fuzz(func(t *testing.T, text, structured string, isError bool) {
		r := &CallToolResult{Content: []Content{&TextContent{Text: text}}, IsError: isError}
		if structured != "" {
			r.StructuredContent = json.RawMessage(structured)
		}
		checkFastEncoding(t, r)
	})
}
