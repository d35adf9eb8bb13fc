package client

import "github.com/taskwire/taskwire/mcp"

// legacyCallParams are tools/call params of a 2025-11-25 session, which may
// ask for a task with the "task" member.
type legacyCallParams struct {
	mcp.CallToolParams
	Task *mcp.TaskMetadata `json:"task,omitempty"`
}

// setMeta stores m as the request _meta of the params types this package
// sends (nil removes it, for 2025-era requests).
func setMeta(params any, m *mcp.RequestMeta) {
	switch p := params.(type) {
	case *mcp.DiscoverParams:
		p.Meta = m
	case *mcp.ListToolsParams:
		p.Meta = m
	case *mcp.CallToolParams:
		p.Meta = m
	case *legacyCallParams:
		p.Meta = m
	case *mcp.ListPromptsParams:
		p.Meta = m
	case *mcp.GetPromptParams:
		p.Meta = m
	case *mcp.ListResourcesParams:
		p.Meta = m
	case *mcp.ListResourceTemplatesParams:
		p.Meta = m
	case *mcp.ReadResourceParams:
		p.Meta = m
	case *mcp.CompleteParams:
		p.Meta = m
	case *mcp.TaskParams:
		p.Meta = m
	case *mcp.UpdateTaskParams:
		p.Meta = m
	case *mcp.ListenParams:
		p.Meta = m
	}
}
