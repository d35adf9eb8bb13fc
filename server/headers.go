package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/taskwire/taskwire/mcp"
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

// checkParamHeaders compares every declared Mcp-Param-* header with the
// argument it mirrors. args is the JSON arguments object (empty when
// absent); a null argument counts as absent.
func checkParamHeaders(h http.Header, decls []mcp.ParamHeader, args json.RawMessage) *protocolError {
	var values map[string]json.RawMessage
	if len(args) > 0 {
		if err := json.Unmarshal(args, &values); err != nil {
			return invalidParams("Invalid params: arguments must be an object")
		}
	}
	for _, d := range decls {
		key := d.Key
		raw, present, err := singleHeader(h, key)
		if err != nil {
			return headerMismatch("Header mismatch: invalid " + key + " header")
		}
		val, hasVal := values[d.Property]
		if hasVal && string(bytes.TrimSpace(val)) == "null" {
			hasVal = false
		}
		if !hasVal {
			if present {
				return headerMismatch("Header mismatch: " + key + " has no matching argument")
			}
			continue
		}
		if !present {
			return headerMismatch("Header mismatch: missing " + key + " header")
		}
		got, err := mcp.DecodeHeaderValue(raw)
		if err != nil {
			return headerMismatch("Header mismatch: invalid " + key + " header")
		}
		if !d.Matches(got, val) {
			return headerMismatch("Header mismatch: " + key + " does not match the arguments")
		}
	}
	return nil
}

// expectedName returns the value Mcp-Name must carry for a method, and
// whether the method requires the header at all.
func expectedName(method string, p *rawParams) (string, bool) {
	return mcp.TargetName(method, p.Name, p.URI, p.TaskID)
}
