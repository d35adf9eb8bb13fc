package server

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

// Mirrored request headers of the 2026-07-28 Streamable HTTP transport.
const (
	headerProtocolVersion = "Mcp-Protocol-Version"
	headerMethod          = "Mcp-Method"
	headerName            = "Mcp-Name"
	headerParamPrefix     = "Mcp-Param-"
)

const (
	base64Prefix = "=?base64?"
	base64Suffix = "?="
)

var errBadHeaderValue = errors.New("invalid header value")

// singleHeader returns the one value of the header key, trimmed of optional
// white space. present is false when the header is absent; an error means it
// is repeated or carries bytes a header value may not.
func singleHeader(h http.Header, key string) (value string, present bool, err error) {
	vs := h[key]
	switch len(vs) {
	case 0:
		return "", false, nil
	case 1:
	default:
		return "", true, errBadHeaderValue
	}
	v := strings.Trim(vs[0], " \t")
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c >= 0x7f {
			return "", true, errBadHeaderValue
		}
	}
	return v, true, nil
}

// decodeHeaderValue undoes the transport's encoding of a mirrored value: a
// value of the exact form =?base64?B64?= is the UTF-8 text B64 encodes (invalid
// base64 or invalid UTF-8 is an error); any other value, including one with a
// differently cased sentinel, is taken literally.
func decodeHeaderValue(v string) (string, error) {
	if len(v) < len(base64Prefix)+len(base64Suffix) ||
		!strings.HasPrefix(v, base64Prefix) || !strings.HasSuffix(v, base64Suffix) {
		return v, nil
	}
	enc := v[len(base64Prefix) : len(v)-len(base64Suffix)]
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return "", errBadHeaderValue
	}
	s := string(b)
	if !utf8Valid(s) {
		return "", errBadHeaderValue
	}
	return s, nil
}

func utf8Valid(s string) bool { return strings.ToValidUTF8(s, "\uFFFD") == s }

// mirroredHeader is one x-mcp-header declaration of a tool's input schema.
type mirroredHeader struct {
	property string // the top-level argument name
	header   string // canonical header key, "Mcp-Param-" + name
	kind     string // "string", "integer" or "boolean"
}

// checkParamHeaders compares every declared Mcp-Param-* header with the
// argument it mirrors. args is the decoded arguments object (nil when absent).
func checkParamHeaders(h http.Header, decls []mirroredHeader, args map[string]any) *protocolError {
	for _, d := range decls {
		raw, present, err := singleHeader(h, d.header)
		if err != nil {
			return headerMismatch("Header mismatch: invalid " + d.header + " header")
		}
		val, hasVal := args[d.property]
		if hasVal && val == nil {
			hasVal = false
		}
		if !hasVal {
			if present {
				return headerMismatch("Header mismatch: " + d.header + " has no matching argument")
			}
			continue
		}
		if !present {
			return headerMismatch("Header mismatch: missing " + d.header + " header")
		}
		got, err := decodeHeaderValue(raw)
		if err != nil {
			return headerMismatch("Header mismatch: invalid " + d.header + " header")
		}
		if !paramMatches(d.kind, got, val) {
			return headerMismatch("Header mismatch: " + d.header + " does not match the arguments")
		}
	}
	return nil
}

// paramMatches compares a decoded header value with the argument value. Integers
// compare numerically, so "42" matches 42 and 42.0.
func paramMatches(kind, header string, val any) bool {
	switch kind {
	case "string":
		s, ok := val.(string)
		return ok && s == header
	case "boolean":
		b, ok := val.(bool)
		return ok && strconv.FormatBool(b) == header
	case "integer":
		f, ok := val.(float64)
		if !ok {
			return false
		}
		h, err := strconv.ParseFloat(header, 64)
		return err == nil && !math.IsInf(h, 0) && h == f
	}
	return false
}

// parseMirroredHeaders extracts and validates the x-mcp-header declarations
// of an input schema (already decoded as a JSON object).
func parseMirroredHeaders(schema map[string]any) ([]mirroredHeader, error) {
	var out []mirroredHeader
	seen := map[string]bool{}
	if err := findNestedHeaders(schema, true); err != nil {
		return nil, err
	}
	props, _ := schema["properties"].(map[string]any)
	for name, p := range props {
		prop, ok := p.(map[string]any)
		if !ok {
			continue
		}
		hv, ok := prop["x-mcp-header"]
		if !ok {
			continue
		}
		hname, ok := hv.(string)
		if !ok || !mcp.IsHeaderToken(hname) {
			return nil, fmt.Errorf("property %q: x-mcp-header must be a non-empty HTTP token", name)
		}
		key := http.CanonicalHeaderKey(headerParamPrefix + hname)
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
		out = append(out, mirroredHeader{property: name, header: key, kind: kind})
	}
	return out, nil
}

// findNestedHeaders rejects x-mcp-header anywhere but on a direct property of
// the root schema.
func findNestedHeaders(v any, root bool) error {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			if k == "x-mcp-header" && !root {
				return errors.New("x-mcp-header is only allowed on top-level properties")
			}
			if root && k == "properties" {
				if props, ok := child.(map[string]any); ok {
					for _, p := range props {
						if pm, ok := p.(map[string]any); ok {
							for pk, pv := range pm {
								if pk != "x-mcp-header" {
									if err := findNestedHeaders(pv, false); err != nil {
										return err
									}
								}
							}
						}
					}
				}
				continue
			}
			if err := findNestedHeaders(child, false); err != nil {
				return err
			}
		}
	case []any:
		for _, child := range x {
			if err := findNestedHeaders(child, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// expectedName returns the value Mcp-Name must carry for a method, and
// whether the method requires the header at all.
func expectedName(method string, p *rawParams) (string, bool) {
	switch method {
	case mcp.MethodToolsCall, mcp.MethodPromptsGet:
		return p.Name, true
	case mcp.MethodResourcesRead:
		return p.URI, true
	case mcp.MethodTasksGet, mcp.MethodTasksUpdate, mcp.MethodTasksCancel:
		return p.TaskID, true
	}
	return "", false
}
