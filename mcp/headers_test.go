package mcp

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestIsHeaderToken(t *testing.T) {
	for s, want := range map[string]bool{
		"Region": true, "x-Tenant_ID.2": true, "a!#$%&'*+-.^_`|~z": true,
		"": false, "My Region": false, "Region:Primary": false, "Région": false, "Region\t1": false, "a/b": false,
	} {
		if got := IsHeaderToken(s); got != want {
			t.Errorf("IsHeaderToken(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestEncodeHeaderValue pins the one encoding rule, including the values on
// which the client's and mcptest's former encoders disagreed: a value that
// only begins with the sentinel is a literal (mcptest encoded it), and so is
// one too short to hold the sentinel's two halves (the client encoded it).
func TestEncodeHeaderValue(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{"us-west1", "us-west1"},
		{"us west 1", "us west 1"},
		{"", ""},
		{"~!@#", "~!@#"},
		{" padded ", "=?base64?IHBhZGRlZCA=?="},
		{"trailing ", "=?base64?dHJhaWxpbmcg?="},
		{"\tindented", "=?base64?CWluZGVudGVk?="},
		{"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
		{"del\x7f", "=?base64?ZGVsfw==?="},
		{"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
		{"=?base64?abc?=", "=?base64?PT9iYXNlNjQ/YWJjPz0=?="},
		{"=?base64??=", "=?base64?PT9iYXNlNjQ/Pz0=?="},
		{"=?base64?no-end", "=?base64?no-end"},                 // mcptest encoded it
		{"=?base64?=", "=?base64?="},                           // the client encoded it
		{"no-start?=", "no-start?="},                           // only the suffix
		{"=?BASE64?abc?=", "=?BASE64?abc?="},                   // another case is a literal
		{"=?base64?abc?= ", "=?base64?PT9iYXNlNjQ/YWJjPz0g?="}, // trailing space
	}
	for _, tt := range tests {
		got := EncodeHeaderValue(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("EncodeHeaderValue(%q) (-want +got):\n%s", tt.in, diff)
		}
		back, err := DecodeHeaderValue(got)
		if err != nil || back != tt.in {
			t.Errorf("DecodeHeaderValue(EncodeHeaderValue(%q)) = %q, %v; want the value back", tt.in, back, err)
		}
	}
}

func TestDecodeHeaderValue(t *testing.T) {
	tests := []struct {
		in, want string
		err      bool
	}{
		{in: "plain", want: "plain"},
		{in: "", want: ""},
		{in: "=?base64?SGVsbG8sIOS4lueVjA==?=", want: "Hello, 世界"},
		{in: "=?base64??=", want: ""},
		{in: "=?base64?=", want: "=?base64?="},
		{in: "=?base64?abc", want: "=?base64?abc"},
		{in: "abc?=", want: "abc?="},
		{in: "=?Base64?SGk=?=", want: "=?Base64?SGk=?="},
		{in: "=?base64?not base64?=", err: true},
		{in: "=?base64?SGk?=", err: true},  // missing padding
		{in: "=?base64?/w==?=", err: true}, // 0xff is not UTF-8
	}
	for _, tt := range tests {
		got, err := DecodeHeaderValue(tt.in)
		if tt.err {
			if !errors.Is(err, ErrInvalidHeaderValue) {
				t.Errorf("DecodeHeaderValue(%q) = %q, %v; want ErrInvalidHeaderValue", tt.in, got, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("DecodeHeaderValue(%q): %v", tt.in, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("DecodeHeaderValue(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

// FuzzHeaderValue: DecodeHeaderValue takes a value that is not of the exact
// sentinel form literally and decodes a sentinel value to valid UTF-8 or
// fails with ErrInvalidHeaderValue; every value EncodeHeaderValue returns is
// a plain header value that decodes back to the valid UTF-8 string it
// encodes (an invalid one is rejected).
func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{
		"", "echo", "tools/call", "2026-07-28", "file:///projects/myapp/config.json", "us-west1",
		"  eu ", "\teu\t", "a b", "x\x00y", "x\ny", "x\x7fy", "über", "Hello, 世界", "\xff", "\xc3",
		"=?base64?ZWNobw==?=", "=?base64?w7xiZXI=?=", "=?base64?SGVsbG8sIOS4lueVjA==?=",
		"=?base64?IHBhZGRlZCA=?=", "=?base64?bGluZTEKbGluZTI=?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
		"=?base64?/w==?=", "=?base64?!!!?=", "=?base64?ZWNobw?=", "=?base64?ZW Nobw==?=", "=?base64?ZW\nNobw==?=",
		"=?base64??=", "=?base64?=", "=?base64?", "?=", "=?BASE64?ZWNobw==?=", " =?base64?ZWNobw==?= ",
		"=?base64?literal?=", "=?base64?no-end",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		sentinel := len(v) >= len("=?base64?")+len("?=") &&
			strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?=")
		got, err := DecodeHeaderValue(v)
		switch {
		case err != nil && (!sentinel || !errors.Is(err, ErrInvalidHeaderValue)):
			t.Fatalf("DecodeHeaderValue(%q) rejected a literal value: %v", v, err)
		case err == nil && !sentinel && got != v:
			t.Fatalf("DecodeHeaderValue(%q) = %q, want the literal value", v, got)
		case err == nil && sentinel && !utf8.ValidString(got):
			t.Fatalf("DecodeHeaderValue(%q) = %q, not valid UTF-8", v, got)
		}

		enc := EncodeHeaderValue(v)
		if !isPlainHeaderValue(enc) {
			t.Fatalf("EncodeHeaderValue(%q) = %q, not a plain header value", v, enc)
		}
		back, err := DecodeHeaderValue(enc)
		if !utf8.ValidString(v) {
			if err == nil {
				t.Fatalf("DecodeHeaderValue(%q) accepted invalid UTF-8", enc)
			}
			return
		}
		if err != nil || back != v {
			t.Fatalf("round trip of %q via %q gave %q, %v", v, enc, back, err)
		}
	})
}

func TestParseParamHeaders(t *testing.T) {
	tests := []struct {
		name   string
		schema string
		want   []ParamHeader
		err    bool
	}{
		{name: "none", schema: ``},
		{name: "valid", schema: `{"type":"object","properties":{"r":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"b":{"type":"boolean","x-mcp-header":"B"},"q":{"type":"string"}}}`,
			want: []ParamHeader{{"b", "B", "boolean", "Mcp-Param-B"}, {"n", "N", "integer", "Mcp-Param-N"}, {"r", "Region", "string", "Mcp-Param-Region"}}},
		{name: "canonical key", schema: `{"properties":{"t":{"type":"string","x-mcp-header":"x-tenant_ID"}}}`,
			want: []ParamHeader{{"t", "x-tenant_ID", "string", "Mcp-Param-X-Tenant_id"}}},
		{name: "property named x-mcp-header", schema: `{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}`},
		{name: "nested property named x-mcp-header", schema: `{"properties":{"o":{"type":"object","properties":{"x-mcp-header":{"type":"string"}}}}}`},
		{name: "definition named x-mcp-header", schema: `{"$defs":{"x-mcp-header":{"type":"string"}},"properties":{}}`},
		{name: "empty name", schema: `{"properties":{"v":{"type":"string","x-mcp-header":""}}}`, err: true},
		{name: "not a string", schema: `{"properties":{"v":{"type":"string","x-mcp-header":7}}}`, err: true},
		{name: "space", schema: `{"properties":{"v":{"type":"string","x-mcp-header":"My Region"}}}`, err: true},
		{name: "number", schema: `{"properties":{"v":{"type":"number","x-mcp-header":"V"}}}`, err: true},
		{name: "object", schema: `{"properties":{"v":{"type":"object","x-mcp-header":"V"}}}`, err: true},
		{name: "untyped", schema: `{"properties":{"v":{"x-mcp-header":"V"}}}`, err: true},
		{name: "twice ignoring case", schema: `{"properties":{"a":{"type":"string","x-mcp-header":"My"},"b":{"type":"string","x-mcp-header":"my"}}}`, err: true},
		{name: "nested", schema: `{"properties":{"v":{"type":"object","properties":{"w":{"type":"string","x-mcp-header":"W"}}}}}`, err: true},
		{name: "in items", schema: `{"properties":{"v":{"type":"array","items":{"type":"string","x-mcp-header":"W"}}}}`, err: true},
		{name: "in anyOf", schema: `{"properties":{"v":{"anyOf":[{"type":"string","x-mcp-header":"W"}]}}}`, err: true},
		{name: "in $defs", schema: `{"$defs":{"d":{"type":"string","x-mcp-header":"D"}},"properties":{}}`, err: true},
		{name: "on the root", schema: `{"type":"object","x-mcp-header":"Root","properties":{}}`, err: true},
		{name: "not an object", schema: `[1]`, err: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseParamHeaders(json.RawMessage(tt.schema))
			if (err != nil) != tt.err {
				t.Fatalf("err = %v, want error %v", err, tt.err)
			}
			sort.Slice(got, func(i, j int) bool { return got[i].Property < got[j].Property })
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestParamHeaderValue(t *testing.T) {
	str := ParamHeader{Property: "r", Name: "region", Type: "string"}
	num := ParamHeader{Property: "n", Name: "N", Type: "integer"}
	flag := ParamHeader{Property: "b", Name: "B", Type: "boolean"}
	type rendered struct {
		Value string
		OK    bool
	}
	tests := []struct {
		decl ParamHeader
		arg  string
		want rendered
	}{
		{str, `"eu"`, rendered{"eu", true}},
		{str, ` "Hello, 世界" `, rendered{"Hello, 世界", true}},
		{str, `7`, rendered{}},
		{str, `null`, rendered{}},
		{str, ``, rendered{}},
		{num, `42`, rendered{"42", true}},
		{num, `42.0`, rendered{"42", true}},
		{num, `4.2e1`, rendered{"42", true}},
		{num, `-3`, rendered{"-3", true}},
		{num, `12345678901234567890`, rendered{"12345678901234567890", true}},
		{num, `4.5`, rendered{}},
		{num, `"7"`, rendered{}},
		{num, `null`, rendered{}},
		{flag, `false`, rendered{"false", true}},
		{flag, `true`, rendered{"true", true}},
		{flag, `1`, rendered{}},
	}
	for _, tt := range tests {
		v, ok := tt.decl.Value(json.RawMessage(tt.arg))
		if diff := cmp.Diff(tt.want, rendered{v, ok}); diff != "" {
			t.Errorf("%s.Value(%s) (-want +got):\n%s", tt.decl.Type, tt.arg, diff)
		}
	}
}

func TestParamHeaderMatches(t *testing.T) {
	str := ParamHeader{Property: "r", Name: "R", Type: "string"}
	num := ParamHeader{Property: "n", Name: "N", Type: "integer"}
	flag := ParamHeader{Property: "b", Name: "B", Type: "boolean"}
	tests := []struct {
		decl   ParamHeader
		header string
		arg    string
		want   bool
	}{
		{str, "eu", `"eu"`, true},
		{str, "EU", `"eu"`, false},
		{str, "7", `7`, false},
		{str, "", `null`, false},
		{num, "42", `42`, true},
		{num, "42", `42.0`, true},
		{num, "42.0", `42`, true},
		{num, "43", `42`, false},
		{num, "Inf", `1e400`, false},
		{num, "42", `"42"`, false},
		{flag, "true", `true`, true},
		{flag, "True", `true`, false},
		{flag, "1", `true`, false},
	}
	for _, tt := range tests {
		if got := tt.decl.Matches(tt.header, json.RawMessage(tt.arg)); got != tt.want {
			t.Errorf("%s.Matches(%q, %s) = %v, want %v", tt.decl.Type, tt.header, tt.arg, got, tt.want)
		}
	}
}

func TestTargetName(t *testing.T) {
	type target struct {
		Name string
		OK   bool
	}
	tests := []struct {
		method string
		want   target
	}{
		{MethodToolsCall, target{"n", true}},
		{MethodPromptsGet, target{"n", true}},
		{MethodResourcesRead, target{"u", true}},
		{MethodTasksGet, target{"t", true}},
		{MethodTasksUpdate, target{"t", true}},
		{MethodTasksCancel, target{"t", true}},
		{MethodToolsList, target{}},
	}
	for _, tt := range tests {
		name, ok := TargetName(tt.method, "n", "u", "t")
		if diff := cmp.Diff(tt.want, target{name, ok}); diff != "" {
			t.Errorf("TargetName(%s) (-want +got):\n%s", tt.method, diff)
		}
	}
}
