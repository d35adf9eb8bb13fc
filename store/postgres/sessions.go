package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/store/internal/sessiondata"
)

// Sessions is the session.Store of a Store: the sessions table of the same
// schema, shared by every node, under the same per-call Timeout (client
// deadline and statement_timeout). Get it with Store.Sessions. See sql.go
// for the statements and the per-owner lock.
type Sessions struct{ s *Store }

var _ session.Store = (*Sessions)(nil)

// Sessions returns the store's session.Store. It is valid until the Store
// is closed.
func (s *Store) Sessions() session.Store { return &Sessions{s: s} }

// ownerLockKey is the advisory lock key of an owner's creates in schema: a
// 64-bit prefix of the SHA-256 of the length-prefixed fields.
func ownerLockKey(schema string, r *session.Record) int64 {
	h := sha256.New()
	h.Write([]byte("taskwire session owner\x00"))
	for _, f := range []string{schema, r.Endpoint, r.Tenant, r.Principal} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(f))))
		h.Write([]byte(f))
	}
	return int64(binary.BigEndian.Uint64(h.Sum(nil)[:8]))
}

// storeLockKey is the advisory lock key of every create in schema when a
// store-wide limit applies.
func storeLockKey(schema string) int64 {
	h := sha256.Sum256([]byte("taskwire session store\x00" + schema))
	return int64(binary.BigEndian.Uint64(h[:8]))
}

// Create implements session.Store. Under transaction-scoped advisory locks
// (the store's when limits.Total > 0, then the owner's) it counts the live
// sessions and inserts r, so that concurrent creates on any number of
// nodes never leave more than limits.PerOwner live for one owner nor more
// than limits.Total in the store (see sql.go). It fails, storing nothing,
// with session.ErrLimit at the owner's limit, session.ErrFull at
// limits.Total, an error wrapping sessiondata.ErrInvalid for a record that
// is not storable (bad key, NUL bytes or invalid UTF-8, over-long fields,
// JSON over 64 KiB), and an error for a key that exists.
func (ss *Sessions) Create(ctx context.Context, r session.Record, limits session.Limits, now time.Time) error {
	if err := sessiondata.Check(&r); err != nil {
		return fmt.Errorf("postgres: create session: %w", err)
	}
	maxPerOwner := max(limits.PerOwner, 0)
	s := ss.s
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return wrapErr("create session", err)
	}
	defer tx.Rollback(ctx)
	if limits.Total > 0 {
		// The store's lock first, then the owner's: always in this order.
		if _, err := tx.Exec(ctx, s.q.lockOwner, storeLockKey(s.opts.Schema)); err != nil {
			return wrapErr("lock session store", err)
		}
		var n int
		if err := tx.QueryRow(ctx, s.q.countLiveSessions, now.UnixMilli(), limits.Total).Scan(&n); err != nil {
			return wrapErr("count sessions", err)
		}
		if n >= limits.Total {
			return session.ErrFull
		}
	}
	if maxPerOwner > 0 {
		if _, err := tx.Exec(ctx, s.q.lockOwner, ownerLockKey(s.opts.Schema, &r)); err != nil {
			return wrapErr("lock session owner", err)
		}
	}
	tag, err := tx.Exec(ctx, s.q.createSession, append(sessiondata.Values(&r), now.UnixMilli(), maxPerOwner)...)
	if err != nil {
		return wrapErr("insert session", err)
	}
	if tag.RowsAffected() == 0 {
		return session.ErrLimit
	}
	return wrapErr("create session: commit", tx.Commit(ctx))
}

// Load implements session.Store.
func (ss *Sessions) Load(ctx context.Context, key string, now time.Time) (session.Record, error) {
	if !sessiondata.ValidKey(key) {
		return session.Record{}, session.ErrNotFound
	}
	r, err := sessiondata.Scan(ss.s.pool.QueryRow(ctx, ss.s.q.loadSession, key, now.UnixMilli()))
	if errors.Is(err, pgx.ErrNoRows) {
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
	return ss.update(ctx, "touch session", key, ss.s.q.touchSession, key, now.UnixMilli())
}

// SetLogLevel implements session.Store. A level that is not storable text
// of at most 1 KiB is an error wrapping sessiondata.ErrInvalid.
func (ss *Sessions) SetLogLevel(ctx context.Context, key, level string, now time.Time) error {
	if err := sessiondata.CheckLevel(level); err != nil {
		return fmt.Errorf("postgres: set log level: %w", err)
	}
	return ss.update(ctx, "set log level", key, ss.s.q.setSessionLevel, key, now.UnixMilli(), level)
}

// update runs a one-row update of a live session; no row is ErrNotFound.
func (ss *Sessions) update(ctx context.Context, what, key, query string, args ...any) error {
	if !sessiondata.ValidKey(key) {
		return session.ErrNotFound
	}
	tag, err := ss.s.pool.Exec(ctx, query, args...)
	if err != nil {
		return wrapErr(what, err)
	}
	if tag.RowsAffected() == 0 {
		return session.ErrNotFound
	}
	return nil
}

// Delete implements session.Store: the row is deleted whether live or not;
// ErrNotFound when there was no live one.
func (ss *Sessions) Delete(ctx context.Context, key string, now time.Time) error {
	if !sessiondata.ValidKey(key) {
		return session.ErrNotFound
	}
	var ends int64
	err := ss.s.pool.QueryRow(ctx, ss.s.q.deleteSession, key).Scan(&ends)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return session.ErrNotFound
	case err != nil:
		return wrapErr("delete session", err)
	case ends <= now.UnixMilli():
		return session.ErrNotFound // deleted anyway: it had ended
	}
	return nil
}

// Sweep implements session.Store. One call removes at most
// min(limit, 10,000) records in one statement that walks sessions_ends and
// skips rows other nodes' sweeps hold: every node may sweep at once.
func (ss *Sessions) Sweep(ctx context.Context, now time.Time, limit int) (int, error) {
	limit = sessiondata.SweepLimit(limit)
	if limit == 0 {
		return 0, nil
	}
	tag, err := ss.s.pool.Exec(ctx, ss.s.q.sweepSessions, now.UnixMilli(), limit)
	if err != nil {
		return 0, wrapErr("sweep sessions", err)
	}
	return int(tag.RowsAffected()), nil
}
