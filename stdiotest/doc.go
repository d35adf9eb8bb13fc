// Package stdiotest holds end-to-end tests and benchmarks of taskwire's
// stdio transport driven by clients no one here wrote: the official go-sdk
// (v1.8.0) CommandTransport client, speaking 2026-07-28 and, with
// ClientSessionOptions.ProtocolVersion, 2025-11-25. The tests build
// `taskwire` and run `taskwire serve --stdio` as a subprocess, as an MCP
// host does. It is a module of its own so that the main module does not
// depend on the go-sdk; run it with `cd stdiotest && go test ./...`.
package stdiotest
