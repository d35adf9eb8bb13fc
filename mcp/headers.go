package mcp

import "strings"

// IsHeaderToken reports whether s is a non-empty RFC 9110 token, the form
// an x-mcp-header name must take (it becomes the suffix of an
// Mcp-Param-<name> header).
func IsHeaderToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
