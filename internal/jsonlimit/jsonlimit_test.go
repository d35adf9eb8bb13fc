package jsonlimit

import (
	"encoding/json"
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

func FuzzValidMatchesEncodingJSON(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a":[1,2,{"b":null}]}`, `"x\u00e9"`, `1.5e-3`, `-0`, `01`, `[1,]`, `{"a"}`, `{"a":1,}`, ` true `, `nul`, `"\x"`, `[[[]]]`, `"` + "\x01" + `"`, `{"a":1}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := json.Valid(data) && DepthWithin(data, 64)
		if got := Valid(data, 64); got != want {
			t.Fatalf("Valid(%q) = %v, encoding/json and DepthWithin say %v", data, got, want)
		}
	})
}

func TestValid(t *testing.T) {
	deep := strings.Repeat("[", 300) + strings.Repeat("]", 300)
	tests := []struct {
		in   string
		max  int
		want bool
	}{
		{`{"jsonrpc":"2.0","id":1,"params":{"a":[1,2.5,-3e2,true,false,null,"s\"\\\/\b\f\n\r\t\u0041"]}}`, 128, true},
		{`{"a":[1]}`, 1, false},
		{`{"a":[1]}`, 2, true},
		{deep, 128, false},
		{deep, 1000, true},
		{``, 8, false},
		{`{"a":1} x`, 8, false},
		{`[1 2]`, 8, false},
		{`{"a" 1}`, 8, false},
		{`{1:2}`, 8, false},
		{`"\u12"`, 8, false},
		{`.5`, 8, false},
		{`1.`, 8, false},
		{`1e`, 8, false},
		{`+1`, 8, false},
	}
	for _, tt := range tests {
		if got := Valid([]byte(tt.in), tt.max); got != tt.want {
			t.Errorf("Valid(%.40q, %d) = %v, want %v", tt.in, tt.max, got, tt.want)
		}
	}
}
