package jsonlimit

import (
	"bytes"
	"errors"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

var (
	errCanonSyntax = errors.New("jsonlimit: not exactly one JSON value")
	errCanonDepth  = errors.New("jsonlimit: JSON nests too deeply")
)

// AppendCanonical appends to dst the canonical form of the JSON text src and
// returns the extended buffer. Two texts of the same JSON value have the
// same canonical form, whatever their white space, member order or string
// escapes:
//
//   - there is no white space;
//   - object members are sorted by name (by the bytes of the name's
//     canonical form); members of the same name keep their order, so that
//     parsers that keep the first or the last of them still see one value;
//   - strings are decoded and written again with the short escapes \" \\ \b
//     \f \n \r \t, \u00xx for the other control characters, every other
//     character as UTF-8, and an escaped lone surrogate as a lower-case
//     \uxxxx escape (it has no UTF-8 form); raw bytes are kept as they are;
//   - numbers keep their spelling: 1, 1.0 and 1e0 stay distinct, because
//     encoding/json refuses 1.0 for a Go integer and a float64 merges large
//     integers that a tool may tell apart;
//   - true, false and null are kept.
//
// The canonical form is never longer than src. AppendCanonical fails, and
// returns dst unchanged, when src is not exactly one JSON value or nests
// objects and arrays deeper than maxDepth. Besides growing dst it
// allocates a list of the open objects' members and, once an object's
// members are out of order, a scratch copy to rewrite them; the cost of a
// text whose objects are out of order grows with its size times its depth.
func AppendCanonical(dst, src []byte, maxDepth int) ([]byte, error) {
	c := canonicalizer{maxDepth: maxDepth}
	return c.append(dst, src)
}

// EqualCanonical reports whether the JSON texts a and b are the same value:
// byte-identical, or with the same canonical form (see AppendCanonical)
// within maxDepth. Texts that are not valid JSON are equal only when
// byte-identical.
func EqualCanonical(a, b []byte, maxDepth int) bool {
	if bytes.Equal(a, b) {
		return true
	}
	c := canonicalizer{maxDepth: maxDepth}
	buf, err := c.append(make([]byte, 0, len(a)+len(b)), a)
	if err != nil {
		return false
	}
	n := len(buf)
	buf, err = c.append(buf, b)
	return err == nil && bytes.Equal(buf[:n], buf[n:])
}

// canonicalizer writes the canonical form of src to out in one pass. Its
// buffers are reused from one text to the next.
type canonicalizer struct {
	src, out []byte
	maxDepth int
	// members holds the members of the open objects, innermost last.
	members []member
	// scratch holds an object's members while they are written in order.
	scratch []byte
}

// append appends the canonical form of src to dst (see AppendCanonical).
func (c *canonicalizer) append(dst, src []byte) ([]byte, error) {
	c.src, c.out = src, dst
	if c.members == nil {
		c.members = make([]member, 0, 16)
	}
	i, err := c.value(0, 0)
	if err == nil && skipWS(src, i) != len(src) {
		err = errCanonSyntax
	}
	out := c.out
	c.src, c.out = nil, nil
	if err != nil {
		return dst, err
	}
	return out, nil
}

// member locates one object member in out: its name's opening quote at
// start, the byte after the name's closing quote at nameEnd, and the byte
// after its value at end.
type member struct{ start, nameEnd, end int }

// value writes the value at src[i] (after white space) and returns the
// index after it.
func (c *canonicalizer) value(i, depth int) (int, error) {
	i = skipWS(c.src, i)
	if i >= len(c.src) {
		return -1, errCanonSyntax
	}
	end := -1
	switch b := c.src[i]; {
	case b == '{' || b == '[':
		if depth >= c.maxDepth {
			return -1, errCanonDepth
		}
		if b == '{' {
			return c.object(i, depth+1)
		}
		return c.array(i, depth+1)
	case b == '"':
		if end = stringEnd(c.src, i); end >= 0 {
			c.appendString(c.src[i+1 : end-1])
			return end, nil
		}
	case b == '-' || (b >= '0' && b <= '9'):
		end = numberEnd(c.src, i)
	case b == 't':
		end = literalEnd(c.src, i, "true")
	case b == 'f':
		end = literalEnd(c.src, i, "false")
	case b == 'n':
		end = literalEnd(c.src, i, "null")
	}
	if end < 0 {
		return -1, errCanonSyntax
	}
	c.out = append(c.out, c.src[i:end]...)
	return end, nil
}

func (c *canonicalizer) array(i, depth int) (int, error) {
	c.out = append(c.out, '[')
	i = skipWS(c.src, i+1)
	if i < len(c.src) && c.src[i] == ']' {
		c.out = append(c.out, ']')
		return i + 1, nil
	}
	for {
		var err error
		if i, err = c.value(i, depth); err != nil {
			return -1, err
		}
		i = skipWS(c.src, i)
		switch {
		case i < len(c.src) && c.src[i] == ',':
			c.out = append(c.out, ',')
			i++
		case i < len(c.src) && c.src[i] == ']':
			c.out = append(c.out, ']')
			return i + 1, nil
		default:
			return -1, errCanonSyntax
		}
	}
}

func (c *canonicalizer) object(i, depth int) (int, error) {
	c.out = append(c.out, '{')
	body := len(c.out)
	base := len(c.members)
	defer func() { c.members = c.members[:base] }()
	i = skipWS(c.src, i+1)
	if i < len(c.src) && c.src[i] == '}' {
		c.out = append(c.out, '}')
		return i + 1, nil
	}
	for {
		if i >= len(c.src) || c.src[i] != '"' {
			return -1, errCanonSyntax
		}
		end := stringEnd(c.src, i)
		if end < 0 {
			return -1, errCanonSyntax
		}
		if len(c.members) > base {
			c.out = append(c.out, ',')
		}
		m := member{start: len(c.out)}
		c.appendString(c.src[i+1 : end-1])
		m.nameEnd = len(c.out)
		if i = skipWS(c.src, end); i >= len(c.src) || c.src[i] != ':' {
			return -1, errCanonSyntax
		}
		c.out = append(c.out, ':')
		var err error
		if i, err = c.value(i+1, depth); err != nil {
			return -1, err
		}
		m.end = len(c.out)
		c.members = append(c.members, m)
		i = skipWS(c.src, i)
		switch {
		case i < len(c.src) && c.src[i] == ',':
			i = skipWS(c.src, i+1)
		case i < len(c.src) && c.src[i] == '}':
			c.order(body, c.members[base:])
			c.out = append(c.out, '}')
			return i + 1, nil
		default:
			return -1, errCanonSyntax
		}
	}
}

// order rewrites the members of the object whose body starts at out[body]
// sorted by name, unless they already are.
func (c *canonicalizer) order(body int, ms []member) {
	name := func(m member) []byte { return c.out[m.start:m.nameEnd] }
	byName := func(a, b member) int { return bytes.Compare(name(a), name(b)) }
	if slices.IsSortedFunc(ms, byName) {
		return
	}
	slices.SortStableFunc(ms, byName)
	c.scratch = append(c.scratch[:0], c.out[body:]...)
	w := body
	for k, m := range ms {
		if k > 0 {
			c.out[w] = ','
			w++
		}
		w += copy(c.out[w:], c.scratch[m.start-body:m.end-body])
	}
}

// appendString writes the string whose text between the quotes is s, which
// stringEnd accepted.
func (c *canonicalizer) appendString(s []byte) {
	c.out = append(c.out, '"')
	for len(s) > 0 {
		k := bytes.IndexByte(s, '\\')
		if k < 0 {
			c.out = append(c.out, s...)
			break
		}
		c.out = append(c.out, s[:k]...)
		s = s[k:]
		if s[1] != 'u' {
			switch e := s[1]; e {
			case '/':
				c.out = append(c.out, '/')
			default: // " \ b f n r t
				c.out = append(c.out, '\\', e)
			}
			s = s[2:]
			continue
		}
		r := hex4(s[2:6])
		s = s[6:]
		if utf16.IsSurrogate(r) {
			if r < 0xdc00 && len(s) >= 6 && s[0] == '\\' && s[1] == 'u' {
				if r2 := hex4(s[2:6]); r2 >= 0xdc00 && r2 <= 0xdfff {
					c.out = utf8.AppendRune(c.out, utf16.DecodeRune(r, r2))
					s = s[6:]
					continue
				}
			}
			c.out = appendEscape(c.out, r)
			continue
		}
		c.out = appendRune(c.out, r)
	}
	c.out = append(c.out, '"')
}

// appendRune writes a decoded \u escape in its canonical spelling.
func appendRune(out []byte, r rune) []byte {
	switch r {
	case '"', '\\':
		return append(out, '\\', byte(r))
	case '\b':
		return append(out, '\\', 'b')
	case '\f':
		return append(out, '\\', 'f')
	case '\n':
		return append(out, '\\', 'n')
	case '\r':
		return append(out, '\\', 'r')
	case '\t':
		return append(out, '\\', 't')
	}
	if r < 0x20 {
		return appendEscape(out, r)
	}
	return utf8.AppendRune(out, r)
}

func appendEscape(out []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(out, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}

// hex4 decodes four hex digits that stringEnd accepted.
func hex4(h []byte) rune {
	var r rune
	for _, b := range h {
		switch {
		case b >= '0' && b <= '9':
			b -= '0'
		case b >= 'a' && b <= 'f':
			b -= 'a' - 10
		default:
			b -= 'A' - 10
		}
		r = r<<4 | rune(b)
	}
	return r
}
