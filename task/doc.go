// Package task holds the durable-task vocabulary shared by the server, task
// managers and workers: the immutable Task snapshot and its Status, the
// opaque Origin that binds a task to the request that created it, the Manager
// SPI the server calls for tasks/get, tasks/update and tasks/cancel, the
// request, update and creation contexts it passes, ErrNotFound, and the
// EventPublisher that carries task-change hints.
//
// # Ownership
//
// The server owns the protocol: capability negotiation, the tasks/* methods,
// authorization-preserving manager calls, and validation of what is
// delivered. A Manager owns storage: task IDs, persistence of the task, its
// Origin and its authorization binding, legal transitions, immutable terminal
// states, deduplication of input responses, and publishing events only after
// a change is committed. Every manager lives under store/: store/memory is
// a bounded development one, store/sqlite and store/postgres are durable.
package task
