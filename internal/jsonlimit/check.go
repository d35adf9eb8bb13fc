package jsonlimit

// Valid reports whether data is exactly one JSON value (RFC 8259, with
// optional surrounding white space) whose nesting of objects and arrays is
// at most maxDepth. It accepts the same texts as encoding/json.Valid when
// maxDepth is large enough, in a single pass without allocating, so the
// request path can check syntax and depth together.
func Valid(data []byte, maxDepth int) bool {
	// stack holds, for each open container, '{' or '['; its length is
	// the depth. A fixed array covers the usual limits without allocating.
	var stackBuf [256]byte
	stack := stackBuf[:0]
	i := skipWS(data, 0)
	for {
		// Expect a value at data[i].
		if i >= len(data) {
			return false
		}
		switch c := data[i]; {
		case c == '{' || c == '[':
			if len(stack) >= maxDepth {
				return false
			}
			stack = append(stack, c)
			i = skipWS(data, i+1)
			if i < len(data) && ((c == '{' && data[i] == '}') || (c == '[' && data[i] == ']')) {
				stack = stack[:len(stack)-1]
				i++
				goto afterValue
			}
			if c == '{' {
				if i = objectKey(data, i); i < 0 {
					return false
				}
			}
			continue
		case c == '"':
			if i = stringEnd(data, i); i < 0 {
				return false
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if i = numberEnd(data, i); i < 0 {
				return false
			}
		case c == 't':
			if i = literalEnd(data, i, "true"); i < 0 {
				return false
			}
		case c == 'f':
			if i = literalEnd(data, i, "false"); i < 0 {
				return false
			}
		case c == 'n':
			if i = literalEnd(data, i, "null"); i < 0 {
				return false
			}
		default:
			return false
		}
	afterValue:
		for {
			i = skipWS(data, i)
			if len(stack) == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			top := stack[len(stack)-1]
			switch data[i] {
			case ',':
				i = skipWS(data, i+1)
				if top == '{' {
					if i = objectKey(data, i); i < 0 {
						return false
					}
				}
			case '}':
				if top != '{' {
					return false
				}
				stack = stack[:len(stack)-1]
				i++
				continue afterValue
			case ']':
				if top != '[' {
					return false
				}
				stack = stack[:len(stack)-1]
				i++
				continue afterValue
			default:
				return false
			}
			break
		}
	}
}

func skipWS(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// objectKey checks `"key" :` at data[i] and returns the index of the value.
func objectKey(data []byte, i int) int {
	if i >= len(data) || data[i] != '"' {
		return -1
	}
	if i = stringEnd(data, i); i < 0 {
		return -1
	}
	i = skipWS(data, i)
	if i >= len(data) || data[i] != ':' {
		return -1
	}
	return skipWS(data, i+1)
}

// stringEnd returns the index after the string starting at data[i].
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch c := data[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(data) {
				return -1
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(data) {
					return -1
				}
				for _, h := range data[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// numberEnd returns the index after the number starting at data[i].
func numberEnd(data []byte, i int) int {
	if data[i] == '-' {
		i++
	}
	switch {
	case i < len(data) && data[i] == '0':
		i++
	case i < len(data) && data[i] >= '1' && data[i] <= '9':
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(data) && data[i] == '.' {
		i++
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		start := i
		for i < len(data) && data[i] >= '0' && data[i] <= '9' {
			i++
		}
		if i == start {
			return -1
		}
	}
	return i
}

func literalEnd(data []byte, i int, lit string) int {
	if len(data)-i < len(lit) || string(data[i:i+len(lit)]) != lit {
		return -1
	}
	return i + len(lit)
}
