package client

import (
	"context"

	"github.com/taskwire/taskwire/mcp"
)

// ListLegacyTasks returns the tasks the server lists for the client's
// 2025-11-25 session (tasks/list), following pagination within
// Options.MaxPages. Servers such as mcp-go list the tasks bound to the
// session. It is meaningful only in a 2025-11-25 session: a 2026-07-28
// server has no tasks/list and answers an *RPCError (-32601), as does a
// server that does not declare the tasks list capability.
func (c *Client) ListLegacyTasks(ctx context.Context) ([]mcp.LegacyTask, error) {
	return paginate(ctx, c, mcp.MethodTasksList, c.legacyTasksPage)
}

// legacyTasksPage is one page of tasks/list.
func (c *Client) legacyTasksPage(ctx context.Context, cursor string) ([]mcp.LegacyTask, string, error) {
	var res mcp.LegacyListTasksResult
	err := c.requestInto(ctx, mcp.MethodTasksList, &mcp.LegacyListTasksParams{Cursor: cursor}, nil, &res)
	return res.Tasks, res.NextCursor, err
}
