// Package interop holds the interoperability tests of taskwire with MCP
// clients that no one on the project wrote: the official go-sdk and mcp-go,
// pinned to 2025-era protocol revisions. It is a module of its own so that
// those clients never reach the library's go.mod; it has no API.
//
// The tests build ./cmd/taskwire from the repository, run `taskwire serve`
// on its defaults (SQLite in a temporary working directory, a free loopback
// port) as a real process, and drive it with each client through the
// client's public API only. It also runs taskwire's client package and
// CLI against go-sdk and mcp-go servers on loopback, and its OAuth client
// against zitadel/oidc's OpenID Provider. See README.md.
package interop
