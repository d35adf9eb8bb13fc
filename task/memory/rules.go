package memory

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// The rules below are the durable stores' (backend.ErrInvalidText,
// backend.EnqueueOptions, backend.ErrIdempotencyConflict), applied the same
// way so that a program tested on this backend meets the same refusals on
// store/sqlite and store/postgres.

// checkText returns an error wrapping backend.ErrInvalidText, naming field
// but never quoting s, when s is not valid UTF-8 or holds a NUL byte.
func checkText(field, s string) error {
	if utf8.ValidString(s) && !strings.ContainsRune(s, 0) {
		return nil
	}
	return fmt.Errorf("memory: %s: %w", field, backend.ErrInvalidText)
}

// checkMessage is checkText for a status message.
func checkMessage(message string) error { return checkText("status message", message) }

// checkProgress checks a progress report: a storable message of at most
// backend.MaxProgressMessage bytes and finite, non-negative numbers.
func checkProgress(message string, p *task.Progress) error {
	if len(message) > backend.MaxProgressMessage {
		return fmt.Errorf("memory: %w: the status message exceeds %d bytes", backend.ErrInvalidProgress, backend.MaxProgressMessage)
	}
	if err := checkMessage(message); err != nil {
		return err
	}
	if p != nil && !p.Valid() {
		return fmt.Errorf("memory: %w: progress numbers must be finite and not negative", backend.ErrInvalidProgress)
	}
	return nil
}

// checkRequests checks what the store needs of input requests: at least
// one, each with a storable, non-empty key and a method.
func checkRequests(reqs mcp.InputRequests) error {
	if len(reqs) == 0 {
		return errors.New("memory: at least one input request is required")
	}
	for k, r := range reqs {
		if k == "" || r == nil || r.Method == "" {
			return errors.New("memory: input requests need a key and a method")
		}
		if err := checkText("input request key", k); err != nil {
			return err
		}
	}
	return nil
}

// enqueueSpec is a validated creation: the options with the manager's
// defaults filled in.
type enqueueSpec struct {
	ttl          time.Duration // 0: unlimited
	pollInterval time.Duration
	maxAttempts  int
}

// resolveEnqueue checks a creation and its options and fills in the
// defaults: a negative TTL means unlimited; TTL and PollInterval must be
// whole milliseconds; text must be storable (backend.ErrInvalidText).
func (m *Manager) resolveEnqueue(cc *task.CreationContext, opts backend.EnqueueOptions) (enqueueSpec, error) {
	if cc == nil || cc.Origin.IsZero() || cc.Request.Endpoint == "" {
		return enqueueSpec{}, errors.New("memory: a creation context with an origin and endpoint is required")
	}
	for _, f := range []struct{ name, value string }{
		{"endpoint", cc.Request.Endpoint}, {"tenant", cc.Request.Tenant}, {"principal", cc.Request.Principal},
		{"tool", cc.Origin.Tool()}, {"idempotency key", opts.IdempotencyKey},
	} {
		if err := checkText(f.name, f.value); err != nil {
			return enqueueSpec{}, err
		}
	}
	if !utf8.Valid(cc.Origin.Params().Arguments) {
		return enqueueSpec{}, fmt.Errorf("memory: arguments: %w", backend.ErrInvalidText)
	}
	s := enqueueSpec{
		ttl:          max(cmp.Or(opts.TTL, m.opts.TTL), 0),
		pollInterval: cmp.Or(opts.PollInterval, m.opts.PollInterval),
		maxAttempts:  cmp.Or(opts.MaxAttempts, backend.DefaultMaxAttempts),
	}
	switch {
	case s.ttl%time.Millisecond != 0 || s.pollInterval < 0 || s.pollInterval%time.Millisecond != 0:
		return enqueueSpec{}, errors.New("memory: TTL and PollInterval must be whole milliseconds")
	case s.maxAttempts < 0:
		return enqueueSpec{}, errors.New("memory: MaxAttempts must not be negative")
	}
	return s, nil
}

// sameArguments reports whether two origins carry the same arguments for
// idempotency: byte for byte, or once insignificant white space is removed.
func sameArguments(a, b task.Origin) bool {
	x, y := a.Params().Arguments, b.Params().Arguments
	if bytes.Equal(x, y) {
		return true
	}
	var cx, cy bytes.Buffer
	if json.Compact(&cx, x) != nil || json.Compact(&cy, y) != nil {
		return false
	}
	return bytes.Equal(cx.Bytes(), cy.Bytes())
}

// exhaustedError is the client-safe error of a task whose job used its
// attempts or its interrupted runs.
func exhaustedError() *mcp.Error {
	return mcp.NewError(mcp.CodeInternalError, "The task failed after repeated attempts.")
}
