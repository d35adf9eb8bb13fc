// Package postgres is a durable task store on PostgreSQL for fleets: a
// backend.Store (the task.Manager of the server, the backend.Enqueuer of
// task creation handlers, and through Jobs the backend.JobStore the worker
// runtime drives), in one schema that any number of nodes share. It
// behaves like store/sqlite, and both pass store/storetest.
//
// # Connections
//
// Open creates a pgxpool for statements and one dedicated connection for
// LISTEN; the URL must reach the server directly (or through session
// pooling), since LISTEN does not survive transaction pooling. Statements
// run under READ COMMITTED; correctness rests on row locks and conditional
// updates, never on SERIALIZABLE. Most operations are one statement (one
// round trip): Enqueue (an idempotency key adds a lookup), Claim,
// Heartbeat, Complete, Fail, Cancel, Retry, Release, RescueExpired,
// DeleteExpired, FindTask. UpdateTask, RequestCancel and RequestInput lock
// rows in a short transaction first.
//
// Every call is bounded by Options.Timeout (default 5 s): connection
// attempts by ConnectTimeout, statements on the server by statement_timeout,
// and the call on the client by a deadline on its context, which pgx
// enforces on the socket, so a database that stops answering fails calls
// after Timeout instead of holding them until the caller gives up.
//
// # Schema
//
// Every table lives in Options.Schema (default "taskwire"), so one database
// can hold several stores. The schema is versioned by embedded migrations
// (migrations/NNN_name.sql) recorded in its schema_version table; Open
// applies pending ones in one transaction under an advisory lock, so nodes
// starting at once migrate once, unless Options.NoMigrate is set, and
// refuses a schema whose version is newer than the code (ErrSchemaTooNew).
//
// The tables mirror store/sqlite. tasks has one row per task: what clients
// see (status, outstanding input requests, result, error), the
// authorization binding (endpoint, tenant, principal), the origin byte for
// byte, the accepted input responses (bytes as received), the input request
// keys used during the task's lifetime, cancellation intent and the optional
// idempotency key (unique per tenant, endpoint and tool). Payload columns are
// BYTEA rather than jsonb, which would reformat numbers and members. A
// trigger rejects any change to what a client sees once a task is terminal.
// jobs has one row per task: its queue state (available, running,
// awaiting_input, done), the attempt counter that fences every write of a
// claim, failures, max_attempts, interrupted_runs, input_rounds, run_at,
// the lease, and copies of the task's kind, creation time and expiry, so
// that a claim reads one table: it walks a partial index of available jobs
// in claim order and stops at its limit (the store analyzes a large jobs table that was never analyzed, since the
// planner needs statistics to choose that plan). outbox gets one row for
// every change a client can observe after its task's creation, in the same
// transaction (one row naming every task of a batch of completions). tasks leaves
// half of each page free so that most updates are HOT.
//
// # Job life cycle
//
// Enqueue creates a working task and an available job in its queue. Claim
// leases due available jobs of one queue with FOR UPDATE SKIP LOCKED,
// highest priority first, then oldest run_at (then creation time, then
// task ID), bumping attempt. Every fenced write
// (Heartbeat, RequestInput, Complete, Fail, Cancel, Retry, Release) applies
// only while the job is running under the same attempt and its lease has
// not expired; otherwise it returns backend.ErrLeaseLost and changes nothing.
// RequestInput parks the job until UpdateTask has accepted an answer for
// every outstanding request; a cancellation request makes a parked job
// available, so that a worker sees the intent. Retry counts a failure; the
// failure that reaches the job's MaxAttempts fails the task with a
// client-safe internal error instead of releasing the job again.
// RescueExpired counts an interrupted run instead (interrupted_runs), whose
// limit the rescuer passes. Only Retry changes run_at: a rescued, released
// or answered job keeps its place in the claim order.
//
// The store is a backend.LivenessRescuer too (Jobs().HoldInstance): a
// worker holds a session-level advisory lock for its life, on a connection
// of its own, and the running jobs of workers whose lock no session holds
// are rescued like expired leases within seconds (see HoldInstance for
// poolers that do not keep sessions). Both rescues set the task's status
// message to backend.InterruptedMessage.
//
// Times are whole milliseconds from Options.Now, or from the database
// server's clock when it is nil; Claim, RescueExpired and DeleteExpired use
// the time they are given. A task whose TTL has passed is not found, not
// claimable, and removed by DeleteExpired.
//
// # Listing and sessions
//
// The store implements task.Lister for the 2025-11-25 tasks/list: a
// caller's unexpired tasks, newest first, in one statement along an index
// that leads with the endpoint and tenant, with keyset cursors
// authenticated by a key kept in the schema's secrets table (shared by
// every node). Store.Sessions returns a session.Store over the schema's
// sessions table, which every node shares, for 2025-era sessions: digests
// of session IDs, never the IDs, with their owner, negotiated version,
// client capabilities and times; its per-owner limit holds across nodes
// under an advisory lock per owner (see sql.go). Both are described in
// migrations/005_sessions_and_listing.sql and docs/production.md.
//
// # Events
//
// The store's EventPublisher carries task-change hints across the fleet.
// After an observable change commits, the writing Store publishes the task
// ID to its own subscribers and queues a hint that a background sender
// delivers to other nodes with NOTIFY on the channel Schema+"_task_events",
// many hints per notification (a NOTIFY in each write transaction would
// serialise commits on PostgreSQL's notification lock). Each Store LISTENs
// on a dedicated connection and publishes the hints of other nodes; Publish
// by other code takes the same path. After the LISTEN connection drops, the
// Store reconnects with backoff and replays the outbox rows it missed (a
// bounded number), so a hint lost in an outage arrives late rather than
// never. Creations have no outbox row: their hint only wakes workers
// early, and a worker that missed it claims the job on its next poll. Hints may be duplicated or lost (beyond the bounds, or when a node
// dies between a commit and its NOTIFY); tasks/get stays the truth. Every
// worker runtime on the store prunes the outbox (worker.Options.OutboxRetention).
package postgres
