package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// upstream is the gateway's connection to the MCP server it fronts: over
// Streamable HTTP (httpUpstream) or over the stdio of a process it starts
// (stdioUpstream). Its errors use the client package's types, so that one
// classification (classify) serves both: a *client.RPCError for the
// upstream's JSON-RPC error, a *client.ConnectionError when the upstream
// could not be reached or went away mid-call, a *client.ProtocolError for
// an answer that breaks the protocol.
type upstream interface {
	// listTools lists every tool of the upstream, following its cursors.
	listTools(ctx context.Context) ([]*mcp.Tool, error)
	// callTool calls the tool name with the raw arguments (a JSON object)
	// and waits for its inline result, passing each progress notification
	// of the call to progress (from a goroutine of the connection: it must
	// not block).
	callTool(ctx context.Context, name string, args json.RawMessage, progress func(client.Progress)) (*mcp.CallToolResult, error)
	// The pass-through of resources, prompts and completion (catalog.go):
	// one page of a list from cursor, one read, one prompt, one completion.
	resourcesPage(ctx context.Context, cursor string) ([]*mcp.Resource, string, error)
	resourceTemplatesPage(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error)
	readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error)
	promptsPage(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error)
	getPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error)
	complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error)
	// subscribe and unsubscribe follow a resource's updates at the
	// upstream (subscribe.go), which arrive at the onResourceUpdated
	// the upstream was built with.
	subscribe(ctx context.Context, uri string) error
	unsubscribe(ctx context.Context, uri string) error
	// capabilities are what the upstream advertised when it connected
	// (nil when it has not); for a restarting process, its first run's.
	capabilities() *mcp.ServerCapabilities
	// protocolVersion is the revision negotiated with the upstream; for a
	// restarting process, the one of its latest run.
	protocolVersion() string
	// close ends the connection (and the process) and every goroutine of
	// the upstream; calls in flight fail. It is idempotent.
	close() error
}

// httpUpstream is an upstream over Streamable HTTP, the project's client.
type httpUpstream struct{ c *client.Client }

// newHTTPUpstream builds the client of opts.Upstream; it connects lazily,
// at the first request. onListChanged receives the upstream's list
// changes (client.Options.OnListChanged), onResourceUpdated its resource
// updates (client.Options.OnResourceUpdated).
func newHTTPUpstream(opts Options, onListChanged func(client.ListChange), onResourceUpdated func(string)) (*httpUpstream, error) {
	c, err := client.New(opts.Upstream, client.Options{
		OnListChanged:     onListChanged,
		OnResourceUpdated: onResourceUpdated,
		Transport:         opts.Transport,
		Header:            opts.UpstreamHeaders.Clone(),
		RequestTimeout:    max(opts.CallTimeout, opts.TaskCallTimeout, opts.ListTimeout, opts.maxToolTimeout()),
		ProtocolVersions:  opts.ProtocolVersions,
		ClientInfo:        mcp.Implementation{Name: "taskwire-gateway"},
		// The gateway runs the upstream's calls itself: it declares no
		// tasks, so that the upstream answers every call inline.
		DisableTasks: true,
		// Input the upstream asks for during a task run is relayed to the
		// task's client (relay.go).
		Handlers: relayHandlers(),
		Logger:   opts.Logger,
	})
	if err != nil {
		return nil, fmt.Errorf("upstream client: %w", err)
	}
	return &httpUpstream{c: c}, nil
}

func (u *httpUpstream) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	return u.c.ListTools(ctx)
}

func (u *httpUpstream) callTool(ctx context.Context, name string, args json.RawMessage, progress func(client.Progress)) (*mcp.CallToolResult, error) {
	res, err := u.c.Call(ctx, name, args, client.WithProgress(progress))
	switch {
	case err != nil:
		return nil, err
	case res.Task != nil || res.Result == nil:
		return nil, &client.ProtocolError{Method: "tools/call", Reason: "the upstream answered with a task the gateway did not ask for"}
	}
	return res.Result, nil
}

func (u *httpUpstream) protocolVersion() string { return u.c.ProtocolVersion() }

func (u *httpUpstream) close() error { return u.c.Close() }

func (u *httpUpstream) resourcesPage(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
	return u.c.ResourcesPage(ctx, cursor)
}

func (u *httpUpstream) resourceTemplatesPage(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
	return u.c.ResourceTemplatesPage(ctx, cursor)
}

func (u *httpUpstream) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	return u.c.ReadResource(ctx, uri)
}

func (u *httpUpstream) promptsPage(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
	return u.c.PromptsPage(ctx, cursor)
}

func (u *httpUpstream) getPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	return u.c.GetPrompt(ctx, name, args)
}

func (u *httpUpstream) complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var args map[string]string
	if p.Context != nil {
		args = p.Context.Arguments
	}
	return u.c.Complete(ctx, p.Ref, p.Argument, args)
}

func (u *httpUpstream) capabilities() *mcp.ServerCapabilities { return u.c.ServerCapabilities() }

// subscribe answers a 2026-07-28 upstream's listen that left the URI out
// of its acknowledgement as the upstream refusing it (-32602).
func (u *httpUpstream) subscribe(ctx context.Context, uri string) error {
	err := u.c.SubscribeResource(ctx, uri)
	if errors.Is(err, client.ErrNotAcknowledged) {
		return &client.RPCError{Code: mcp.CodeInvalidParams, Message: "Invalid params: the upstream server did not acknowledge a subscription to this resource"}
	}
	return err
}

func (u *httpUpstream) unsubscribe(ctx context.Context, uri string) error {
	return u.c.UnsubscribeResource(ctx, uri)
}
