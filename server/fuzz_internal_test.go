package server

import (
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
)

// FuzzHeaderValue checks the mirrored-header reading path (singleHeader, then
// mcp.DecodeHeaderValue, whose own rules the mcp package tests) on arbitrary
// values:
//   - a value singleHeader accepts is trimmed, free of control characters,
//     and decodes to valid UTF-8 or fails;
//   - every valid UTF-8 string survives mcp.EncodeHeaderValue, the header
//     and decoding unchanged.
func FuzzHeaderValue(f *testing.F) {
	// The codec's own corpus is mcp's; these are about reading the header.
	for _, s := range []string{
		"", "echo", "  eu ", "\teu\t", "a b", "x\x00y", "x\ny", "x\x7fy", "über", "\xff",
		"=?base64?ZWNobw==?=", " =?base64?ZWNobw==?= ", "=?base64?/w==?=", "=?base64?ZW\nNobw==?=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		h := http.Header{http.CanonicalHeaderKey(mcp.HeaderName): {v}}
		hv, present, err := singleHeader(h, mcp.HeaderName)
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
			dv, derr := mcp.DecodeHeaderValue(hv)
			if derr == nil && !utf8.ValidString(dv) {
				t.Fatalf("singleHeader then DecodeHeaderValue(%q) = %q, not valid UTF-8", v, dv)
			}
		}

		if utf8.ValidString(v) {
			enc := mcp.EncodeHeaderValue(v)
			h = http.Header{http.CanonicalHeaderKey(mcp.HeaderName): {enc}}
			hv, present, err = singleHeader(h, mcp.HeaderName)
			if err != nil || !present {
				t.Fatalf("singleHeader rejected the encoding %q of %q: %v", enc, v, err)
			}
			dec, err := mcp.DecodeHeaderValue(hv)
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
	h.Add(mcp.HeaderName, "echo")
	h.Add(mcp.HeaderName, "echo")
	if _, present, err := singleHeader(h, mcp.HeaderName); !present || err == nil {
		t.Fatalf("singleHeader accepted a repeated header (present %v, err %v)", present, err)
	}
}
