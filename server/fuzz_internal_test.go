package server

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcptest"
)

// FuzzHeaderValue checks the mirrored-header reading path (singleHeader, then
// decodeHeaderValue) on arbitrary values:
//   - decodeHeaderValue takes a value that is not of the exact sentinel form
//     literally, and decodes a sentinel value to valid UTF-8 or fails;
//   - a value singleHeader accepts is trimmed, free of control characters,
//     and decodes to valid UTF-8 or fails;
//   - every valid UTF-8 string survives mcptest.EncodeHeaderValue, the header
//     and decoding unchanged.
func FuzzHeaderValue(f *testing.F) {
	for _, s := range []string{
		"", "echo", "tools/call", "2026-07-28", "file:///projects/myapp/config.json", "us-west1",
		"  eu ", "\teu\t", "a b", "x\x00y", "x\ny", "x\x7fy", "über", "Hello, 世界", "\xff", "\xc3",
		"=?base64?ZWNobw==?=", "=?base64?w7xiZXI=?=", "=?base64?SGVsbG8sIOS4lueVjA==?=",
		"=?base64?IHBhZGRlZCA=?=", "=?base64?bGluZTEKbGluZTI=?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=",
		"=?base64?/w==?=", "=?base64?!!!?=", "=?base64?ZWNobw?=", "=?base64?ZW Nobw==?=", "=?base64?ZW\nNobw==?=",
		"=?base64??=", "=?base64?=", "=?base64?", "?=", "=?BASE64?ZWNobw==?=", " =?base64?ZWNobw==?= ",
		"=?base64?literal?=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		sentinel := len(v) >= len(base64Prefix)+len(base64Suffix) &&
			strings.HasPrefix(v, base64Prefix) && strings.HasSuffix(v, base64Suffix)
		got, err := decodeHeaderValue(v)
		switch {
		case err != nil && !sentinel:
			t.Fatalf("decodeHeaderValue(%q) rejected a literal value: %v", v, err)
		case err == nil && !sentinel && got != v:
			t.Fatalf("decodeHeaderValue(%q) = %q, want the literal value", v, got)
		case err == nil && sentinel && !utf8.ValidString(got):
			t.Fatalf("decodeHeaderValue(%q) = %q, not valid UTF-8", v, got)
		}

		h := http.Header{http.CanonicalHeaderKey(headerName): {v}}
		hv, present, err := singleHeader(h, headerName)
		if !present {
			t.Fatalf("singleHeader(%q): header reported absent", v)
		}
		if err == nil {
			if hv != strings.Trim(hv, " \t") {
				t.Fatalf("singleHeader(%q) = %q, not trimmed", v, hv)
			}
			for i := 0; i < len(hv); i++ {
				// RFC 9110 field values the transport accepts are visible
				// ASCII, space and tab; other bytes are invalid characters.
				if c := hv[i]; c < 0x20 && c != '\t' || c >= 0x7f {
					t.Fatalf("singleHeader(%q) accepted byte %#x", v, c)
				}
			}
			dv, derr := decodeHeaderValue(hv)
			if derr == nil && !utf8.ValidString(dv) {
				t.Fatalf("singleHeader then decodeHeaderValue(%q) = %q, not valid UTF-8", v, dv)
			}
		}

		if utf8.ValidString(v) {
			enc := mcptest.EncodeHeaderValue(v)
			h = http.Header{http.CanonicalHeaderKey(headerName): {enc}}
			hv, present, err = singleHeader(h, headerName)
			if err != nil || !present {
				t.Fatalf("singleHeader rejected the encoding %q of %q: %v", enc, v, err)
			}
			dec, err := decodeHeaderValue(hv)
			if err != nil || dec != v {
				t.Fatalf("round trip of %q via %q = %q, %v", v, enc, dec, err)
			}
		}
	})
}

// TestSingleHeaderRejectsRepeats: a repeated mirrored header is ambiguous
// and must be refused, whatever the values.
func TestSingleHeaderRejectsRepeats(t *testing.T) {
	h := http.Header{}
	h.Add(headerName, "echo")
	h.Add(headerName, "echo")
	if _, present, err := singleHeader(h, headerName); !present || err == nil {
		t.Fatalf("singleHeader accepted a repeated header (present %v, err %v)", present, err)
	}
}
