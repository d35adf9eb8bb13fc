package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// EachMember calls fn for every member of the JSON object text data, which
// must already be valid JSON, in order, with the member's exact
// (case-sensitive) decoded name and its value trimmed of white space. It
// fails when data is not an object, when a member name occurs twice, or with
// fn's first error. The name slice is only valid during the call; compare it
// with string(name) == "…" or switch string(name), which do not allocate.
// EachMember itself allocates nothing for names without escapes.
//
// Decoders on the request path use it where encoding/json's
// case-insensitive, last-duplicate-wins matching would let two readers of one
// message see different values.
func EachMember(data []byte, fn func(name, value []byte) error) error {
	data = bytes.TrimSpace(data)
	if len(data) < 2 || data[0] != '{' {
		return errBadEnvelope
	}
	var seenBuf [16][]byte
	seen := seenBuf[:0]
	i := skipSpace(data, 1)
	if data[i] == '}' {
		return nil
	}
	for {
		// data[i] is the opening quote of a member name.
		end := skipString(data, i)
		name, err := decodeStringBytes(data[i:end])
		if err != nil {
			return errBadEnvelope
		}
		for _, s := range seen {
			if bytes.Equal(s, name) {
				return errDuplicateMember
			}
		}
		seen = append(seen, name)
		i = skipSpace(data, end)
		i = skipSpace(data, i+1) // the colon
		vend := skipValue(data, i)
		if err := fn(name, data[i:vend]); err != nil {
			return err
		}
		i = skipSpace(data, vend)
		if data[i] == '}' {
			return nil
		}
		i = skipSpace(data, i+1) // the comma
	}
}

// Members is EachMember collected into a map.
func Members(data []byte) (map[string]json.RawMessage, error) {
	members := make(map[string]json.RawMessage, 4)
	err := EachMember(data, func(name, value []byte) error {
		members[string(name)] = value
		return nil
	})
	if err != nil {
		return nil, err
	}
	return members, nil
}

var errNotString = errors.New("mcp: not a JSON string")

// decodeString decodes a JSON string token.
func decodeString(tok []byte) (string, error) {
	b, err := decodeStringBytes(tok)
	return string(b), err
}

// decodeStringBytes decodes a JSON string token. Plain ASCII strings without
// escapes are returned as a subslice of tok, without copying; anything else
// goes through encoding/json.
func decodeStringBytes(tok []byte) ([]byte, error) {
	if len(tok) < 2 || tok[0] != '"' || tok[len(tok)-1] != '"' {
		return nil, errNotString
	}
	inner := tok[1 : len(tok)-1]
	for _, c := range inner {
		if c == '\\' || c == '"' || c < 0x20 || c >= utf8.RuneSelf {
			var s string
			if err := json.Unmarshal(tok, &s); err != nil {
				return nil, err
			}
			return []byte(s), nil
		}
	}
	return inner, nil
}

// DecodeString decodes a JSON string value, failing for any other kind of
// value.
func DecodeString(value []byte) (string, error) { return decodeString(value) }
