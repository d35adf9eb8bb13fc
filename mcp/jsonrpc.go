package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// JSONRPCVersion is the only value the "jsonrpc" member may take.
const JSONRPCVersion = "2.0"

// ID is a JSON-RPC request id. The 2026-07-28 schema allows a string or an
// integer. An ID keeps the exact JSON spelling it was decoded from so that a
// response echoes it byte for byte. The zero ID means "absent"; it encodes as
// null, which is what an error response carries when the request id could not
// be read.
type ID struct {
	raw string
}

// StringID returns an ID holding the string s.
func StringID(s string) ID {
	b, _ := json.Marshal(s) // a string always marshals
	return ID{raw: string(b)}
}

// IntID returns an ID holding the integer n.
func IntID(n int64) ID { return ID{raw: strconv.FormatInt(n, 10)} }

// IsZero reports whether the ID is absent.
func (id ID) IsZero() bool { return id.raw == "" }

// Raw returns the JSON spelling of the ID, or "null" when it is absent.
func (id ID) Raw() []byte {
	if id.raw == "" {
		return []byte("null")
	}
	return []byte(id.raw)
}

// String returns the JSON spelling of the ID, for diagnostics.
func (id ID) String() string { return string(id.Raw()) }

// MarshalJSON implements json.Marshaler.
func (id ID) MarshalJSON() ([]byte, error) { return id.Raw(), nil }

// UnmarshalJSON accepts a JSON string or an integer number (no fraction, no
// exponent) and rejects everything else, including null.
func (id *ID) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if err := validIDSpelling(b); err != nil {
		return err
	}
	id.raw = string(b)
	return nil
}

var errBadID = errors.New("mcp: request id must be a string or an integer")

func validIDSpelling(b []byte) error {
	if len(b) == 0 {
		return errBadID
	}
	switch c := b[0]; {
	case c == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return errBadID
		}
		return nil
	case c == '-' || (c >= '0' && c <= '9'):
		digits := b
		if c == '-' {
			digits = b[1:]
		}
		if len(digits) == 0 || len(digits) > 19 {
			return errBadID
		}
		if digits[0] == '0' && len(digits) > 1 {
			return errBadID
		}
		for _, d := range digits {
			if d < '0' || d > '9' {
				return errBadID
			}
		}
		return nil
	default:
		return errBadID
	}
}

// Request is a JSON-RPC request or notification as received. Params keeps the
// raw JSON of the "params" member; method-specific code decodes it.
type Request struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      ID              `json:"id,omitzero"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params,omitempty"`
}

// IsNotification reports whether the request carries no id.
func (r *Request) IsNotification() bool { return r.ID.IsZero() }

// Response is a JSON-RPC response: exactly one of Result and Error is set.
type Response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      ID              `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *Error          `json:"error,omitempty"`
}

// Notification is a JSON-RPC notification sent by the server.
type Notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// DecodeRequest parses one JSON-RPC request or notification from data.
//
// data must already be valid JSON (the caller owns size and depth limits). It
// fails with a *Error of code CodeInvalidRequest when data is not a JSON
// object (batches are not part of the 2026-07-28 revision), when a member
// name occurs twice, when "jsonrpc" is not "2.0", when "method" is missing or
// not a non-empty string, when "id" is present but neither a string nor an
// integer, or when "params" is present but not an object. Member names are
// matched exactly (case-sensitively); unknown members are ignored. The id is
// preserved in the returned request whenever it could be read, even on
// failure, so that the error response can echo it.
func DecodeRequest(data []byte) (*Request, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, NewError(CodeInvalidRequest, "Invalid Request: the body must be one JSON-RPC request object")
	}
	if !json.Valid(data) {
		return nil, NewError(CodeInvalidRequest, "Invalid Request: malformed envelope")
	}
	return DecodeValidRequest(data)
}

// DecodeValidRequest is DecodeRequest for data the caller has already
// checked to be valid JSON (the server does so together with its depth
// limit, in one pass); it skips that check.
func DecodeValidRequest(data []byte) (*Request, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, NewError(CodeInvalidRequest, "Invalid Request: the body must be one JSON-RPC request object")
	}
	var id, version, method, params []byte
	err := EachMember(data, func(name, value []byte) error {
		switch string(name) {
		case "id":
			id = value
		case "jsonrpc":
			version = value
		case "method":
			method = value
		case "params":
			params = value
		}
		return nil
	})
	if err != nil {
		return nil, NewError(CodeInvalidRequest, "Invalid Request: malformed envelope")
	}
	req := &Request{}
	if id != nil {
		if err := req.ID.UnmarshalJSON(id); err != nil {
			return nil, NewError(CodeInvalidRequest, "Invalid Request: id must be a string or an integer")
		}
	}
	if v, err := decodeString(version); err != nil || v != JSONRPCVersion {
		return req, NewError(CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
	}
	m, err := decodeString(method)
	if err != nil || m == "" {
		return req, NewError(CodeInvalidRequest, `Invalid Request: "method" must be a non-empty string`)
	}
	req.JSONRPC = JSONRPCVersion
	req.Method = m
	if params != nil {
		if params[0] != '{' {
			return req, NewError(CodeInvalidRequest, `Invalid Request: "params" must be an object`)
		}
		req.Params = params
	}
	return req, nil
}

var errDuplicateMember = errors.New("mcp: duplicate member name")

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipString returns the index just past the string starting at data[i].
func skipString(data []byte, i int) int {
	for j := i + 1; j < len(data); j++ {
		switch data[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(data)
}

// skipValue returns the index just past the value starting at data[i], which
// is valid JSON.
func skipValue(data []byte, i int) int {
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(data); j++ {
			switch data[j] {
			case '"':
				j = skipString(data, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(data)
	}
	j := i
	for j < len(data) {
		switch data[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return j
		}
		j++
	}
	return j
}

var errBadEnvelope = errors.New("mcp: malformed JSON-RPC envelope")

// AppendResult appends the encoding of a successful response to dst: the
// envelope around result, which must be the JSON encoding of a result object.
func AppendResult(dst []byte, id ID, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendError appends the encoding of an error response to dst. A zero id
// (a request whose id could not be read) is omitted, as the 2026-07-28 schema
// allows, rather than encoded as null, which the schema rejects.
func AppendError(dst []byte, id ID, e *Error) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// Data that cannot be encoded is dropped rather than losing the error.
		b, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	dst = append(dst, `{"jsonrpc":"2.0",`...)
	if !id.IsZero() {
		dst = append(dst, `"id":`...)
		dst = append(dst, id.Raw()...)
		dst = append(dst, ',')
	}
	dst = append(dst, `"error":`...)
	dst = append(dst, b...)
	return append(dst, '}')
}

// AppendNotification appends the encoding of a notification with the given
// method and already encoded params object.
func AppendNotification(dst []byte, method string, params []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","method":`...)
	m, _ := json.Marshal(method) // a string always marshals
	dst = append(dst, m...)
	if len(params) > 0 {
		dst = append(dst, `,"params":`...)
		dst = append(dst, params...)
	}
	return append(dst, '}')
}

// String implements fmt.Stringer for diagnostics; it never prints params.
func (r *Request) String() string {
	return fmt.Sprintf("jsonrpc request method=%q id=%s", r.Method, r.ID)
}
