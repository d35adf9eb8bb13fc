package client

import "github.com/taskwire/taskwire/mcp"

// legacyCallParams are tools/call params of a 2025-11-25 session, which may
// ask for a task with the "task" member.
type legacyCallParams struct {
	mcp.CallToolParams
	Task *mcp.TaskMetadata `json:"task,omitempty"`
}

// setMeta stores m as the request _meta of params when it is one of the
// 2026-07-28 params types (nil removes it, for 2025-era requests); other
// values are left alone.
func setMeta(params any, m *mcp.RequestMeta) {
	if p, ok := params.(mcp.RequestMetaCarrier); ok {
		p.SetMeta(m)
	}
}
