package server_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// pagedSource serves three resources in pages of two, one template and
// one prompt.
type pagedSource struct{}

func (pagedSource) ListResources(_ context.Context, _ *server.Request, cursor string) ([]*mcp.Resource, string, error) {
	all := []*mcp.Resource{{URI: "src://a", Name: "a"}, {URI: "src://b", Name: "b"}, {URI: "src://c", Name: "c"}}
	switch cursor {
	case "":
		return all[:2], "page-2 with any bytes: {\"}", nil
	case "page-2 with any bytes: {\"}":
		return all[2:], "", nil
	}
	return nil, "", mcp.InvalidParams("Invalid params: bad upstream cursor")
}

func (pagedSource) ListResourceTemplates(context.Context, *server.Request, string) ([]*mcp.ResourceTemplate, string, error) {
	return []*mcp.ResourceTemplate{{URITemplate: "src://t/{id}", Name: "t"}}, "", nil
}

func (pagedSource) ReadResource(_ context.Context, req *server.Request) (*mcp.ReadResourceResult, error) {
	if req.Name != "src://a" {
		return nil, server.ErrResourceNotFound
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Name, Text: "from the source"}}}, nil
}

func (pagedSource) ListPrompts(context.Context, *server.Request, string) ([]*mcp.Prompt, string, error) {
	return []*mcp.Prompt{{Name: "remote"}}, "", nil
}

func (pagedSource) GetPrompt(_ context.Context, req *server.Request, args map[string]string) (*mcp.GetPromptResult, error) {
	switch req.Name {
	case "remote":
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi " + args["who"]}}}}, nil
	case "refused":
		return nil, mcp.InvalidParams("Invalid params: the source refuses")
	}
	return nil, server.ErrPromptNotFound
}

func registerLocal(ep *server.Endpoint) {
	ep.AddResource(&mcp.Resource{URI: "file:///local", Name: "local"}, func(context.Context, *server.Request) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///local", Text: "local"}}}, nil
	})
	ep.AddPrompt(&mcp.Prompt{Name: "own"}, func(context.Context, *server.Request, map[string]string) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "own"}}}}, nil
	})
}

// TestResourceAndPromptSources: lists page through the endpoint's own
// items, then the source's pages, whatever the source's cursors hold;
// reads and gets fall through to the source, and an unknown URI or
// prompt answers exactly as on an endpoint without a source; list
// changes of sources reach listens that asked for them.
func TestResourceAndPromptSources(t *testing.T) {
	r := newLiveRig(t, server.EndpointOptions{}, func(ep *server.Endpoint) {
		registerLocal(ep)
		ep.SetResourceSource(pagedSource{})
		ep.SetPromptSource(pagedSource{})
	}, nil)
	plain := newLiveRig(t, server.EndpointOptions{}, registerLocal, nil)

	all := r.listAll(t, mcp.MethodResourcesList, "resources")
	if diff := cmp.Diff([]string{"local", "a", "b", "c"}, all); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if res := r.post(t, mcp.MethodResourcesList, `{"cursor":"bm9wZQ"}`); errorCode(res) != mcp.CodeInvalidParams {
		t.Errorf("bad cursor: %s", res.Body)
	}
	// No template of its own: the first page is the source's.
	tmpl, more := listedNames(t, r.post(t, mcp.MethodResourcesTemplatesList, `{}`), "resourceTemplates")
	if diff(t, []string{"t"}, tmpl) || more != "" {
		t.Errorf("templates: %v, next %q", tmpl, more)
	}

	if res := r.post(t, mcp.MethodResourcesRead, `{"uri":"src://a"}`); !strings.Contains(string(res.Result), "from the source") {
		t.Errorf("read from the source: %s", res.Body)
	}
	if res := r.post(t, mcp.MethodResourcesRead, `{"uri":"file:///local"}`); !strings.Contains(string(res.Result), `"text":"local"`) {
		t.Errorf("read of the endpoint's own: %s", res.Body)
	}
	unknown, plainUnknown := r.post(t, mcp.MethodResourcesRead, `{"uri":"src://zzz"}`), plain.post(t, mcp.MethodResourcesRead, `{"uri":"src://zzz"}`)
	if unknown.Status != plainUnknown.Status || string(unknown.Body) != string(plainUnknown.Body) {
		t.Errorf("unknown URI through the source:\n%s\nwithout a source:\n%s", unknown.Body, plainUnknown.Body)
	}

	prompts, _ := listedNames(t, r.post(t, mcp.MethodPromptsList, `{}`), "prompts")
	if diff(t, []string{"own"}, prompts) {
		t.Errorf("first prompts page: %v", prompts)
	}
	if res := r.post(t, mcp.MethodPromptsGet, `{"name":"remote","arguments":{"who":"bob"}}`); !strings.Contains(string(res.Result), "hi bob") {
		t.Errorf("get from the source: %s", res.Body)
	}
	if res := r.post(t, mcp.MethodPromptsGet, `{"name":"refused"}`); res.Error == nil || res.Error.Message != "Invalid params: the source refuses" {
		t.Errorf("source error: %s", res.Body)
	}
	pu, ppu := r.post(t, mcp.MethodPromptsGet, `{"name":"zzz"}`), plain.post(t, mcp.MethodPromptsGet, `{"name":"zzz"}`)
	if pu.Status != ppu.Status || string(pu.Body) != string(ppu.Body) {
		t.Errorf("unknown prompt through the source:\n%s\nwithout a source:\n%s", pu.Body, ppu.Body)
	}

	legacy := &legacyClient{t: t, url: r.url, auth: "Bearer alice"}
	legacy.mustInitialize("2025-11-25", `{}`)
	if rep := legacy.request(mcp.MethodResourcesRead, `{"uri":"src://a"}`); !strings.Contains(string(rep.final(t).Result), "from the source") {
		t.Errorf("2025 read from the source: %s", rep.body)
	}

	listen := openModernListen(t, r.url, `{"toolsListChanged":true,"resourcesListChanged":true,"promptsListChanged":true}`)
	if ack := next(t, listen); !strings.Contains(string(ack.Params), `"notifications":{"promptsListChanged":true,"resourcesListChanged":true}`) {
		t.Errorf("acknowledgement %s: want prompts and resources (no tools here)", ack.Params)
	}
	r.ep.NotifyListChanged(server.ListTools) // not asked for: the endpoint has no tools
	r.ep.NotifyListChanged(server.ListResources)
	if m := next(t, listen); m.Method != mcp.NotificationResourcesListChanged {
		t.Errorf("listen: %s, want resources/list_changed", m.Method)
	}
	r.ep.NotifyListChanged(server.ListPrompts)
	if m := next(t, listen); m.Method != mcp.NotificationPromptsListChanged {
		t.Errorf("listen: %s, want prompts/list_changed", m.Method)
	}
}

func diff(t *testing.T, want, got []string) bool {
	t.Helper()
	return cmp.Diff(want, got) != ""
}
