// Package skillserver serves a skills.Set on a server.Endpoint: the
// Skills extension (io.modelcontextprotocol/skills, declared with
// directoryRead), skills/list and skills/get, resources/directory/read,
// and every file of every skill as a resource read with resources/read.
// It works in both eras and over stdio, since it uses only the endpoint's
// registration API.
package skillserver

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/skills"
)

// Register serves set on ep. Each file becomes a resource (SKILL.md with
// the skill's name, description and text/markdown; text files as text,
// others as base64 blobs), and the extension is declared with
// {"directoryRead": true}. Lists are paged with the endpoint's page size
// (EndpointOptions.PageSize) and cursors; entries carry the endpoint's
// CacheTTL. Problems (such as a file URI already registered) are
// reported by server.New. It panics, as every registration does, if ep
// already belongs to a server.
func Register(ep *server.Endpoint, set *skills.Set) {
	for _, f := range set.Files() {
		ep.AddResource(set.Resource(f), read(f))
	}
	h := &handlers{set: set}
	ep.AddExtension(server.Extension{
		ID:       skills.ExtensionID,
		Settings: mcp.Object{skills.SettingDirectoryRead: json.RawMessage("true")},
		Methods: map[string]server.ExtensionHandler{
			skills.MethodList:          h.list,
			skills.MethodGet:           h.get,
			skills.MethodDirectoryRead: h.directory,
		},
	})
}

// read is the resources/read handler of one file; its contents are the
// file's bytes, unchanged (the digest covers them).
func read(f *skills.File) server.ResourceHandler {
	c := &mcp.ResourceContents{URI: f.URI, MIMEType: f.MIMEType}
	if utf8.Valid(f.Content) {
		c.Text = string(f.Content)
	} else {
		c.Blob = f.Content
	}
	return func(context.Context, *server.Request) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
	}
}

type handlers struct{ set *skills.Set }

func (h *handlers) list(_ context.Context, req *server.ExtensionRequest) (any, error) {
	all := h.set.Skills()
	lo, hi, next, err := req.Page(len(all))
	if err != nil {
		return nil, err
	}
	entries := make([]*skills.Entry, 0, hi-lo)
	for _, sk := range all[lo:hi] {
		entries = append(entries, sk.Entry)
	}
	return &skills.ListResult{
		ResultType: mcp.ResultComplete, Skills: entries, NextCursor: next,
		TTLMs: req.CacheTTL().Milliseconds(), CacheScope: req.CacheScope(),
	}, nil
}

func (h *handlers) get(_ context.Context, req *server.ExtensionRequest) (any, error) {
	uri := req.Name
	if uri == "" {
		return nil, mcp.InvalidParams("Invalid params: uri is required")
	}
	sk, ok := h.set.Skill(uri)
	if !ok {
		return nil, mcp.InvalidParams("No skill is served at this uri").WithData(map[string]string{"uri": uri})
	}
	return &skills.GetResult{
		ResultType: mcp.ResultComplete, Skill: sk.Entry,
		TTLMs: req.CacheTTL().Milliseconds(), CacheScope: req.CacheScope(),
	}, nil
}

func (h *handlers) directory(_ context.Context, req *server.ExtensionRequest) (any, error) {
	uri := req.Name
	if uri == "" {
		return nil, mcp.InvalidParams("Invalid params: uri is required")
	}
	kids, ok := h.set.Directory(uri)
	if !ok {
		return nil, mcp.InvalidParams("Not a directory resource").WithData(map[string]string{"uri": uri})
	}
	lo, hi, next, err := req.Page(len(kids))
	if err != nil {
		return nil, err
	}
	return &skills.DirectoryReadResult{ResultType: mcp.ResultComplete, Resources: kids[lo:hi], NextCursor: next}, nil
}
