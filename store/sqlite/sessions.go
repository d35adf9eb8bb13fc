package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/store/internal/sessiondata"
)

// The session statements. Times are Unix milliseconds; a session is live
// while now < ends_at (see migrations/004_sessions_and_listing.sql).
const (
	sessionColumns = `key, endpoint, tenant, principal, protocol_version, client_capabilities, client_info,
		log_level, created_at, last_used_at, expires_at, idle_timeout_ms`

	// Counts at most $5 live sessions of one owner ($1 endpoint, $2
	// tenant, $3 principal) at $4, reading sessions_owner only.
	sqlCountOwnerSessions = `SELECT count(*) FROM (SELECT 1 FROM sessions
		WHERE endpoint = ? AND tenant = ? AND principal = ? AND ends_at > ? LIMIT ?)`

	// Counts at most $2 live sessions of the whole store at $1, reading
	// sessions_ends only.
	sqlCountLiveSessions = `SELECT count(*) FROM (SELECT 1 FROM sessions WHERE ends_at > ? LIMIT ?)`

	sqlInsertSession = `INSERT INTO sessions (` + sessionColumns + `, ends_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

	// $1 key, $2 now.
	sqlLoadSession = `SELECT ` + sessionColumns + ` FROM sessions WHERE key = ? AND ends_at > ?`

	// $1 now, $2 key, $3 now. LastUsedAt never goes backwards, so a node
	// whose clock lags never shortens a session.
	sqlTouchSession = `UPDATE sessions SET last_used_at = max(last_used_at, ?1),
		ends_at = min(expires_at, max(last_used_at, ?1) + idle_timeout_ms)
		WHERE key = ?2 AND ends_at > ?1`

	// $1 level, $2 key, $3 now.
	sqlSetSessionLevel = `UPDATE sessions SET log_level = ? WHERE key = ? AND ends_at > ?`

	// $1 key; returns when the deleted session ended.
	sqlDeleteSession = `DELETE FROM sessions WHERE key = ? RETURNING ends_at`

	// Deletes up to $2 sessions that ended at or before $1, oldest ends
	// first, walking sessions_ends.
	sqlSweepSessions = `DELETE FROM sessions WHERE key IN (
		SELECT key FROM sessions WHERE ends_at <= ? ORDER BY ends_at LIMIT ?)`
)

// Sessions is the session.Store of a Store: the sessions table of the same
// database, under the same per-call Timeout, writes on the one writer
// connection and reads on the read pool. Get it with Store.Sessions.
type Sessions struct{ s *Store }

var _ session.Store = (*Sessions)(nil)

// Sessions returns the store's session.Store. Every process on the file
// sees the same sessions. It is valid until the Store is closed.
func (s *Store) Sessions() session.Store { return &Sessions{s: s} }

// Create implements session.Store. It counts the owner's live sessions and
// the store's, and inserts r, in one BEGIN IMMEDIATE transaction: SQLite
// has one writer at a time (across processes too), so no other Create can
// slip in between the counts and the insert. Each count stops at its limit
// and reads an index only (sessions_owner, sessions_ends), so a Create
// costs at most limits.Total index entries. It fails, storing nothing,
// with session.ErrLimit at the owner's limit, with session.ErrFull at
// limits.Total, with an error wrapping sessiondata.ErrInvalid for a record
// that is not storable (bad key, NUL bytes or invalid UTF-8, over-long
// fields, JSON over 64 KiB), and with an error for a key that exists.
func (ss *Sessions) Create(ctx context.Context, r session.Record, limits session.Limits, now time.Time) error {
	if err := sessiondata.Check(&r); err != nil {
		return fmt.Errorf("sqlite: create session: %w", err)
	}
	nowMs := now.UnixMilli()
	maxPerOwner := limits.PerOwner
	return ss.s.write(ctx, func(tx *wtx) ([]string, error) {
		if limits.Total > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, sqlCountLiveSessions, nowMs, limits.Total).Scan(&n); err != nil {
				return nil, wrapErr("count sessions", err)
			}
			if n >= limits.Total {
				return nil, session.ErrFull
			}
		}
		if maxPerOwner > 0 {
			var n int
			if err := tx.QueryRowContext(ctx, sqlCountOwnerSessions, r.Endpoint, r.Tenant, r.Principal, nowMs,
				maxPerOwner).Scan(&n); err != nil {
				return nil, wrapErr("count sessions", err)
			}
			if n >= maxPerOwner {
				return nil, session.ErrLimit
			}
		}
		if _, err := tx.ExecContext(ctx, sqlInsertSession, sessiondata.Values(&r)...); err != nil {
			return nil, wrapErr("insert session", err)
		}
		return nil, nil
	})
}

// Load implements session.Store, on the read pool.
func (ss *Sessions) Load(ctx context.Context, key string, now time.Time) (session.Record, error) {
	if !sessiondata.ValidKey(key) {
		return session.Record{}, session.ErrNotFound
	}
	ctx, cancel := ss.s.bound(ctx)
	defer cancel()
	r, err := sessiondata.Scan(ss.s.rs.QueryRowContext(ctx, sqlLoadSession, key, now.UnixMilli()))
	if errors.Is(err, sql.ErrNoRows) {
		return session.Record{}, session.ErrNotFound
	}
	if err != nil {
		return session.Record{}, wrapErr("load session", err)
	}
	return r, nil
}

// Touch implements session.Store. LastUsedAt becomes the later of its value
// and now.
func (ss *Sessions) Touch(ctx context.Context, key string, now time.Time) error {
	return ss.update(ctx, "touch session", key, sqlTouchSession, now.UnixMilli(), key)
}

// SetLogLevel implements session.Store. A level that is not storable text
// of at most 1 KiB is an error wrapping sessiondata.ErrInvalid.
func (ss *Sessions) SetLogLevel(ctx context.Context, key, level string, now time.Time) error {
	if err := sessiondata.CheckLevel(level); err != nil {
		return fmt.Errorf("sqlite: set log level: %w", err)
	}
	return ss.update(ctx, "set log level", key, sqlSetSessionLevel, level, key, now.UnixMilli())
}

// update runs a one-row update of a live session; no row is ErrNotFound.
func (ss *Sessions) update(ctx context.Context, what, key, query string, args ...any) error {
	if !sessiondata.ValidKey(key) {
		return session.ErrNotFound
	}
	return ss.s.write(ctx, func(tx *wtx) ([]string, error) {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return nil, wrapErr(what, err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return nil, wrapErr(what, err)
		} else if n == 0 {
			return nil, session.ErrNotFound
		}
		return nil, nil
	})
}

// Delete implements session.Store: the row is deleted whether live or
// not; ErrNotFound when there was no live one.
func (ss *Sessions) Delete(ctx context.Context, key string, now time.Time) error {
	if !sessiondata.ValidKey(key) {
		return session.ErrNotFound
	}
	live := false
	err := ss.s.write(ctx, func(tx *wtx) ([]string, error) {
		var ends int64
		err := tx.QueryRowContext(ctx, sqlDeleteSession, key).Scan(&ends)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return nil, nil
		case err != nil:
			return nil, wrapErr("delete session", err)
		}
		live = ends > now.UnixMilli() // an ended row is deleted too, and committed
		return nil, nil
	})
	if err == nil && !live {
		err = session.ErrNotFound
	}
	return err
}

// Sweep implements session.Store. One call removes at most
// min(limit, 10,000) records, in one short write transaction that walks
// the sessions_ends index: run it periodically with a modest limit rather
// than rarely with a huge one, so that it never holds the writer for long.
func (ss *Sessions) Sweep(ctx context.Context, now time.Time, limit int) (int, error) {
	limit = sessiondata.SweepLimit(limit)
	if limit == 0 {
		return 0, nil
	}
	var n int64
	err := ss.s.write(ctx, func(tx *wtx) ([]string, error) {
		res, err := tx.ExecContext(ctx, sqlSweepSessions, now.UnixMilli(), limit)
		if err != nil {
			return nil, wrapErr("sweep sessions", err)
		}
		n, err = res.RowsAffected()
		return nil, wrapErr("sweep sessions", err)
	})
	return int(n), err
}
