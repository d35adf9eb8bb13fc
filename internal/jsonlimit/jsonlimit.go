// Package jsonlimit measures JSON text cheaply, for limits checked on every
// request and result, and writes it in a canonical form (AppendCanonical)
// so that two spellings of one value compare equal.
package jsonlimit

// DepthWithin reports whether the nesting depth of the JSON text data
// (objects and arrays) is at most max. It is a single pass that tracks only
// strings and brackets; it does not validate the text.
func DepthWithin(data []byte, max int) bool {
	depth := 0
	inString, escaped := false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}
