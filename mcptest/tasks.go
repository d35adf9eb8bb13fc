package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// GetTask sends tasks/get for id.
func (c *Client) GetTask(ctx context.Context, id string) (*Response, error) {
	return c.Call(ctx, mcp.MethodTasksGet, map[string]any{"taskId": id})
}

// UpdateTask sends tasks/update for id with the given input responses.
func (c *Client) UpdateTask(ctx context.Context, id string, responses mcp.InputResponses) (*Response, error) {
	return c.Call(ctx, mcp.MethodTasksUpdate, map[string]any{"taskId": id, "inputResponses": responses})
}

// CancelTask sends tasks/cancel for id.
func (c *Client) CancelTask(ctx context.Context, id string) (*Response, error) {
	return c.Call(ctx, mcp.MethodTasksCancel, map[string]any{"taskId": id})
}

// DeclareTasks adds the Tasks extension to the client's capabilities.
func (c *Client) DeclareTasks() {
	if c.Capabilities == nil {
		c.Capabilities = &mcp.ClientCapabilities{}
	}
	caps := *c.Capabilities
	exts := make(map[string]mcp.Object, len(caps.Extensions)+1)
	for k, v := range caps.Extensions {
		exts[k] = v
	}
	exts[mcp.ExtensionTasks] = mcp.Object{}
	caps.Extensions = exts
	c.Capabilities = &caps
}

// Task decodes a tasks/get result.
func (r *Response) Task() (*mcp.GetTaskResult, error) {
	var t mcp.GetTaskResult
	if err := r.DecodeResult(&t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TaskHandle decodes a tools/call result that created a task.
func (r *Response) TaskHandle() (*mcp.CreateTaskResult, error) {
	var t mcp.CreateTaskResult
	if err := r.DecodeResult(&t); err != nil {
		return nil, err
	}
	if t.ResultType != mcp.ResultTask {
		return nil, fmt.Errorf("mcptest: result type %q, want a task", t.ResultType)
	}
	return &t, nil
}

// Simulator drives a server off the network with a known task manager: the
// same instance the server was built with, so a test can move application
// state (complete a task, ask for input) between requests and observe the
// result through the production pipeline.
type Simulator struct {
	*Client
	// Manager is the manager the server was built with.
	Manager task.Manager
}

// NewSimulator builds a server with build, passing it m, and returns a
// simulator whose client talks to the endpoint at path. Build the server
// once per manager: to isolate a test, call NewSimulator with a fresh
// manager (for example a new store/memory.Manager) instead of the one
// production code uses.
func NewSimulator(build func(m task.Manager) (http.Handler, error), m task.Manager, path string) (*Simulator, error) {
	h, err := build(m)
	if err != nil {
		return nil, fmt.Errorf("mcptest: build server: %w", err)
	}
	c := NewClient(h, path)
	c.DeclareTasks()
	return &Simulator{Client: c, Manager: m}, nil
}

// Notification is one JSON-RPC notification captured from a stream.
type Notification struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// DecodeNotifications returns the notifications before the final response.
func (r *Response) DecodeNotifications() ([]Notification, error) {
	var out []Notification
	for _, m := range r.Notifications() {
		var n Notification
		if err := json.Unmarshal(m, &n); err != nil {
			return nil, fmt.Errorf("mcptest: notification: %w", err)
		}
		out = append(out, n)
	}
	return out, nil
}
