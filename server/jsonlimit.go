package server

// jsonDepthWithin reports whether the nesting depth of the JSON text data
// (objects and arrays) is at most max. It is a single pass that tracks only
// strings and brackets, so it is cheap enough for every request; it does not
// validate the text, which the decoder does afterwards.
func jsonDepthWithin(data []byte, max int) bool {
	depth := 0
	inString := false
	escaped := false
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
			depth++
			if depth > max {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}
