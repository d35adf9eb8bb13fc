// Package taskdata holds what the SQL stores share in handling task data,
// so that store/sqlite and store/postgres differ in their SQL only: task
// IDs, the snapshot a task row describes (Row), the acceptance of input
// responses (Accept), the decoding of a claimed job (DecodeClaim), the
// stored errors of tasks a store fails by itself, the JSON codecs of the
// columns that hold input requests, responses, results and errors, the
// lookups no stored row can match (Findable, Listable, Countable), and the
// grouped counts of the gauges and the operator. The rules every backend applies to the values
// it is asked to keep, store/memory included, are in storerules.
package taskdata

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/internal/storerules"
)

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
// or its progress numbers are invalid (storerules.CheckCompletion). A store checks
// every item of a batch with it before writing anything.
func CompletionJSON(c backend.Completion) ([]byte, error) {
	if err := storerules.CheckCompletion(c); err != nil {
		return nil, err
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
