// Package session defines how 2025-era MCP sessions are stored.
//
// Clients of protocol revisions 2025-06-18 and 2025-11-25 open a session
// with initialize and name it in the Mcp-Session-Id header of every later
// request. The server package mints the IDs, binds each session to the
// identity that opened it and enforces the limits; a Store only keeps the
// records, so that every node of a fleet (and a node after a restart) sees
// the same sessions. The 2026-07-28 revision has no sessions and never
// touches a Store.
//
// A Store never sees a session ID: the server hands it Key, a digest of the
// ID, so that reading a store (or its backups) does not yield IDs that a
// client could present. Implementations: session/memory for one process,
// store/sqlite and store/postgres for durable ones. session/sessiontest is
// the behavioural suite every implementation must pass.
package session

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned for a key with no live session: never created,
// deleted, or expired. Callers must not be able to tell these apart.
var ErrNotFound = errors.New("session: not found")

// ErrLimit is returned by Create when the owner already holds the maximum
// number of live sessions.
var ErrLimit = errors.New("session: too many live sessions for this owner")

// ErrFull is returned by Create when the store cannot hold another
// session at all: Limits.Total live sessions exist, or a bounded
// in-process store is at its capacity.
var ErrFull = errors.New("session: store is full")

// KeyLength is the length of a Key: the lower-case hex SHA-256 of a session ID.
const KeyLength = 64

// Record is one session as stored.
type Record struct {
	// Key identifies the session: the lower-case hex SHA-256 of its ID,
	// KeyLength characters.
	Key string
	// Endpoint, Tenant and Principal are the identity that opened the
	// session. The server compares them with every later request's
	// admitted identity; a Store only uses them to count sessions per
	// owner.
	Endpoint  string
	Tenant    string
	Principal string
	// ProtocolVersion is the revision negotiated by initialize.
	ProtocolVersion string
	// ClientCapabilities and ClientInfo are the JSON objects the client sent
	// in initialize, as the server re-encoded them (bounded by the server).
	ClientCapabilities []byte
	ClientInfo         []byte
	// LogLevel is the level set with logging/setLevel; empty until set.
	LogLevel string
	// CreatedAt is when initialize succeeded; LastUsedAt when a request last
	// named the session (updated by Touch, coarsely).
	CreatedAt  time.Time
	LastUsedAt time.Time
	// ExpiresAt is the absolute end of the session. IdleTimeout ends it
	// earlier when no request names it for that long (LastUsedAt +
	// IdleTimeout). A record is live at time now when now is before both.
	ExpiresAt   time.Time
	IdleTimeout time.Duration
}

// Live reports whether r is live at now.
func (r *Record) Live(now time.Time) bool {
	return now.Before(r.ExpiresAt) && now.Before(r.LastUsedAt.Add(r.IdleTimeout))
}

// Limits are the bounds Create enforces atomically with the insert.
type Limits struct {
	// PerOwner bounds the live records of one owner (Endpoint, Tenant and
	// Principal); beyond it Create returns ErrLimit. Zero or less: none.
	PerOwner int
	// Total bounds the live records of the whole store, every owner and
	// every node together; beyond it Create returns ErrFull. Zero or less:
	// none (the store's own capacity, if any, still applies).
	Total int
}

// Store keeps session records. Implementations must be safe for concurrent
// use, must honour ctx's deadline in every call, and must give one answer
// fleet-wide: a session created or deleted through one Store value is seen
// as such by every other value over the same storage once the call returns.
// Times are passed in by the caller (the server's clock) and stored as
// given, at millisecond precision or finer.
type Store interface {
	// Create stores r. It returns ErrLimit, storing nothing, when
	// limits.PerOwner > 0 and live records with r's Endpoint, Tenant and
	// Principal already number limits.PerOwner or more at now, and
	// ErrFull when limits.Total > 0 and live records number limits.Total
	// or more at now, or the store has no room for another record. Both
	// counts hold under concurrent creates through any number of Store
	// values over the same storage. Creating a Key that exists is an
	// error (keys are random; a collision is a bug).
	Create(ctx context.Context, r Record, limits Limits, now time.Time) error
	// Load returns the record for key if it is live at now, else
	// ErrNotFound. It does not change the record.
	Load(ctx context.Context, key string, now time.Time) (Record, error)
	// Touch sets LastUsedAt to now if the record is live at now (else
	// ErrNotFound). The server calls it coarsely, not on every request.
	Touch(ctx context.Context, key string, now time.Time) error
	// SetLogLevel sets LogLevel if the record is live at now (else
	// ErrNotFound).
	SetLogLevel(ctx context.Context, key, level string, now time.Time) error
	// Delete ends the session. It returns ErrNotFound when no live record
	// has key at now; the record is gone either way.
	Delete(ctx context.Context, key string, now time.Time) error
	// Sweep removes up to limit records that are not live at now and
	// returns how many it removed. Expired records are invisible whether
	// swept or not; sweeping only reclaims space.
	Sweep(ctx context.Context, now time.Time, limit int) (int, error)
}
