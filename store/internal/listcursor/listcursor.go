// Package listcursor encodes the opaque cursors of task.Lister
// implementations: a position in a listing (creation time and task ID of
// the last task of a page), authenticated with HMAC-SHA-256 together with
// the caller it was issued to. A cursor that was altered, forged without the
// key, or issued to another caller (endpoint, tenant or principal) does not
// decode.
//
// The MAC protects the cursor's integrity, not the listing's authorization:
// a manager always filters the tasks by the caller's binding, so even a
// forged cursor could only move a caller within their own listing. That is
// why the key may be kept in the database beside the tasks (store/sqlite,
// store/postgres): every node sharing the tasks shares the key.
package listcursor

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/taskwire/taskwire/task"
)

// Bounds of a listing.
const (
	// MaxLimit bounds a page: a larger ListQuery.Limit is served as
	// MaxLimit.
	MaxLimit = 100
	// MaxLen bounds the cursors Decode reads; longer ones are refused
	// before decoding.
	MaxLen = 256
	// MinKeyLen is the shortest key New accepts.
	MinKeyLen = 16

	macLen = 16 // bytes of the truncated HMAC
	maxID  = 128
	prefix = "c1." // format version
)

// Limit returns the page size a manager serves for a requested limit:
// below 1 counts as 1, above MaxLimit as MaxLimit.
func Limit(n int) int { return min(max(n, 1), MaxLimit) }

// Position is where a page ended: the creation time of its last task, in a
// unit the backend chooses (it compares them only with its own), and that
// task's ID.
type Position struct {
	At int64
	ID string
}

// Codec issues and checks cursors under one key. It is safe for concurrent
// use.
type Codec struct{ key []byte }

// New returns a codec for key, which must be at least MinKeyLen bytes of
// secret randomness.
func New(key []byte) (*Codec, error) {
	if len(key) < MinKeyLen {
		return nil, fmt.Errorf("listcursor: key of %d bytes, want at least %d", len(key), MinKeyLen)
	}
	return &Codec{key: append([]byte(nil), key...)}, nil
}

// Encode returns the cursor continuing after p for the caller of rc. It
// fails only for an ID longer than 128 bytes, which no store issues.
func (c *Codec) Encode(rc task.RequestContext, p Position) (string, error) {
	if len(p.ID) == 0 || len(p.ID) > maxID {
		return "", errors.New("listcursor: task ID length out of range")
	}
	b := binary.BigEndian.AppendUint64(nil, uint64(p.At))
	b = append(b, p.ID...)
	b = append(b, c.mac(rc, b)...)
	return prefix + base64.RawURLEncoding.EncodeToString(b), nil
}

// Decode returns the position cursor names if Encode issued it under this
// key for the same endpoint, tenant and principal as rc's; otherwise it
// returns task.ErrBadCursor.
func (c *Codec) Decode(rc task.RequestContext, cursor string) (Position, error) {
	if len(cursor) > MaxLen || len(cursor) <= len(prefix) || cursor[:len(prefix)] != prefix {
		return Position{}, task.ErrBadCursor
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(cursor[len(prefix):])
	if err != nil || len(b) < 8+1+macLen || len(b) > 8+maxID+macLen {
		return Position{}, task.ErrBadCursor
	}
	body, sum := b[:len(b)-macLen], b[len(b)-macLen:]
	if !hmac.Equal(sum, c.mac(rc, body)) {
		return Position{}, task.ErrBadCursor
	}
	return Position{At: int64(binary.BigEndian.Uint64(body[:8])), ID: string(body[8:])}, nil
}

// mac authenticates body for the caller of rc, each field length-prefixed
// so that no two callers share an input.
func (c *Codec) mac(rc task.RequestContext, body []byte) []byte {
	h := hmac.New(sha256.New, c.key)
	h.Write([]byte("taskwire tasks/list cursor v1\x00"))
	for _, f := range []string{rc.Endpoint, rc.Tenant, rc.Principal} {
		h.Write(binary.BigEndian.AppendUint64(nil, uint64(len(f))))
		h.Write([]byte(f))
	}
	h.Write(body)
	return h.Sum(nil)[:macLen]
}
