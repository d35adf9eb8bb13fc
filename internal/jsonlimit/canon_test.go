package jsonlimit

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAppendCanonical(t *testing.T) {
	tests := []struct {
		in, want string
	}{
		{` { "b" : [ 1 , 2 ] , "a" : { } } `, `{"a":{},"b":[1,2]}`},
		{`{"a":1,"b":2}`, `{"a":1,"b":2}`},
		{`{"c":{"z":null,"y":true},"a":false,"b":[{"d":1,"c":2}]}`, `{"a":false,"b":[{"c":2,"d":1}],"c":{"y":true,"z":null}}`},
		// Numbers keep their spelling.
		{`[1, 1.0, 1e0, 1E+0, -0, 12345678901234567890123]`, `[1,1.0,1e0,1E+0,-0,12345678901234567890123]`},
		// Escapes decode; the short escapes and \u00xx for control characters stay.
		{`"\u0041\/\u00e9\ud83d\ude00"`, `"A/é😀"`},
		{`"\"\\\b\f\n\r\t\u0022\u005c\u0008\u000A\u0001\u001F\u007f"`, `"\"\\\b\f\n\r\t\"\\\b\n\u0001\u001f` + "\x7f" + `"`},
		{`"\uD800x\uDFFF\uDBFF"`, `"\ud800x\udfff\udbff"`},
		{`"\ud83d\u0041"`, `"\ud83dA"`},
		// Member names sort by their canonical form; equal names keep their order.
		{`{"\u0062":1,"a":2}`, `{"a":2,"b":1}`},
		{`{"a":2,"b":0,"a":1}`, `{"a":2,"a":1,"b":0}`},
		{`{"é":1,"z":2,"":3}`, `{"":3,"z":2,"é":1}`},
		{`"` + "\xff" + `"`, `"` + "\xff" + `"`},
	}
	for _, tt := range tests {
		got, err := AppendCanonical([]byte("x"), []byte(tt.in), 8)
		if err != nil {
			t.Errorf("AppendCanonical(%q): %v", tt.in, err)
			continue
		}
		if diff := cmp.Diff("x"+tt.want, string(got)); diff != "" {
			t.Errorf("AppendCanonical(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestAppendCanonicalRefuses(t *testing.T) {
	deep := strings.Repeat(`{"a":`, 9) + "1" + strings.Repeat("}", 9)
	for _, in := range []string{``, ` `, `{"a":1} x`, `{"a":1}{}`, `[1 2]`, `{"a" 1}`, `{1:2}`, `{"a":1,}`, `[1,]`,
		`"\u12"`, `"\x"`, `.5`, `nul`, `"a`, deep, strings.Repeat("[", 9) + strings.Repeat("]", 9)} {
		got, err := AppendCanonical([]byte("x"), []byte(in), 8)
		if err == nil || string(got) != "x" {
			t.Errorf("AppendCanonical(%.30q) = %q, %v; want an error and dst unchanged", in, got, err)
		}
	}
	if _, err := AppendCanonical(nil, []byte(deep), 9); err != nil {
		t.Errorf("depth 9 within 9: %v", err)
	}
}

func TestEqualCanonical(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{`{"a":1}`, `{"a":1}`, true},
		{`{"a":1}`, "{ \"a\" :\n 1 }", true},
		{`{"a":1,"b":[1,{"c":"d","e":2}]}`, `{"b": [1, {"e": 2, "c": "d"}], "a": 1}`, true},
		{`{"a":"\u00e9"}`, `{"a":"é"}`, true},
		{`{"a":1}`, `{"a":1.0}`, false},
		{`{"a":1}`, `{"a":2}`, false},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":1,"a":2}`, `{"a":2,"a":1}`, false},
		{`{"a":1}`, `{"a":1}x`, false},
		{`{"a":`, `{"a":`, true}, // byte-identical
	}
	for _, tt := range tests {
		if got := EqualCanonical([]byte(tt.a), []byte(tt.b), 8); got != tt.want {
			t.Errorf("EqualCanonical(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}

// FuzzAppendCanonical checks that the canonical form is valid JSON of the
// same value as the input (as encoding/json decodes both), never longer
// than it, and its own canonical form; and that it accepts what Valid does.
func FuzzAppendCanonical(f *testing.F) {
	for _, s := range []string{`{}`, `{"b":1,"a":[2,{"d":"\u0041","c":null}]}`, `"x\u00e9\ud800"`, `1.5e-3`, `{"a":1,"a":2}`, `[1,]`, ` true `, `"\x"`, `{"a":1}{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := AppendCanonical(nil, data, 64)
		if valid := Valid(data, 64); (err == nil) != valid {
			t.Fatalf("AppendCanonical(%q) error %v, Valid says %v", data, err, valid)
		}
		if err != nil {
			return
		}
		if len(got) > len(data) {
			t.Fatalf("canonical form %q is longer than %q", got, data)
		}
		again, err := AppendCanonical(nil, got, 64)
		if err != nil || !bytes.Equal(again, got) {
			t.Fatalf("canonical form %q is not its own canonical form: %q, %v", got, again, err)
		}
		if diff := cmp.Diff(decode(t, data), decode(t, got)); diff != "" {
			t.Fatalf("canonical form %q of %q decodes to another value (-in +canonical):\n%s", got, data, diff)
		}
	})
}

func decode(t *testing.T, data []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", data, err)
	}
	return v
}

// BenchmarkEqualCanonical measures the comparison of an idempotent retry's
// arguments with the stored ones: the same bytes (the common case), and the
// same value re-serialised with spaces and another member order.
func BenchmarkEqualCanonical(b *testing.B) {
	stored := []byte(`{"accountId":"acme-042","rows":500,"seconds":3,"filters":{"region":"eu","since":"2026-01-01","tags":["a","b","c"]},"idempotencyKey":"acme-q3-7f1c"}`)
	var spaced bytes.Buffer
	json.Indent(&spaced, stored, "", " ")
	retry := []byte(`{"idempotencyKey": "acme-q3-7f1c", "accountId": "acme-042", "filters": {"tags": ["a", "b", "c"], "since": "2026-01-01", "region": "eu"}, "rows": 500, "seconds": 3}`)
	for _, bc := range []struct {
		name string
		a, b []byte
	}{
		{"identical", stored, bytes.Clone(stored)},
		{"spaces", stored, spaced.Bytes()},
		{"reordered", stored, retry},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if !EqualCanonical(bc.a, bc.b, 256) {
					b.Fatal("not equal")
				}
			}
		})
	}
	// The worst case: objects nested to the limit, each with its members
	// out of order, so that every level rewrites all it holds.
	deep := strings.Repeat(`{"b":`, 255) + "1" + strings.Repeat(`,"a":0}`, 255)
	b.Run("deep-unsorted", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(deep)))
		for b.Loop() {
			if _, err := AppendCanonical(nil, []byte(deep), 256); err != nil {
				b.Fatal(err)
			}
		}
	})
}
