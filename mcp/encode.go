package mcp

import (
	"encoding/json"
	"unicode/utf8"
)

// AppendToolResult appends the JSON encoding of r to dst without
// reflection, for the common shape of a tool result: text content blocks
// without annotations or _meta, optional structured content, isError, and
// no _meta of its own. meta, when not nil, is added as the result's
// already-encoded _meta. It reports false, leaving dst unchanged, for any
// other shape (and for structured content that is not valid JSON), which
// encoding/json handles. Its output is byte-identical to what
// encoding/json produces for the same value.
func AppendToolResult(dst []byte, r *CallToolResult, meta []byte) ([]byte, bool) {
	if r.Meta != nil || (r.ResultType != "" && r.ResultType != ResultComplete) {
		return dst, false
	}
	for _, c := range r.Content {
		tc, ok := c.(*TextContent)
		if !ok || tc.Annotations != nil || tc.Meta != nil {
			return dst, false
		}
	}
	if len(r.StructuredContent) > 0 && !json.Valid(r.StructuredContent) {
		return dst, false // let encoding/json report it
	}
	dst = append(dst, `{"resultType":"complete","content":[`...)
	for i, c := range r.Content {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"type":"text","text":`...)
		dst = AppendString(dst, c.(*TextContent).Text)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	if len(r.StructuredContent) > 0 {
		dst = append(dst, `,"structuredContent":`...)
		dst = appendCompact(dst, r.StructuredContent)
	}
	if r.IsError {
		dst = append(dst, `,"isError":true`...)
	}
	if meta != nil {
		dst = append(dst, `,"_meta":`...)
		dst = append(dst, meta...)
	}
	return append(dst, '}'), true
}

// appendCompact appends JSON text as encoding/json re-encodes a
// json.RawMessage: insignificant white space removed, and <, >, &, U+2028
// and U+2029 inside strings escaped.
func appendCompact(dst, src []byte) []byte {
	const hex = "0123456789abcdef"
	inString, escaped := false, false
	for i := 0; i < len(src); i++ {
		c := src[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			case c == '<' || c == '>' || c == '&':
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
				continue
			case c == 0xE2 && i+2 < len(src) && src[i+1] == 0x80 && (src[i+2] == 0xA8 || src[i+2] == 0xA9):
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[src[i+2]&0xF])
				i += 2
				continue
			}
			dst = append(dst, c)
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
		}
		dst = append(dst, c)
	}
	return dst
}

// AppendString appends s as a JSON string with the escaping of
// encoding/json (HTML characters escaped, invalid UTF-8 replaced).
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
