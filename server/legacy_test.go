package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

func TestLegacyInitializeNegotiates(t *testing.T) {
	c := newLegacyRig(t, newLegacyCatalog(t, nil))
	tests := []struct {
		requested, want string
	}{
		{"2025-11-25", "2025-11-25"},
		{"2025-06-18", "2025-06-18"},
		{"2025-03-26", "2025-11-25"},
		{"2024-11-05", "2025-11-25"},
		{"2099-01-01", "2025-11-25"},
	}
	for _, tt := range tests {
		t.Run(tt.requested, func(t *testing.T) {
			cl := c.clone()
			cl.t = t
			rep := cl.initialize(tt.requested, `{}`)
			if rep.status != http.StatusOK {
				t.Fatalf("status %d, body %s", rep.status, rep.body)
			}
			sid := rep.header.Get("Mcp-Session-Id")
			if len(sid) < 22 || strings.ContainsFunc(sid, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
				t.Errorf("session ID %q is not long visible ASCII", sid)
			}
			var res mcp.InitializeResult
			if err := json.Unmarshal(rep.final(t).Result, &res); err != nil {
				t.Fatal(err)
			}
			if res.ProtocolVersion != tt.want {
				t.Errorf("negotiated %q, want %q", res.ProtocolVersion, tt.want)
			}
			if res.ServerInfo == nil || res.ServerInfo.Name != "catalog" || res.Capabilities == nil || res.Capabilities.Tools == nil ||
				res.Capabilities.Resources == nil || !res.Capabilities.Resources.Subscribe || res.Capabilities.Logging == nil {
				t.Errorf("initialize result = %s", rep.final(t).Result)
			}
			for _, banned := range []string{"resultType", "io.modelcontextprotocol/serverInfo"} {
				if strings.Contains(string(rep.final(t).Result), banned) {
					t.Errorf("initialize result carries %s: %s", banned, rep.final(t).Result)
				}
			}
		})
	}
	a, b := c.clone(), c.clone()
	a.initialize("2025-11-25", `{}`)
	b.initialize("2025-11-25", `{}`)
	if a.sid == b.sid {
		t.Error("two sessions got the same ID")
	}
}

// TestLegacySessionRules covers the session header rules: each case is one
// POST after a successful initialize, with its status and error code.
func TestLegacySessionRules(t *testing.T) {
	base := newLegacyRig(t, newLegacyCatalog(t, nil))
	base.mustInitialize("2025-11-25", `{}`)
	other := base.clone()
	other.auth = "Bearer mallory"
	ping := `{"jsonrpc":"2.0","id":5,"method":"ping"}`
	tests := []struct {
		name       string
		mutate     func(c *legacyClient)
		body       string
		wantStatus int
		wantCode   int64
	}{
		{"ping in the session", nil, ping, 200, 0},
		{"missing session ID", func(c *legacyClient) { c.sid = "" }, ping, 400, mcp.CodeInvalidRequest},
		{"unknown session ID", func(c *legacyClient) { c.sid = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" }, ping, 404, -32001},
		{"huge session ID", func(c *legacyClient) { c.sid = strings.Repeat("A", 10_000) }, ping, 404, -32001},
		{"non-ASCII session ID", func(c *legacyClient) { c.sid = "caf\u00e9" }, ping, 404, -32001},
		{"another principal's session", func(c *legacyClient) { c.auth = "Bearer mallory" }, ping, 404, -32001},
		{"2025-03-26 header inside a 2025-11-25 session", func(c *legacyClient) { c.version = "2025-03-26" }, ping, 200, 0},
		{"2025-06-18 header inside a 2025-11-25 session", func(c *legacyClient) { c.version = "2025-06-18" }, ping, 200, 0},
		{"unknown version header", func(c *legacyClient) { c.version = "2024-01-01" }, ping, 400, mcp.CodeUnsupportedProtocolVersion},
		{"client notification", nil, `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`, 202, 0},
		{"batch", nil, `[` + ping + `]`, 400, mcp.CodeInvalidRequest},
		{"unknown method", nil, `{"jsonrpc":"2.0","id":5,"method":"server/discover"}`, 200, mcp.CodeMethodNotFound},
		{"modern-only method", nil, `{"jsonrpc":"2.0","id":5,"method":"subscriptions/listen","params":{}}`, 200, mcp.CodeMethodNotFound},
		{"response to no request", nil, `{"jsonrpc":"2.0","id":"tw.n1.00000000000000000000000000000000","result":{}}`, 400, mcp.CodeInvalidRequest},
		{"response naming another node is forwarded", nil, `{"jsonrpc":"2.0","id":"tw.n2.00000000000000000000000000000000","result":{}}`, 202, 0},
		{"malformed response", nil, `{"jsonrpc":"2.0","id":"tw.n1.00000000000000000000000000000000","result":{},"error":{"code":1,"message":"x"}}`, 400, mcp.CodeInvalidRequest},
		{"response with a foreign id shape", nil, `{"jsonrpc":"2.0","id":3,"result":{}}`, 400, mcp.CodeInvalidRequest},
		{"malformed params", nil, `{"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"cursor":1}}`, 400, mcp.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base.clone()
			c.t = t
			if tt.mutate != nil {
				tt.mutate(c)
			}
			rep := c.send(tt.body)
			if rep.status != tt.wantStatus {
				t.Fatalf("status %d, want %d (body %s)", rep.status, tt.wantStatus, rep.body)
			}
			var code int64
			if len(rep.msgs) > 0 && rep.final(t).Error != nil {
				code = rep.final(t).Error.Code
			}
			if code != tt.wantCode {
				t.Errorf("code %d, want %d (body %s)", code, tt.wantCode, rep.body)
			}
		})
	}
	// Unknown, malformed and foreign IDs get the same bytes.
	unknown := base.clone()
	unknown.sid = "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
	want := unknown.send(ping).body
	for _, c := range []*legacyClient{other, func() *legacyClient { c := base.clone(); c.sid = strings.Repeat("z", 129); return c }()} {
		if got := c.send(ping).body; string(got) != string(want) {
			t.Errorf("not-found bytes differ: %q vs %q", got, want)
		}
	}
}

func TestLegacyHeaderBodyMismatch(t *testing.T) {
	c := newLegacyRig(t, newLegacyCatalog(t, nil))
	c.mustInitialize("2025-11-25", `{}`)
	tests := []struct {
		name    string
		headers map[string]string
		body    string
	}{
		{"Mcp-Method differs", map[string]string{"Mcp-Method": "tools/list"}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
		{"Mcp-Name differs", map[string]string{"Mcp-Method": "tools/call", "Mcp-Name": "fail"},
			`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`},
		{"repeated version header", map[string]string{"MCP-Protocol-Version": "2025-11-25,2025-06-18"}, `{"jsonrpc":"2.0","id":1,"method":"ping"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.newPost(t.Context(), tt.body)
			for k, v := range tt.headers {
				if strings.Contains(v, ",") {
					for _, part := range strings.Split(v, ",") {
						r.Header.Add(k, part)
					}
					continue
				}
				r.Header.Set(k, v)
			}
			rep := c.do(r)
			if rep.status != http.StatusBadRequest || rep.final(t).Error == nil || rep.final(t).Error.Code != mcp.CodeHeaderMismatch {
				t.Errorf("status %d body %s, want 400 -32020", rep.status, rep.body)
			}
		})
	}
}

func TestLegacyDeleteEndsSession(t *testing.T) {
	c := newLegacyRig(t, newLegacyCatalog(t, nil))
	c.mustInitialize("2025-06-18", `{}`)
	del := func(cl *legacyClient) int {
		r, _ := http.NewRequest(http.MethodDelete, cl.url, nil)
		r.Header.Set("Mcp-Session-Id", cl.sid)
		if cl.auth != "" {
			r.Header.Set("Authorization", cl.auth)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	foreign := c.clone()
	foreign.auth = "Bearer mallory"
	if got := del(foreign); got != http.StatusNotFound {
		t.Errorf("DELETE by another principal: %d, want 404", got)
	}
	if rep := c.request("ping", ""); rep.status != http.StatusOK {
		t.Fatalf("ping after a foreign DELETE: %d", rep.status)
	}
	if got := del(c); got != http.StatusOK {
		t.Errorf("DELETE: %d, want 200", got)
	}
	if rep := c.request("ping", ""); rep.status != http.StatusNotFound {
		t.Errorf("ping after DELETE: %d, want 404", rep.status)
	}
	if got := del(c); got != http.StatusNotFound {
		t.Errorf("second DELETE: %d, want 404", got)
	}
}

// TestLegacyResultShapes checks that the registrations serve the 2025 era
// in its own shapes: no resultType, no serverInfo _meta, no cache members,
// execution on tools in 2025-11-25 only.
func TestLegacyResultShapes(t *testing.T) {
	srv := newLegacyCatalog(t, nil)
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		t.Run(version, func(t *testing.T) {
			c := newLegacyRig(t, srv)
			c.mustInitialize(version, `{}`)
			calls := []struct{ method, params, want string }{
				{"tools/call", `{"name":"echo","arguments":{"text":"hi"}}`, `"structuredContent":{"echo":"hi"}`},
				{"tools/call", `{"name":"fail","arguments":{}}`, `"isError":true`},
				{"resources/list", ``, `"uri":"file:///readme.md"`},
				{"resources/templates/list", ``, `"uriTemplate":"file:///logs/{day}"`},
				{"resources/read", `{"uri":"file:///logs/monday"}`, `"text":"log of file:///logs/monday"`},
				{"prompts/list", ``, `"name":"greet"`},
				{"prompts/get", `{"name":"greet","arguments":{"name":"Ada"}}`, `Hello, Ada!`},
				{"completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}}`, `"albert"`},
				{"ping", ``, `{}`},
			}
			for _, cl := range calls {
				rep := c.request(cl.method, cl.params)
				m := rep.final(t)
				if rep.status != http.StatusOK || m.Error != nil {
					t.Errorf("%s: status %d body %s", cl.method, rep.status, rep.body)
					continue
				}
				res := string(m.Result)
				if !strings.Contains(res, cl.want) {
					t.Errorf("%s: result %s lacks %s", cl.method, res, cl.want)
				}
				for _, banned := range []string{"resultType", "serverInfo", "ttlMs", "cacheScope"} {
					if strings.Contains(res, banned) {
						t.Errorf("%s: result carries %s: %s", cl.method, banned, res)
					}
				}
			}
			rep := c.request("tools/list", "")
			var list struct {
				Tools []struct {
					Name      string             `json:"name"`
					Execution *mcp.ToolExecution `json:"execution"`
				} `json:"tools"`
			}
			if err := json.Unmarshal(rep.final(t).Result, &list); err != nil || len(list.Tools) == 0 {
				t.Fatalf("tools/list: %v %s", err, rep.body)
			}
			for _, tool := range list.Tools {
				var want *mcp.ToolExecution
				if version == "2025-11-25" {
					want = &mcp.ToolExecution{TaskSupport: mcp.TaskSupportForbidden}
				}
				if diff := cmp.Diff(want, tool.Execution); diff != "" {
					t.Errorf("tool %s execution (-want +got):\n%s", tool.Name, diff)
				}
			}
		})
	}
}

// TestLegacyClassifier checks the era classifier: modern requests keep
// their pipeline (and ignore Mcp-Session-Id) on an endpoint that also
// serves 2025, and a modern-only endpoint refuses a 2025 initialize.
func TestLegacyClassifier(t *testing.T) {
	srv := newLegacyCatalog(t, nil)
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{}`)
	modern := c.clone()
	modern.version = "2026-07-28"
	r := modern.newPost(t.Context(), rpc("tools/call", `"name":"echo","arguments":{"text":"m"}`, `{}`))
	r.Header.Set("Mcp-Method", "tools/call")
	r.Header.Set("Mcp-Name", "echo")
	rep := modern.do(r)
	if rep.status != http.StatusOK || !strings.Contains(string(rep.body), `"resultType":"complete"`) || !strings.Contains(string(rep.body), "io.modelcontextprotocol/serverInfo") {
		t.Errorf("modern call with a session header: %d %s", rep.status, rep.body)
	}
	// _meta alone claims the modern era: without the mirrored headers the
	// modern pipeline answers -32020.
	noHeader := c.clone()
	noHeader.sid = ""
	rep = noHeader.send(rpc("tools/list", "", `{}`))
	if rep.status != http.StatusBadRequest || rep.final(t).Error.Code != mcp.CodeHeaderMismatch {
		t.Errorf("_meta-claimed modern request: %d %s", rep.status, rep.body)
	}
	// A modern-enveloped initialize is not a session opener.
	r = modern.newPost(t.Context(), rpc("initialize", `"protocolVersion":"2025-11-25"`, `{}`))
	r.Header.Set("Mcp-Method", "initialize")
	if rep := modern.do(r); rep.status != http.StatusNotFound || rep.final(t).Error.Code != mcp.CodeMethodNotFound {
		t.Errorf("modern initialize: %d %s", rep.status, rep.body)
	}

	// A GET naming a session but the modern revision is a modern GET: 405.
	g, _ := http.NewRequest(http.MethodGet, c.url, nil)
	g.Header.Set("Accept", "text/event-stream")
	g.Header.Set("Mcp-Session-Id", c.sid)
	g.Header.Set("MCP-Protocol-Version", "2026-07-28")
	if res, err := http.DefaultClient.Do(g); err != nil || res.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("modern GET with a session header: %v %v", res.StatusCode, err)
	}

	modernOnly := newLegacyRig(t, newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) {
		*ep = *server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "m", Version: "1", ProtocolVersions: []string{mcp.LatestProtocolVersion}})
	}))
	rep = modernOnly.initialize("2025-11-25", `{}`)
	m := rep.final(t)
	if rep.status != http.StatusBadRequest || m.Error == nil || m.Error.Code != mcp.CodeUnsupportedProtocolVersion {
		t.Fatalf("legacy initialize to a modern-only endpoint: %d %s", rep.status, rep.body)
	}
	var data mcp.UnsupportedVersionData
	if err := json.Unmarshal(m.Error.Data, &data); err != nil || !cmp.Equal(data.Supported, []string{mcp.LatestProtocolVersion}) {
		t.Errorf("-32022 data = %s", m.Error.Data)
	}
	if rep.header.Get("Mcp-Session-Id") != "" {
		t.Error("a refused initialize minted a session")
	}
}

// TestLegacyMirroredParams: tools that declare x-mcp-header serve 2025
// clients, which mirror nothing; a mirrored header that is sent anyway
// must agree with the arguments.
func TestLegacyMirroredParams(t *testing.T) {
	c := newLegacyRig(t, newTestServer(t, nil))
	c.mustInitialize("2025-11-25", `{}`)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"headers","arguments":{"region":"eu","count":3}}}`
	if rep := c.send(body); rep.status != http.StatusOK || rep.final(t).Error != nil {
		t.Errorf("call without mirrored headers: %d %s", rep.status, rep.body)
	}
	r := c.newPost(t.Context(), body)
	r.Header.Set("Mcp-Param-Region", "us")
	if rep := c.do(r); rep.status != http.StatusBadRequest || rep.final(t).Error == nil || rep.final(t).Error.Code != mcp.CodeHeaderMismatch {
		t.Errorf("call with a disagreeing mirrored header: %d %s", rep.status, rep.body)
	}
	r = c.newPost(t.Context(), body)
	r.Header.Set("Mcp-Param-Region", "eu")
	if rep := c.do(r); rep.final(t).Error != nil {
		t.Errorf("call with an agreeing mirrored header: %s", rep.body)
	}
}
