package client

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"math/big"
	"net/http"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// paramHeader is one x-mcp-header declaration of a tool: the argument
// named prop is mirrored into the header Mcp-Param-<name>.
type paramHeader struct {
	prop, name, kind string
}

// toolEntry is a listed tool with what the client derived from it.
type toolEntry struct {
	tool        *mcp.Tool
	headers     []paramHeader
	taskSupport string // 2025-11-25 execution.taskSupport
	// invalid is why the tool's x-mcp-header declarations are unusable;
	// such a tool is not listed and Call refuses it.
	invalid error
}

// toolHeaders validates the x-mcp-header declarations of a tool's input
// schema (SEP-2243): each must be a non-empty HTTP token, unique ignoring
// case, on a top-level property of type string, integer or boolean, and
// nowhere else. A tool that breaks a rule must not be used.
func toolHeaders(schema json.RawMessage) ([]paramHeader, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, nil
	}
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return nil, errors.New("input schema is not an object")
	}
	props, _ := root["properties"].(map[string]any)
	var out []paramHeader
	seen := map[string]bool{}
	for prop, v := range props {
		ps, _ := v.(map[string]any)
		for k, inner := range ps {
			if k != "x-mcp-header" && nestedHeader(inner) {
				return nil, errors.New("x-mcp-header below a top-level property")
			}
		}
		hv, ok := ps["x-mcp-header"]
		if !ok {
			continue
		}
		name, _ := hv.(string)
		if !mcp.IsHeaderToken(name) {
			return nil, errors.New("x-mcp-header is not an HTTP token")
		}
		if seen[strings.ToLower(name)] {
			return nil, errors.New("x-mcp-header declared twice")
		}
		seen[strings.ToLower(name)] = true
		kind, _ := ps["type"].(string)
		if kind != "string" && kind != "integer" && kind != "boolean" {
			return nil, errors.New("x-mcp-header on a property that is not a string, integer or boolean")
		}
		out = append(out, paramHeader{prop: prop, name: name, kind: kind})
	}
	for k, v := range root {
		if k == "properties" {
			continue
		}
		if k == "x-mcp-header" || nestedHeader(v) {
			return nil, errors.New("x-mcp-header outside the top-level properties")
		}
	}
	return out, nil
}

// nestedHeader reports whether v contains an x-mcp-header keyword anywhere
// (a property named x-mcp-header inside a properties map does not count).
func nestedHeader(v any) bool {
	switch t := v.(type) {
	case map[string]any:
		for k, inner := range t {
			if k == "x-mcp-header" {
				return true
			}
			if k == "properties" {
				if m, ok := inner.(map[string]any); ok {
					for _, p := range m {
						if nestedHeader(p) {
							return true
						}
					}
					continue
				}
			}
			if nestedHeader(inner) {
				return true
			}
		}
	case []any:
		for _, inner := range t {
			if nestedHeader(inner) {
				return true
			}
		}
	}
	return false
}

// encodeHeaderValue returns v as sent in an Mcp-Name or Mcp-Param header:
// plain when it is printable ASCII without surrounding whitespace, else
// "=?base64?<base64 of the UTF-8>?=". A plain value that looks like that
// sentinel is encoded too, so that it survives decoding.
func encodeHeaderValue(v string) string {
	plain := v == strings.TrimSpace(v) && !(strings.HasPrefix(v, "=?base64?") && strings.HasSuffix(v, "?="))
	for i := 0; plain && i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			plain = false
		}
	}
	if plain {
		return v
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
}

// paramHeaders returns the Mcp-Param-* headers of a call with args (the
// JSON object of arguments). Null and absent arguments send no header; a
// value of the wrong type sends none either (the server rejects the call).
func paramHeaders(decls []paramHeader, args json.RawMessage) http.Header {
	h := http.Header{}
	if len(decls) == 0 || len(args) == 0 {
		return h
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return h
	}
	for _, d := range decls {
		raw, ok := m[d.prop]
		if !ok {
			continue
		}
		if v, ok := headerValue(d.kind, raw); ok {
			h.Set("Mcp-Param-"+d.name, encodeHeaderValue(v))
		}
	}
	return h
}

func headerValue(kind string, raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	switch kind {
	case "string":
		var s string
		if raw[0] != '"' || json.Unmarshal(raw, &s) != nil {
			return "", false
		}
		return s, true
	case "boolean":
		if string(raw) == "true" || string(raw) == "false" {
			return string(raw), true
		}
	case "integer":
		f, ok := new(big.Float).SetString(string(raw))
		if !ok || !f.IsInt() {
			return "", false
		}
		i, _ := f.Int(nil)
		return i.String(), true
	}
	return "", false
}
