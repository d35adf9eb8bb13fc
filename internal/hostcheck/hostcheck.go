// Package hostcheck holds the Host header rules the MCP server and the
// admin listener share against DNS rebinding: a page on an attacker's
// domain that resolves to this server's address still sends that domain
// as Host, so a server that answers only the names it is reached by
// cannot be read that way.
package hostcheck

import (
	"net"
	"strings"
)

// Name returns the host of a Host header value (host or host:port), lower
// case and without the brackets of an IPv6 literal.
func Name(hostport string) string {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return strings.ToLower(strings.Trim(host, "[]"))
}

// IsLoopbackName reports whether host (as Name returns it) is localhost,
// 127.0.0.1 or ::1.
func IsLoopbackName(host string) bool {
	switch host {
	case "localhost", "127.0.0.1", "::1":
		return true
	}
	return false
}

// Set returns the allowed hosts as a set, lower case; nil for nil.
func Set(hosts []string) map[string]bool {
	if hosts == nil {
		return nil
	}
	m := make(map[string]bool, len(hosts))
	for _, h := range hosts {
		m[strings.ToLower(h)] = true
	}
	return m
}
