package mcp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"unicode/utf8"
)

// HTTP headers of the Streamable HTTP transport, in the canonical form of
// net/http (header names are case-insensitive on the wire).
const (
	// HeaderProtocolVersion carries the protocol revision of a request; in
	// the 2026-07-28 revision it must equal the request's _meta
	// MetaProtocolVersion.
	HeaderProtocolVersion = "Mcp-Protocol-Version"
	// HeaderMethod mirrors the JSON-RPC method of a request.
	HeaderMethod = "Mcp-Method"
	// HeaderName mirrors the target of a request (see [TargetName]),
	// encoded with [EncodeHeaderValue].
	HeaderName = "Mcp-Name"
	// HeaderParamPrefix is the prefix of the headers that mirror tool
	// arguments: the argument of an x-mcp-header declaration "X" goes in
	// the header Mcp-Param-X (see [ParamHeader]).
	HeaderParamPrefix = "Mcp-Param-"
	// HeaderSessionID carries a 2025-era session ID.
	HeaderSessionID = "Mcp-Session-Id"
	// HeaderLastEventID is the SSE header with which a 2025-era client
	// resumes a stream.
	HeaderLastEventID = "Last-Event-Id"
)

// TargetName returns the value HeaderName must mirror for a request of
// method whose params name the target name, uri or taskId, and whether the
// method mirrors a target at all: tools/call and prompts/get mirror name,
// resources/read mirrors uri, and tasks/get, tasks/update and tasks/cancel
// mirror taskId.
func TargetName(method, name, uri, taskID string) (string, bool) {
	switch method {
	case MethodToolsCall, MethodPromptsGet:
		return name, true
	case MethodResourcesRead:
		return uri, true
	case MethodTasksGet, MethodTasksUpdate, MethodTasksCancel:
		return taskID, true
	}
	return "", false
}

// The sentinel around a base64-encoded header value: =?base64?B64?=.
const (
	encodedPrefix = "=?base64?"
	encodedSuffix = "?="
)

// ErrInvalidHeaderValue is the error of DecodeHeaderValue for a value of
// the encoded form whose base64 or UTF-8 is invalid.
var ErrInvalidHeaderValue = errors.New("mcp: invalid encoded header value")

// isEncodedForm reports whether v has the exact form =?base64?B64?= that
// DecodeHeaderValue decodes; B64 may be empty.
func isEncodedForm(v string) bool {
	return len(v) >= len(encodedPrefix)+len(encodedSuffix) &&
		strings.HasPrefix(v, encodedPrefix) && strings.HasSuffix(v, encodedSuffix)
}

// EncodeHeaderValue returns v as a mirrored header (Mcp-Name, Mcp-Param-*)
// carries it. A value of printable ASCII without leading or trailing white
// space is sent as is; any other value is sent as =?base64?B64?=, B64 being
// the standard base64 of its UTF-8 bytes. So is a printable value that
// DecodeHeaderValue would take for an encoded one (one that begins with
// =?base64? and ends with ?=), so that it survives decoding; a value that
// only begins with the sentinel is a literal and is sent as is. The empty
// string is sent as is.
//
// For every valid UTF-8 string s, DecodeHeaderValue(EncodeHeaderValue(s))
// returns s; a string that is not valid UTF-8 encodes to a value that
// DecodeHeaderValue rejects.
func EncodeHeaderValue(v string) string {
	if isPlainHeaderValue(v) && !isEncodedForm(v) {
		return v
	}
	return encodedPrefix + base64.StdEncoding.EncodeToString([]byte(v)) + encodedSuffix
}

// isPlainHeaderValue reports whether v is printable ASCII (0x20 to 0x7e)
// that begins and ends with neither a space nor a tab.
func isPlainHeaderValue(v string) bool {
	if v == "" {
		return true
	}
	if v[0] == ' ' || v[len(v)-1] == ' ' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return false
		}
	}
	return true
}

// DecodeHeaderValue undoes EncodeHeaderValue on a received header value
// (already trimmed of optional white space). A value of the exact form
// =?base64?B64?= is the UTF-8 text B64 encodes, and an error wrapping
// ErrInvalidHeaderValue when B64 is not standard base64 or its bytes are
// not valid UTF-8. Any other value, including one with a differently cased
// sentinel or only one half of it, is returned as is.
func DecodeHeaderValue(v string) (string, error) {
	if !isEncodedForm(v) {
		return v, nil
	}
	b, err := base64.StdEncoding.DecodeString(v[len(encodedPrefix) : len(v)-len(encodedSuffix)])
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidHeaderValue, err)
	}
	if !utf8.Valid(b) {
		return "", fmt.Errorf("%w: not UTF-8", ErrInvalidHeaderValue)
	}
	return string(b), nil
}

// IsHeaderToken reports whether s is a non-empty RFC 9110 token, the form
// an x-mcp-header name must take (it becomes the suffix of an
// Mcp-Param-<name> header).
func IsHeaderToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// ParamHeader is one x-mcp-header declaration of a tool's input schema: the
// top-level argument Property is mirrored into the header
// HeaderParamPrefix+Name of every tools/call.
type ParamHeader struct {
	// Property is the name of the top-level property that declares it.
	Property string
	// Name is the declared header name, an RFC 9110 token.
	Name string
	// Type is the property's JSON Schema type: "string", "integer" or
	// "boolean".
	Type string
	// Key is the header that carries the argument, HeaderParamPrefix+Name
	// in the canonical form of net/http, such as "Mcp-Param-Region".
	Key string
}

// Value returns the header value (before EncodeHeaderValue) that mirrors
// arg, the JSON text of the argument: a string as is, an integer in
// decimal (42.0 and 4.2e1 give "42") and a boolean as true or false. It
// reports false when arg is absent, null or not of the declared type; no
// header is sent then.
func (d ParamHeader) Value(arg json.RawMessage) (string, bool) {
	arg = bytes.TrimSpace(arg)
	if len(arg) == 0 {
		return "", false
	}
	switch d.Type {
	case "string":
		var s string
		if arg[0] != '"' || json.Unmarshal(arg, &s) != nil {
			return "", false
		}
		return s, true
	case "boolean":
		if string(arg) == "true" || string(arg) == "false" {
			return string(arg), true
		}
	case "integer":
		if arg[0] != '-' && (arg[0] < '0' || arg[0] > '9') {
			return "", false
		}
		f, ok := new(big.Float).SetString(string(arg))
		if !ok || f.IsInf() || !f.IsInt() {
			return "", false
		}
		i, _ := f.Int(nil)
		return i.String(), true
	}
	return "", false
}

// Matches reports whether header, a received value already decoded with
// DecodeHeaderValue, mirrors arg, the JSON text of the argument. Strings and
// booleans compare as Value renders them; integers compare numerically, so
// "42" matches 42 and 42.0. An absent or null arg matches nothing.
func (d ParamHeader) Matches(header string, arg json.RawMessage) bool {
	if d.Type != "integer" {
		v, ok := d.Value(arg)
		return ok && v == header
	}
	arg = bytes.TrimSpace(arg)
	if len(arg) == 0 || arg[0] != '-' && (arg[0] < '0' || arg[0] > '9') {
		return false
	}
	a, err := strconv.ParseFloat(string(arg), 64)
	if err != nil {
		return false
	}
	h, err := strconv.ParseFloat(header, 64)
	return err == nil && !math.IsInf(h, 0) && h == a
}

// ParseParamHeaders returns the x-mcp-header declarations of a tool's input
// schema, in no particular order; an empty schema declares none. A schema
// that is not a JSON object, or a declaration that breaks a rule, is an
// error naming the property at fault: the name must be an RFC 9110 token
// (IsHeaderToken), unique within the schema ignoring case, on a direct
// property of the root schema whose type is string, integer or boolean,
// and the keyword must appear nowhere else (not on the root, nor inside a
// property, items, $defs or a combinator). A property or definition that is
// merely named x-mcp-header is no declaration. Clients must not use a tool
// whose declarations are invalid; servers refuse to register it.
func ParseParamHeaders(schema json.RawMessage) ([]ParamHeader, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, errors.New("input schema is not a JSON object")
	}
	for k, v := range root {
		if k == xMCPHeader {
			return nil, errors.New("x-mcp-header is only allowed on top-level properties, not on the root schema")
		}
		if k != "properties" && hasHeaderKeyword(k, v) {
			return nil, errors.New("x-mcp-header is only allowed on top-level properties")
		}
	}
	props, _ := root["properties"].(map[string]any)
	var out []ParamHeader
	seen := map[string]bool{}
	for name, p := range props {
		prop, _ := p.(map[string]any)
		for k, v := range prop {
			if k != xMCPHeader && hasHeaderKeyword(k, v) {
				return nil, fmt.Errorf("property %q: x-mcp-header is only allowed on top-level properties", name)
			}
		}
		hv, ok := prop[xMCPHeader]
		if !ok {
			continue
		}
		hname, _ := hv.(string)
		if !IsHeaderToken(hname) {
			return nil, fmt.Errorf("property %q: x-mcp-header must be a non-empty HTTP token", name)
		}
		key := strings.ToLower(hname)
		if seen[key] {
			return nil, fmt.Errorf("property %q: x-mcp-header %q is declared twice", name, hname)
		}
		seen[key] = true
		kind, _ := prop["type"].(string)
		switch kind {
		case "string", "integer", "boolean":
		default:
			return nil, fmt.Errorf("property %q: x-mcp-header requires type string, integer or boolean", name)
		}
		out = append(out, ParamHeader{Property: name, Name: hname, Type: kind, Key: http.CanonicalHeaderKey(HeaderParamPrefix + hname)})
	}
	return out, nil
}

const xMCPHeader = "x-mcp-header"

// namedSchemas are the JSON Schema keywords whose value maps names of the
// schema author's choosing to subschemas: a name there is no keyword.
var namedSchemas = map[string]bool{
	"properties": true, "patternProperties": true, "$defs": true, "definitions": true, "dependentSchemas": true,
}

// hasHeaderKeyword reports whether v, the value of the keyword k of a
// schema, holds an x-mcp-header keyword anywhere.
func hasHeaderKeyword(k string, v any) bool {
	switch t := v.(type) {
	case map[string]any:
		if namedSchemas[k] {
			for _, sub := range t {
				if hasHeaderKeyword("", sub) {
					return true
				}
			}
			return false
		}
		for ck, cv := range t {
			if ck == xMCPHeader || hasHeaderKeyword(ck, cv) {
				return true
			}
		}
	case []any:
		for _, cv := range t {
			if hasHeaderKeyword("", cv) {
				return true
			}
		}
	}
	return false
}
