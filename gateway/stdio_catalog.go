package gateway

import (
	"context"
	"encoding/json"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// listChangeOf is the list a list_changed notification of the stdio
// upstream names; 0 for any other method.
func listChangeOf(method string) client.ListChange {
	switch method {
	case mcp.NotificationToolsListChanged:
		return client.ToolsChanged
	case mcp.NotificationPromptsListChanged:
		return client.PromptsChanged
	case mcp.NotificationResourcesListChanged:
		return client.ResourcesChanged
	}
	return 0
}

// modernCapabilities maps what a 2025-era upstream advertised in
// initialize to the members the catalog reads; nil for nil.
func modernCapabilities(l *mcp.LegacyServerCapabilities) *mcp.ServerCapabilities {
	if l == nil {
		return nil
	}
	return &mcp.ServerCapabilities{Completions: l.Completions, Prompts: l.Prompts, Resources: l.Resources, Tools: l.Tools}
}

// requestInto sends one request to the running process (waiting for a
// restart as calls do) and decodes its result into out.
func (u *stdioUpstream) requestInto(ctx context.Context, method string, params, out any) error {
	c, err := u.current(ctx, method)
	if err != nil {
		return err
	}
	raw, err := u.requestOn(ctx, c, method, params, nil)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &client.ProtocolError{Method: method, Reason: "a malformed result", Err: err}
	}
	return nil
}

func (u *stdioUpstream) resourcesPage(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
	var res mcp.ListResourcesResult
	err := u.requestInto(ctx, mcp.MethodResourcesList, &mcp.ListResourcesParams{Cursor: cursor}, &res)
	return res.Resources, res.NextCursor, err
}

func (u *stdioUpstream) resourceTemplatesPage(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
	var res mcp.ListResourceTemplatesResult
	err := u.requestInto(ctx, mcp.MethodResourcesTemplatesList, &mcp.ListResourceTemplatesParams{Cursor: cursor}, &res)
	return res.ResourceTemplates, res.NextCursor, err
}

func (u *stdioUpstream) readResource(ctx context.Context, uri string) (*mcp.ReadResourceResult, error) {
	var res mcp.ReadResourceResult
	if err := u.requestInto(ctx, mcp.MethodResourcesRead, &mcp.ReadResourceParams{URI: uri}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (u *stdioUpstream) promptsPage(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
	var res mcp.ListPromptsResult
	err := u.requestInto(ctx, mcp.MethodPromptsList, &mcp.ListPromptsParams{Cursor: cursor}, &res)
	return res.Prompts, res.NextCursor, err
}

func (u *stdioUpstream) getPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	var res mcp.GetPromptResult
	if err := u.requestInto(ctx, mcp.MethodPromptsGet, &mcp.GetPromptParams{Name: name, Arguments: args}, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (u *stdioUpstream) complete(ctx context.Context, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	var res mcp.CompleteResult
	if err := u.requestInto(ctx, mcp.MethodCompletionComplete, p, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

func (u *stdioUpstream) capabilities() *mcp.ServerCapabilities { return u.caps }

func (u *stdioUpstream) subscribe(ctx context.Context, uri string) error {
	return u.requestInto(ctx, mcp.MethodResourcesSubscribe, &mcp.SubscribeParams{URI: uri}, &struct{}{})
}

func (u *stdioUpstream) unsubscribe(ctx context.Context, uri string) error {
	return u.requestInto(ctx, mcp.MethodResourcesUnsubscribe, &mcp.SubscribeParams{URI: uri}, &struct{}{})
}
