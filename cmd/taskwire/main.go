// Command taskwire runs taskwire MCP servers with durable tasks.
//
// Usage:
//
//	taskwire serve   [--addr 127.0.0.1:8080] [--store SPEC] [--schema NAME] [--store-timeout 5s]
//	                 [--connect-timeout 10s] [--workers 4] [--queues NAME=N,...] [--lease 30s]
//	                 [--no-fast-recovery] [--no-migrate] [--reports-dir DIR] [--log-level info]
//	                 [--shutdown-grace 10s] [--max-conns N] [--max-conns-per-addr N] [--body-timeout 10s]
//	                 [--idle-timeout 30s] [--insecure-dev-auth]
//	                 [--allowed-hosts HOSTS] [--task-rate 20] [--task-burst 100] [--max-active-tasks 1000]
//	                 [--session-idle 30m] [--session-lifetime 24h] [--sessions-per-caller 100]
//	                 [--sessions-max 100000] [--auth-issuer URL --auth-audience URI]
//	                 [--auth-jwks-url URL] [--auth-tenant-claim NAME] [--auth-scopes NAME=SCOPE,...]
//	                 [--auth-dpop allowed] [--auth-dpop-nonce]
//	                 [--admin-addr ADDR] [--admin-allowed-hosts HOSTS] [--admin-token-file FILE]
//	                 [--console-show-arguments] [--console-scope taskwire:operator] [--skills DIR]
//	                 [--schedules FILE]
//	taskwire serve --stdio [--principal local] [--drain-timeout 10s] [--store SPEC] [--workers 4] [...]
//	taskwire gateway --upstream URL [--upstream-header 'Name: value']... | --upstream-cmd 'CMD ARGS...'
//	                 [--task-tools GLOBS] [--retry-tools GLOBS] [--call-timeout 30s]
//	                 [--task-call-timeout 1h] [--upstream-max-inflight 64]
//	                 [every flag of serve, --stdio included]
//	taskwire gateway worker [the upstream flags of gateway] [every flag of worker]
//	taskwire worker  [--store SPEC] [--schema NAME] [--store-timeout 5s] [--connect-timeout 10s]
//	                 [--workers 4] [--queues NAME=N,...] [--lease 30s] [--no-fast-recovery] [--no-migrate]
//	                 [--reports-dir DIR] [--log-level info] [--shutdown-grace 10s] [--admin-addr ADDR]
//	                 [--admin-allowed-hosts HOSTS]
//	taskwire migrate [--store SPEC] [--schema NAME] [--store-timeout 5s] [--connect-timeout 10s]
//	                 [--log-level info]
//	taskwire version
//	taskwire help    [COMMAND]
//	taskwire tools   [--url URL] [--token TOKEN] [--token-dir DIR] [--header K:V]... [--protocol REV]
//	                 [--timeout D] [--json]
//	taskwire call    [tools' flags] [--detach] TOOL [key=value | key:=JSON]...
//	taskwire task    get|wait|cancel [tools' flags] ID
//	taskwire task    answer [tools' flags] ID KEY=JSON...
//	taskwire skills  list|get [tools' flags] [--file PATH] [URI]
//	taskwire login   URL [--client-id ID] [--client-metadata-url URL] [--client-secret-file FILE]
//	                 [--scopes SCOPES] [--no-browser] [--timeout 5m] [--token-dir DIR]
//	                 [--client-credentials] [--client-key-file PEM] [--client-key-id KID]
//	                 [--assertion-file FILE | --assertion-command 'CMD ARGS...']
//	                 [--idp-token-url URL --idp-client-id ID --id-token-file FILE]
//	taskwire logout  URL [--token-dir DIR]
//
// Every command prints its flags with -h (or taskwire help COMMAND). A
// mistake on the command line (an unknown command or flag, a flag value
// or argument that does not parse or is refused) prints one line saying
// what is wrong and where the usage is, and exits 2; other failures of
// serve, worker, migrate, login and logout exit 1.
//
// tools, call and task are a client for any MCP server over HTTP (see
// docs/client.md): the URL defaults to $TASKWIRE_URL, then
// http://127.0.0.1:8080/mcp; --token (default $TASKWIRE_TOKEN) is sent as a
// Bearer token. call types key=value by the tool's input schema, waits for
// a task with a progress line on stderr, asks its forms when stdin is a
// terminal, and detaches on Ctrl-C. They exit 0 on success, 1 on a tool
// error, 2 on a usage error, 3 when authentication is required or refused,
// 4 when the server is unreachable or has no MCP endpoint at the URL (HTTP
// 404: a wrong path), 5 when the task failed, 6 when it was
// cancelled, 7 when it needs input and the command is not interactive, 124
// when --timeout passed and 130 when interrupted.
//
// SPEC is sqlite:PATH (or a path ending in .db), a postgres:// URL or
// memory: (in the process only, lost when it exits). It defaults to
// $TASKWIRE_STORE, then to sqlite:taskwire.db in the working directory, so
// that tasks survive a restart without any set-up. --schema
// names the PostgreSQL schema holding the tables (default taskwire), so that
// several deployments can share one database. --store-timeout (default 5s)
// bounds every store call, so that a database that stops answering fails
// task operations after that long instead of holding them;
// --connect-timeout (default 10s) bounds connecting to PostgreSQL. Every
// command checks the store before it says it is ready (see store.Open: a
// SQLite file must take a write, a PostgreSQL server must answer) and prints
// what it resolved to: the file, or host, port, database and schema, never
// a password. A postgres:// URL must name its database.
//
// serve starts the demo endpoint at http://ADDR/mcp: inline tools, and the
// durable task tools reports.generate and approvals.request, whose jobs run
// on --workers in-process workers (0 for an API-only node). worker runs only
// the workers, for a fleet sharing one PostgreSQL store. On both (and on
// gateway and gateway worker), --queues mail=4,reports=1 makes the workers
// serve only those queues of the durable tools, each with its own bound on
// jobs run at once (without --workers, the node runs their sum). --lease
// is how long a worker's claim on a job lasts without a heartbeat: a job
// of a crashed process runs again within seconds, as another worker sees
// the process's database session (PostgreSQL) or lock file (SQLite) gone,
// else after about one lease. --no-fast-recovery turns that rescue off,
// leaving such jobs to their leases: for PostgreSQL behind a pooler in
// transaction mode (PgBouncer), where a session lock cannot be held. Both apply pending
// schema migrations unless --no-migrate is given; migrate only migrates.
// serve and worker shut down gracefully on SIGINT or SIGTERM: running jobs
// are given --shutdown-grace to finish, then released to run again later.
//
// gateway is serve for the tools of another MCP server, the upstream at
// --upstream (Streamable HTTP, any protocol revision) or started by
// --upstream-cmd (stdio; split into words as a shell would, run without a
// shell, restarted with a backoff when it dies): it lists them when it
// starts, and again when the upstream announces a change or restarts,
// serves those matching --task-tools as durable task tools whose
// workers call the upstream (its progress becomes the task's status), and
// passes the others through inline within --call-timeout, as it does the
// upstream's resources, prompts and completion. --retry-tools
// names the task tools safe to call again after a failed or interrupted
// run; for the others such a task fails saying the call was not repeated.
// The callers' tokens are never forwarded; --upstream-header sets the
// gateway's own (see docs/gateway.md and package gateway). gateway worker
// runs only the workers of the task tools, with the same upstream flags,
// for a fleet whose API nodes (gateway --workers 0) and workers share a
// PostgreSQL store.
//
// serve --stdio serves the same endpoint to one client over standard input
// and output instead of HTTP, as MCP hosts start local servers (see
// docs/stdio.md): nothing but protocol messages is written to stdout, logs
// go to stderr, and every request acts for --principal. Its store defaults
// to taskwire/taskwire.db in the user's data directory ($XDG_DATA_HOME,
// else ~/.local/share; ~/Library/Application Support on macOS;
// %LocalAppData% on Windows). At the end of stdin or the first SIGINT or
// SIGTERM it releases the running jobs at once (the next process on the
// store runs them), lets requests still running drain and exits.
//
// serve bounds what a slow or hostile network can hold: at most --max-conns
// connections are open at once (the default is the descriptor limit less
// 128, between 64 and 10000; at the cap the keep-alive connection idle
// longest, once idle for a second, is closed to admit a new client, and
// with none idle that long new clients wait in the kernel's accept queue), at most --max-conns-per-addr of them
// from one client address (default an eighth of --max-conns, at least 16;
// -1 turns it off, as behind a reverse proxy, where every connection comes
// from the proxy), a request's headers must arrive within 10 s and
// its body within --body-timeout, and a keep-alive connection is closed
// after --idle-timeout without a request. With --auth-issuer and
// --auth-audience, serve is an OAuth 2.1 resource server: every request
// needs a valid access token from that issuer for that resource (see
// docs/authorization.md); --auth-dpop says whether DPoP-bound tokens
// (RFC 9449) are allowed next to bearer tokens (the default), required, or
// off, and --auth-dpop-nonce makes their proofs carry a nonce the server
// issues. Without the auth flags it admits callers with
// development identities (a Bearer token is taken as the caller's name),
// says so, and refuses an --addr that is not loopback unless
// --insecure-dev-auth is given. Requests must carry a loopback name in
// Host, or the host of --auth-audience, or a name of --allowed-hosts (the
// name a proxy forwards). Each caller may start --task-rate task-creating calls a second
// (bursts of --task-burst) and have --max-active-tasks tasks working or
// waiting for input; beyond either, calls get HTTP 429 with Retry-After.
//
// The endpoint serves clients of protocol revision 2026-07-28 statelessly
// and clients of 2025-06-18 and 2025-11-25 in sessions opened by
// initialize. Sessions are kept in the store, so they survive a restart and
// work on every node of a fleet (on PostgreSQL, a client's answer to an
// elicitation that reaches another node is forwarded to the node holding
// the call). A session ends after --session-idle without a request (a
// minute after initialize when no request follows it), or
// --session-lifetime after it opened; each caller may hold
// --sessions-per-caller sessions at once, and the store (every caller and
// node together, anonymous callers included) --sessions-max. With the
// development identities, each client address (an IPv4 address or an IPv6
// /64) is also one caller, whatever Bearer names or none it sends: it may
// hold --sessions-per-caller sessions and 32 listen streams.
package main

import (
	"context"
	"os"
)

// version is the taskwire release, set at build time with -ldflags.
var version = "0.1.0-dev"

func main() {
	os.Exit(runMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}
