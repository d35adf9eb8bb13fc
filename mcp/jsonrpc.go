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

// envelope mirrors Request with presence tracking for strict decoding.
type envelope struct {
	JSONRPC *string         `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// DecodeRequest parses one JSON-RPC request or notification from data.
//
// data must already be valid JSON (the caller owns size and depth limits). It
// fails with a *Error of code CodeInvalidRequest when data is not a JSON
// object (batches are not part of the 2026-07-28 revision), when "jsonrpc" is
// not "2.0", when "method" is missing or not a non-empty string, when "id" is
// present but neither a string nor an integer, or when "params" is present but
// not an object. The id is preserved in the returned request whenever it could
// be read, even on failure, so that the error response can echo it.
func DecodeRequest(data []byte) (*Request, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return nil, NewError(CodeInvalidRequest, "Invalid Request: the body must be one JSON-RPC request object")
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return nil, NewError(CodeInvalidRequest, "Invalid Request: malformed envelope")
	}
	req := &Request{}
	if env.ID != nil {
		if err := req.ID.UnmarshalJSON(env.ID); err != nil {
			return nil, NewError(CodeInvalidRequest, "Invalid Request: id must be a string or an integer")
		}
	}
	if env.JSONRPC == nil || *env.JSONRPC != JSONRPCVersion {
		return req, NewError(CodeInvalidRequest, `Invalid Request: "jsonrpc" must be "2.0"`)
	}
	if env.Method == nil || *env.Method == "" {
		return req, NewError(CodeInvalidRequest, `Invalid Request: "method" must be a non-empty string`)
	}
	req.JSONRPC = JSONRPCVersion
	req.Method = *env.Method
	if p := bytes.TrimSpace(env.Params); len(p) > 0 {
		if p[0] != '{' {
			return req, NewError(CodeInvalidRequest, `Invalid Request: "params" must be an object`)
		}
		req.Params = p
	}
	return req, nil
}

// AppendResult appends the encoding of a successful response to dst: the
// envelope around result, which must be the JSON encoding of a result object.
func AppendResult(dst []byte, id ID, result []byte) []byte {
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"result":`...)
	dst = append(dst, result...)
	return append(dst, '}')
}

// AppendError appends the encoding of an error response to dst. A zero id is
// encoded as null.
func AppendError(dst []byte, id ID, e *Error) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// Data that cannot be encoded is dropped rather than losing the error.
		b, _ = json.Marshal(&Error{Code: e.Code, Message: e.Message})
	}
	dst = append(dst, `{"jsonrpc":"2.0","id":`...)
	dst = append(dst, id.Raw()...)
	dst = append(dst, `,"error":`...)
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
