package client

import (
	"encoding/json"
	"net/http"

	"github.com/taskwire/taskwire/mcp"
)

// toolEntry is a listed tool with what the client derived from it.
type toolEntry struct {
	tool        *mcp.Tool
	headers     []mcp.ParamHeader // its x-mcp-header declarations (mcp.ParseParamHeaders)
	taskSupport string            // 2025-11-25 execution.taskSupport
	// invalid is why the tool's x-mcp-header declarations are unusable;
	// such a tool is not listed and Call refuses it.
	invalid error
}

// paramHeaders returns the Mcp-Param-* headers of a call with args (the
// JSON object of arguments). Null and absent arguments send no header; a
// value of the wrong type sends none either (the server rejects the call).
func paramHeaders(decls []mcp.ParamHeader, args json.RawMessage) http.Header {
	h := http.Header{}
	if len(decls) == 0 || len(args) == 0 {
		return h
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(args, &m) != nil {
		return h
	}
	for _, d := range decls {
		if v, ok := d.Value(m[d.Property]); ok {
			h[d.Key] = []string{mcp.EncodeHeaderValue(v)}
		}
	}
	return h
}

// nameHeader returns the Mcp-Name header of a request whose target is v.
func nameHeader(v string) http.Header {
	return http.Header{mcp.HeaderName: {mcp.EncodeHeaderValue(v)}}
}
