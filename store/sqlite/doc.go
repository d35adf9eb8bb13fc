// Package sqlite is a durable task store on SQLite: a backend.Store (the
// task.Manager of the server, the backend.Enqueuer of task creation
// handlers, and through Jobs the backend.JobStore the worker runtime
// drives), over one database file.
//
// # Connections
//
// The store opens the file in WAL mode with one writer connection, through
// which every write runs in a BEGIN IMMEDIATE transaction, and a separate
// pool of read-only connections that serves FindTask, CancelRequested,
// the gauges and the operator reads. SQLite allows one writer at a time anyway; a single writer
// connection turns lock contention inside the process into a wait for the
// connection, which honours the caller's context and Options.Timeout
// (default 5 s, for every write and lookup), and keeps SQLITE_BUSY for
// contention with other processes, bounded by Options.BusyTimeout. Writes
// that wait for the connection while a transaction runs are committed
// together in the next one (group commit, see Store), so that concurrent
// callers share the cost of a commit instead of paying it one by one. A new
// database file is created 0600, and its WAL and shared-memory files take
// its mode.
// synchronous=NORMAL is the default: a committed transaction survives a
// process crash but may be lost on power failure or an OS crash; choose
// Options.Synchronous "FULL" for durability across those at a cost in commit
// latency.
//
// # Schema
//
// The schema is versioned by embedded migrations (migrations/NNN_name.sql)
// recorded in a schema_version table. Open applies pending migrations
// unless Options.NoMigrate is set, and refuses a database whose version is
// newer than the code knows (ErrSchemaTooNew).
//
// Three tables hold the state. tasks has one row per task: what clients see
// (status, outstanding input requests, result, error), the authorization
// binding (endpoint, tenant, principal), the origin byte for byte, the
// accepted input responses and the input request keys used during the
// task's lifetime, cancellation intent and the optional idempotency key
// (unique per tenant, endpoint and tool). A trigger rejects any change to
// what a client sees once a task is terminal. jobs has one row per task: its
// queue state (available, running, awaiting_input, done), the attempt
// counter that fences every write of a claim, failures, max_attempts,
// interrupted_runs, input_rounds, run_at and the lease. outbox gets one row,
// in the same transaction, for every change a client can observe; after
// commit the task ID is published on the store's in-process
// task.Broadcaster. Each outbox row names the Store that
// wrote it, and every Store polls the outbox (Options.EventPoll) to publish
// the changes other processes commit to the same file.
//
// # Job life cycle
//
// Enqueue creates a working task and an available job in its queue. Claim
// leases due available jobs of one queue, highest priority first, then
// oldest run_at (then creation time, then task ID), bumping attempt,
// walking an index of available jobs in that order (the
// job row repeats its task's kind, creation time and expiry for it). A job
// awaiting input becomes available once cancellation has been requested, so
// that a worker sees the intent and can cancel. Every
// fenced write (Heartbeat, RequestInput, Complete, Fail, Cancel, Retry,
// Release) applies only while the job is running under the same attempt and
// its lease has not expired; otherwise it returns backend.ErrLeaseLost and
// changes nothing. RequestInput parks the job until UpdateTask has accepted
// an answer for every outstanding request. Retry counts a failure; the
// failure that reaches the job's MaxAttempts fails the task with a
// client-safe internal error instead of releasing the job again.
// RescueExpired counts an interrupted run instead (interrupted_runs), whose
// limit the rescuer passes. Only Retry changes run_at: a rescued, released
// or answered job keeps its place in the claim order.
//
// The store is a backend.LivenessRescuer too (Jobs().HoldInstance): a
// worker holds an flock on a lock file next to the database for its life,
// and a worker of the same host rescues the running jobs of workers whose
// lock it can take like expired leases, at once. Both rescues set the
// task's status message to backend.InterruptedMessage.
//
// Times are Unix milliseconds from Options.Now. A task whose TTL has passed
// is not found, not claimable, and removed by DeleteExpired.
//
// # Listing and sessions
//
// The store implements task.Lister for the 2025-11-25 tasks/list: a
// caller's unexpired tasks, newest first, read along an index that leads
// with the endpoint and tenant, with keyset cursors authenticated by a key
// kept in the database's secrets table. Store.Sessions returns a
// session.Store over the sessions table of the same file, for 2025-era
// sessions: digests of session IDs, never the IDs, with their owner,
// negotiated version, client capabilities and times. Both are described in
// migrations/004_sessions_and_listing.sql and docs/production.md.
package sqlite
