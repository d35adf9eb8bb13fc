package server

import (
	"encoding/json"
	"strconv"

	"github.com/taskwire/taskwire/mcp"
)

// appendToolResult encodes the common shape of an inline tool result
// directly: text content blocks without annotations or _meta, optional
// structured content, isError and no _meta of its own; the server info is
// added as the result's _meta. It reports false for any other shape, which
// goes through encoding/json. The output is byte-identical to what
// json.Marshal produces for the same value.
func (ep *Endpoint) appendToolResult(dst []byte, r *mcp.CallToolResult) ([]byte, bool) {
	return mcp.AppendToolResult(dst, r, ep.serverMetaJSON)
}

// appendTaskResult encodes a tasks/get result directly for the shapes that
// carry no input requests and no task _meta, byte-identical to
// encoding/json; it reports false otherwise. d.Result must be compact JSON
// (as the delivery path produces it).
func (ep *Endpoint) appendTaskResult(dst []byte, d *mcp.DetailedTask) ([]byte, bool) {
	if d.Meta != nil || d.InputRequests != nil {
		return dst, false
	}
	dst = append(dst, `{"resultType":"complete","taskId":`...)
	dst = mcp.AppendString(dst, d.TaskID)
	dst = append(dst, `,"status":`...)
	dst = mcp.AppendString(dst, string(d.Status))
	if d.StatusMessage != "" {
		dst = append(dst, `,"statusMessage":`...)
		dst = mcp.AppendString(dst, d.StatusMessage)
	}
	dst = append(dst, `,"createdAt":`...)
	dst = mcp.AppendString(dst, d.CreatedAt)
	dst = append(dst, `,"lastUpdatedAt":`...)
	dst = mcp.AppendString(dst, d.LastUpdatedAt)
	dst = append(dst, `,"ttlMs":`...)
	if d.TTLMs == nil {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, *d.TTLMs, 10)
	}
	if d.PollIntervalMs != nil {
		dst = append(dst, `,"pollIntervalMs":`...)
		dst = strconv.AppendInt(dst, *d.PollIntervalMs, 10)
	}
	dst = append(dst, `,"_meta":`...)
	dst = append(dst, ep.serverMetaJSON...)
	if len(d.Result) > 0 {
		dst = append(dst, `,"result":`...)
		dst = append(dst, d.Result...)
	}
	if d.Error != nil {
		b, err := json.Marshal(d.Error)
		if err != nil {
			return dst, false
		}
		dst = append(dst, `,"error":`...)
		dst = append(dst, b...)
	}
	return append(dst, '}'), true
}
