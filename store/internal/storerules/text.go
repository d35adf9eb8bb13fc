package storerules

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// Text a store keeps.
//
// PostgreSQL's text columns refuse a NUL byte and invalid UTF-8; SQLite
// keeps both, and JSON decoding turns every invalid byte into U+FFFD, so
// that the keys "bad\xff" and "bad\xfe" would collide once decoded. Every
// store therefore checks the strings it keeps as text here, the same way,
// before writing anything: a creation's endpoint, tenant, principal, tool
// and idempotency key, its arguments (which must be UTF-8 JSON), input
// request keys and status messages. The errors wrap backend.ErrInvalidText
// and name the field, never its bytes, which may be a principal's.

// Storable reports whether s can be kept as text by every store: it is
// valid UTF-8 without a NUL byte.
func Storable(s string) bool { return utf8.ValidString(s) && !strings.ContainsRune(s, 0) }

// CheckText returns an error wrapping backend.ErrInvalidText, naming field,
// when s is not valid UTF-8 or holds a NUL byte.
func CheckText(field, s string) error {
	if Storable(s) {
		return nil
	}
	return fmt.Errorf("%s: %w", field, backend.ErrInvalidText)
}

// CheckMessage is CheckText for a status message.
func CheckMessage(message string) error { return CheckText("status message", message) }

// CheckProgress checks a progress report a store is asked to keep: its
// message is storable text (CheckText) of at most backend.MaxProgressMessage
// bytes, and its numbers, when present, are finite and not negative.
func CheckProgress(message string, p *task.Progress) error {
	if len(message) > backend.MaxProgressMessage {
		return fmt.Errorf("%w: the status message exceeds %d bytes", backend.ErrInvalidProgress, backend.MaxProgressMessage)
	}
	if err := CheckMessage(message); err != nil {
		return err
	}
	return checkNumbers(p)
}

// checkNumbers fails with backend.ErrInvalidProgress when p is set and its
// numbers are not finite and non-negative.
func checkNumbers(p *task.Progress) error {
	if p != nil && !p.Valid() {
		return fmt.Errorf("%w: progress numbers must be finite and not negative", backend.ErrInvalidProgress)
	}
	return nil
}

// checkCreation checks the text of a creation and its idempotency key.
func checkCreation(cc *task.CreationContext, key string) error {
	for _, f := range []struct{ name, value string }{
		{"endpoint", cc.Request.Endpoint}, {"tenant", cc.Request.Tenant}, {"principal", cc.Request.Principal},
		{"tool", cc.Origin.Tool()}, {"idempotency key", key},
	} {
		if err := CheckText(f.name, f.value); err != nil {
			return err
		}
	}
	if !utf8.Valid(cc.Origin.Params().Arguments) {
		return fmt.Errorf("arguments: %w", backend.ErrInvalidText)
	}
	return nil
}
