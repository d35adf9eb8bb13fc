// Package sessiondata holds the rules the durable session stores
// (store/sqlite, store/postgres) apply to session records before they
// reach the database, so that both refuse and accept the same records.
package sessiondata

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/session"
)

// Bounds of a stored record. The server bounds what it stores far more
// tightly; these keep a buggy caller from filling the database.
const (
	// MaxJSON bounds ClientCapabilities and ClientInfo, each.
	MaxJSON = 64 << 10
	// MaxText bounds Endpoint, Tenant, Principal, ProtocolVersion and
	// LogLevel, each.
	MaxText = 1 << 10
	// MaxSweep bounds the records one Sweep removes, whatever its limit.
	MaxSweep = 10_000
)

// ErrInvalid is wrapped by the errors of Check and CheckLevel.
var ErrInvalid = errors.New("invalid session record")

// ValidKey reports whether key has the shape of a session.Key: KeyLength
// lower-case hex digits. A store answers a key that is not valid as it
// answers an unknown one, without asking the database.
func ValidKey(key string) bool {
	if len(key) != session.KeyLength {
		return false
	}
	for i := range len(key) {
		if c := key[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// text reports whether s is text every store keeps, within MaxText.
func text(s string) bool {
	if len(s) > MaxText || !utf8.ValidString(s) {
		return false
	}
	for i := range len(s) {
		if s[i] == 0 {
			return false
		}
	}
	return true
}

// Check returns an error wrapping ErrInvalid, naming the field but never
// its value, when r cannot be stored.
func Check(r *session.Record) error {
	switch {
	case !ValidKey(r.Key):
		return fmt.Errorf("key: %w", ErrInvalid)
	case !text(r.Endpoint), !text(r.Tenant), !text(r.Principal):
		return fmt.Errorf("owner: %w", ErrInvalid)
	case !text(r.ProtocolVersion), !text(r.LogLevel):
		return fmt.Errorf("protocol version or log level: %w", ErrInvalid)
	case len(r.ClientCapabilities) > MaxJSON, len(r.ClientInfo) > MaxJSON:
		return fmt.Errorf("client capabilities or info over %d bytes: %w", MaxJSON, ErrInvalid)
	case r.IdleTimeout < 0:
		return fmt.Errorf("negative idle timeout: %w", ErrInvalid)
	}
	return nil
}

// CheckLevel is Check for the level of SetLogLevel.
func CheckLevel(level string) error {
	if !text(level) {
		return fmt.Errorf("log level: %w", ErrInvalid)
	}
	return nil
}

// EndsMs returns when a record stops being live, in Unix milliseconds: the
// earlier of its absolute expiry and its idle expiry. A record is live at
// now while now (in milliseconds) is before it. Stores keep it in a column
// of its own so that the sweep and the per-owner count use an index.
func EndsMs(expiresAt, lastUsedAt time.Time, idle time.Duration) int64 {
	return min(expiresAt.UnixMilli(), lastUsedAt.UnixMilli()+idle.Milliseconds())
}

// SweepLimit clamps a Sweep limit to [0, MaxSweep].
func SweepLimit(limit int) int { return min(max(limit, 0), MaxSweep) }

// Values returns the column values of r a store inserts, in the order of
// the stores' session columns (key, endpoint, tenant, principal,
// protocol_version, client_capabilities, client_info, log_level,
// created_at, last_used_at, expires_at, idle_timeout_ms) followed by
// ends_at (EndsMs). Times are Unix milliseconds; empty JSON is NULL, which
// reads back as nil.
func Values(r *session.Record) []any {
	return []any{r.Key, r.Endpoint, r.Tenant, r.Principal, r.ProtocolVersion, nullJSON(r.ClientCapabilities),
		nullJSON(r.ClientInfo), r.LogLevel, r.CreatedAt.UnixMilli(), r.LastUsedAt.UnixMilli(), r.ExpiresAt.UnixMilli(),
		r.IdleTimeout.Milliseconds(), EndsMs(r.ExpiresAt, r.LastUsedAt, r.IdleTimeout)}
}

func nullJSON(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// Scanner is a row of the session columns: *sql.Row and pgx.Row alike.
type Scanner interface {
	Scan(dest ...any) error
}

// Scan reads a record from a row of the session columns (see Values,
// without ends_at). It returns the driver's error as is, so that the
// caller can tell no row from a failure.
func Scan(row Scanner) (session.Record, error) {
	var r session.Record
	var created, used, expires, idleMs int64
	if err := row.Scan(&r.Key, &r.Endpoint, &r.Tenant, &r.Principal, &r.ProtocolVersion, &r.ClientCapabilities,
		&r.ClientInfo, &r.LogLevel, &created, &used, &expires, &idleMs); err != nil {
		return session.Record{}, err
	}
	r.CreatedAt, r.LastUsedAt = time.UnixMilli(created).UTC(), time.UnixMilli(used).UTC()
	r.ExpiresAt, r.IdleTimeout = time.UnixMilli(expires).UTC(), time.Duration(idleMs)*time.Millisecond
	return r, nil
}
