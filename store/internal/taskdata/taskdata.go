// Package taskdata holds the backend-neutral rules every durable store
// applies to task data, so that store/sqlite and store/postgres differ in
// their SQL only: task IDs, the snapshot a task row describes (Row), the
// acceptance of input responses (Accept), the decoding of a claimed job
// (DecodeClaim), the idempotency comparison of origins, the options of a
// creation and the store's enqueue defaults, the client-safe errors of
// tasks a store fails by itself, the JSON codecs of the columns that hold
// input requests, responses, results and errors, and the grouped counts
// of Stats.
package taskdata

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// ExhaustedMessage is the message of the error a task fails with when its
// job used all its attempts. It is client-safe: it reveals no cause.
const ExhaustedMessage = "The task failed after repeated attempts."

// ExhaustedError returns the client-safe error of a task whose job used all
// its attempts.
func ExhaustedError() *mcp.Error {
	return mcp.NewError(mcp.CodeInternalError, ExhaustedMessage)
}

// NewID returns a new task ID: the creation time in milliseconds since the
// Unix epoch as 12 hex digits, a dash, and 128 random bits as 32 hex digits
// (45 header-safe characters). The random part makes it unguessable (more
// entropy than a random UUID's 122 bits); the time prefix makes IDs created
// together sort together, so the index pages a store writes when it
// updates recent tasks are few and hot, as with a sequence.
func NewID(now time.Time) (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("task ID: %w", err)
	}
	ms := uint64(max(now.UnixMilli(), 0)) & (1<<48 - 1)
	return fmt.Sprintf("%012x-%x", ms, b[:]), nil
}

// SameArguments reports whether two origins carry the same tool arguments
// for idempotency purposes: byte-identical, or identical once insignificant
// white space is removed. Member order, number spellings and escapes still
// count, so the comparison never merges two argument objects a tool could
// tell apart.
func SameArguments(a, b task.Origin) bool {
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

// ValidateRequests checks what a store needs of input requests: at least
// one, each with a non-empty key that is storable text (see CheckText), a
// value and a method. Workers validate the rest against the origin with
// task.Validator before calling the store.
func ValidateRequests(reqs mcp.InputRequests) error {
	if len(reqs) == 0 {
		return fmt.Errorf("at least one input request is required")
	}
	for k, r := range reqs {
		if k == "" || r == nil || r.Method == "" {
			return fmt.Errorf("input requests need a key and a method")
		}
		if err := CheckText("input request key", k); err != nil {
			return err
		}
	}
	return nil
}

// EncodeJSON marshals v, or returns nil (SQL NULL) for a nil or empty
// value of the column types used by stores.
func EncodeJSON(v any) ([]byte, error) {
	switch x := v.(type) {
	case mcp.InputRequests:
		if len(x) == 0 {
			return nil, nil
		}
	case mcp.InputResponses:
		if len(x) == 0 {
			return nil, nil
		}
	case *mcp.CallToolResult:
		if x == nil {
			return nil, nil
		}
	case *mcp.Error:
		if x == nil {
			return nil, nil
		}
	}
	return json.Marshal(v)
}

// EncodeResponses encodes accepted input responses as a JSON object whose
// member values are each response's bytes exactly as received (white space,
// number spellings and escapes stay), members in key order; nil (SQL NULL)
// for none. Every response must be valid JSON.
func EncodeResponses(m mcp.InputResponses) ([]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	b := []byte{'{'}
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if !json.Valid(m[k]) {
			return nil, fmt.Errorf("input response %q is not valid JSON", k)
		}
		if i > 0 {
			b = append(b, ',')
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b = append(b, key...)
		b = append(b, ':')
		b = append(b, m[k]...)
	}
	return append(b, '}'), nil
}

// DecodeRequests decodes an input_requests column; empty means none.
func DecodeRequests(b []byte) (mcp.InputRequests, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var r mcp.InputRequests
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("input requests column: %w", err)
	}
	return r, nil
}

// DecodeResponses decodes an input_responses column; empty means none. Each
// response keeps the bytes EncodeResponses stored.
func DecodeResponses(b []byte) (mcp.InputResponses, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var r mcp.InputResponses
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("input responses column: %w", err)
	}
	return r, nil
}

// DecodeKeys decodes a used_keys column (a JSON array of strings) into a
// set; empty means none.
func DecodeKeys(b []byte) (map[string]bool, error) {
	set := map[string]bool{}
	if len(b) == 0 {
		return set, nil
	}
	var keys []string
	if err := json.Unmarshal(b, &keys); err != nil {
		return nil, fmt.Errorf("used keys column: %w", err)
	}
	for _, k := range keys {
		set[k] = true
	}
	return set, nil
}

// DecodeResult decodes a result column; empty means none.
func DecodeResult(b []byte) (*mcp.CallToolResult, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("result column: %w", err)
	}
	return &r, nil
}

// DecodeError decodes an error column; empty means none.
func DecodeError(b []byte) (*mcp.Error, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var e mcp.Error
	if err := json.Unmarshal(b, &e); err != nil {
		return nil, fmt.Errorf("error column: %w", err)
	}
	return &e, nil
}

// CompletionJSON returns the JSON a store keeps for a completion's result:
// its ResultJSON when the runtime encoded it already, else the encoding of
// its Result. It fails when the completion's message is not storable text
// (see CheckMessage), and with backend.ErrInvalidProgress when it carries
// progress numbers that are not finite and non-negative. A store checks
// every item of a batch with it before writing anything.
func CompletionJSON(c backend.Completion) ([]byte, error) {
	if err := CheckMessage(c.Message); err != nil {
		return nil, err
	}
	if c.Progress != nil && !c.Progress.Valid() {
		return nil, fmt.Errorf("%w: progress numbers must be finite and not negative", backend.ErrInvalidProgress)
	}
	if len(c.ResultJSON) > 0 {
		return c.ResultJSON, nil
	}
	if c.Result == nil {
		return nil, errors.New("a result is required")
	}
	b, err := json.Marshal(c.Result)
	if err != nil {
		return nil, fmt.Errorf("encode result: %w", err)
	}
	return b, nil
}

// EnqueueDefaults are a store's defaults for EnqueueOptions.
type EnqueueDefaults struct {
	TTL          time.Duration // negative: unlimited
	PollInterval time.Duration
	MaxAttempts  int
}

// Enqueue is a validated creation: the options with the store's defaults
// filled in.
type Enqueue struct {
	TTL          time.Duration // 0: unlimited
	PollInterval time.Duration
	MaxAttempts  int
}

// ResolveEnqueue checks a creation context and its options and fills in the
// defaults. A negative TTL means unlimited (0 in the result); TTL and
// PollInterval must be whole milliseconds, and MaxAttempts at most
// backend.MaxMaxAttempts. Text a store keeps must be valid
// UTF-8 without NUL bytes (backend.ErrInvalidText).
func ResolveEnqueue(cc *task.CreationContext, opts backend.EnqueueOptions, d EnqueueDefaults) (Enqueue, error) {
	if cc == nil || cc.Origin.IsZero() || cc.Request.Endpoint == "" {
		return Enqueue{}, errors.New("a creation context with an origin and endpoint is required")
	}
	if err := checkCreation(cc, opts.IdempotencyKey); err != nil {
		return Enqueue{}, err
	}
	e := Enqueue{TTL: cmp.Or(opts.TTL, d.TTL), PollInterval: cmp.Or(opts.PollInterval, d.PollInterval),
		MaxAttempts: cmp.Or(opts.MaxAttempts, d.MaxAttempts)}
	e.TTL = max(e.TTL, 0)
	switch {
	case e.TTL%time.Millisecond != 0 || e.PollInterval < 0 || e.PollInterval%time.Millisecond != 0:
		return Enqueue{}, errors.New("TTL and PollInterval must be whole milliseconds")
	case e.MaxAttempts < 0 || e.MaxAttempts > backend.MaxMaxAttempts:
		return Enqueue{}, fmt.Errorf("MaxAttempts must be between 0 and %d", backend.MaxMaxAttempts)
	}
	return e, nil
}

// ResolveBatch checks the items of an EnqueueBatch, as ResolveEnqueue
// checks one creation, and that the batch is within backend.MaxEnqueueBatch
// and carries no idempotency key (backend.ErrBatchIdempotencyKey).
func ResolveBatch(items []backend.BatchItem, d EnqueueDefaults) ([]Enqueue, error) {
	if len(items) > backend.MaxEnqueueBatch {
		return nil, fmt.Errorf("a batch holds at most %d items, not %d", backend.MaxEnqueueBatch, len(items))
	}
	resolved := make([]Enqueue, len(items))
	for i, it := range items {
		if it.Options.IdempotencyKey != "" {
			return nil, backend.ErrBatchIdempotencyKey
		}
		e, err := ResolveEnqueue(it.Creation, it.Options, d)
		if err != nil {
			return nil, fmt.Errorf("batch item %d: %w", i, err)
		}
		resolved[i] = e
	}
	return resolved, nil
}
