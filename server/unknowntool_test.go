package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

// unknownToolNames are tool names a client may send, with the message of
// the -32602 they get: the name quoted in ASCII only, cut after 128 bytes.
var unknownToolNames = []struct{ name, want string }{
	{"nope", `Invalid params: unknown tool "nope"`},
	{`say "hi" \ bye`, `Invalid params: unknown tool "say \"hi\" \\ bye"`},
	{"tab\there\x1b[31mred\n", `Invalid params: unknown tool "tab\there\x1b[31mred\n"`},
	{"é\u202emoc.evil", `Invalid params: unknown tool "\u00e9\u202emoc.evil"`},
	{strings.Repeat("a", 128), `Invalid params: unknown tool "` + strings.Repeat("a", 128) + `"`},
	{strings.Repeat("a", 300), `Invalid params: unknown tool "` + strings.Repeat("a", 128) + `" (cut)`},
	{strings.Repeat("a", 127) + "éz", `Invalid params: unknown tool "` + strings.Repeat("a", 127) + `" (cut)`},
}

// TestUnknownToolNamesTheTool: a tools/call of an unknown tool, in the
// 2026-07-28 era, gets a -32602 that names the tool, quoted and bounded;
// a tool the catalog policy hides from the caller gets the very bytes a
// server without that tool sends.
func TestUnknownToolNamesTheTool(t *testing.T) {
	hiding := newTestServer(t, func(o *server.Options, _ *server.Endpoint) { o.CatalogPolicy = hideTool("echo") })
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "test", Version: "1.0.0"})
	ep.AddRawTool(&mcp.Tool{Name: "other", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(context.Context, *server.Request) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	bare, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	call := func(h http.Handler, name string) *mcptest.Response {
		n, _ := json.Marshal(name)
		body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":` + string(n) + `,"arguments":{},"_meta":` + metaJSON + `}}`
		return do(t, h, rawPost(body, "tools/call", map[string]string{"Mcp-Name": mcp.EncodeHeaderValue(name)}))
	}
	for _, tc := range unknownToolNames {
		res := call(hiding, tc.name)
		if diff := cmp.Diff(&mcp.Error{Code: mcp.CodeInvalidParams, Message: tc.want}, res.Error); diff != "" || res.Status != http.StatusOK {
			t.Errorf("%.20q: HTTP %d (-want +got):\n%s", tc.name, res.Status, diff)
		}
	}
	hidden, unknown := call(hiding, "echo"), call(bare, "echo")
	if diff := cmp.Diff(string(unknown.Body), string(hidden.Body)); diff != "" || hidden.Status != unknown.Status {
		t.Errorf("hidden and unknown differ (-unknown +hidden):\n%s", diff)
	}
	if diff := cmp.Diff(`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: unknown tool \"echo\""}}`, string(hidden.Body)); diff != "" {
		t.Errorf("hidden tool (-want +got):\n%s", diff)
	}
}

// TestLegacyUnknownToolNamesTheTool: the same in a 2025 session, over
// real HTTP, for an unknown tool and one the catalog policy hides.
func TestLegacyUnknownToolNamesTheTool(t *testing.T) {
	c := newLegacyRig(t, newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) { o.CatalogPolicy = hideTool("echo") }))
	c.mustInitialize("2025-06-18", `{}`)
	c.version = "2025-06-18"
	// The 2026-07-28 era refuses an empty name earlier (Mcp-Name); a 2025
	// session looks it up.
	cases := append(slices.Clip(unknownToolNames), []struct{ name, want string }{
		{"", `Invalid params: unknown tool ""`},
		{"echo", `Invalid params: unknown tool "echo"`},
	}...)
	for _, tc := range cases {
		n, _ := json.Marshal(tc.name)
		rep := c.request("tools/call", `{"name":`+string(n)+`,"arguments":{}}`)
		want, _ := json.Marshal(struct {
			JSONRPC string     `json:"jsonrpc"`
			ID      int        `json:"id"`
			Error   *mcp.Error `json:"error"`
		}{"2.0", 1, &mcp.Error{Code: mcp.CodeInvalidParams, Message: tc.want}})
		if diff := cmp.Diff(string(want), strings.TrimSpace(string(rep.body))); diff != "" || rep.status != http.StatusOK {
			t.Errorf("%.20q: HTTP %d (-want +got):\n%s", tc.name, rep.status, diff)
		}
	}
}
