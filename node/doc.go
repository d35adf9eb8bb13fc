// Package node runs a taskwire node: an MCP endpoint with durable tools
// over HTTP (or standard input and output), a worker runtime, or both,
// over one durable store, with everything a production process needs:
// connection limits and timeouts, development identities on loopback or
// OAuth 2.1 access tokens ([Config.Auth]), an admin listener with
// Prometheus metrics, health checks and the operator console
// ([Config.AdminAddr]), OpenTelemetry tracing configured by the OTEL_*
// environment variables, and an ordered, signal-driven shutdown.
//
// One Config goes in; the store is handed over once, open ([Config.Store])
// or named ([Config.StoreSpec]), and the node passes it everywhere it is
// needed: the server's task manager and session store, the durable tools'
// enqueuer, the runtime's job store and, on PostgreSQL, the answer relay
// of a fleet ([backend.AnswerRelayer]). New validates the whole
// configuration and reports every problem in one error; Run starts the
// node in order (ports, store, endpoint, workers, admin listener) and
// stops it in order: listen streams, HTTP, the runtime's drain, the admin
// listener, the relay, the store, the tracer.
//
// The roles a node takes follow from the configuration:
//
//   - API and workers (taskwire serve): Addr and Workers > 0.
//   - API only, for a fleet whose jobs run elsewhere: Addr, Workers 0.
//   - Workers only (taskwire worker): no Addr, Workers > 0.
//   - Stdio, one local client as MCP hosts start servers: Stdio set.
//   - Migrate only, a deploy step: Migrate.
//
// Package nodecmd wraps a node in the command line of taskwire serve,
// worker and migrate, for a program that passes its own tools.
package node
