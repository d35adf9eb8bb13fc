package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestMalformedRequests covers every malformed input of the transport rules:
// each case asserts the HTTP status and the JSON-RPC error code.
func TestMalformedRequests(t *testing.T) {
	srv := newTestServer(t, nil)
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":` + metaJSON + `}}`
	deep := strings.Repeat("[", 200) + strings.Repeat("]", 200)
	tests := []struct {
		name       string
		req        *http.Request
		wantStatus int
		wantCode   int64
	}{
		{"GET is not allowed", httptest.NewRequest(http.MethodGet, "http://localhost/mcp", nil), 405, mcp.CodeInvalidRequest},
		{"DELETE is not allowed", httptest.NewRequest(http.MethodDelete, "http://localhost/mcp", nil), 405, mcp.CodeInvalidRequest},
		{"foreign Host", func() *http.Request {
			r := rawPost(discover, "server/discover", nil)
			r.Host = "evil.example.com"
			return r
		}(), 403, mcp.CodeInvalidRequest},
		{"foreign Origin", rawPost(discover, "server/discover", map[string]string{"Origin": "http://evil.example.com"}), 403, mcp.CodeInvalidRequest},
		{"null Origin", rawPost(discover, "server/discover", map[string]string{"Origin": "null"}), 403, mcp.CodeInvalidRequest},
		{"wrong Content-Type", rawPost(discover, "server/discover", map[string]string{"Content-Type": "text/plain"}), 415, mcp.CodeInvalidRequest},
		{"Accept without SSE", rawPost(discover, "server/discover", map[string]string{"Accept": "application/json"}), 406, mcp.CodeInvalidRequest},
		{"not JSON", rawPost(`{"jsonrpc":`, "server/discover", nil), 400, mcp.CodeParseError},
		{"nesting too deep", rawPost(deep, "server/discover", nil), 400, mcp.CodeParseError},
		{"batch", rawPost(`[`+discover+`]`, "server/discover", nil), 400, mcp.CodeInvalidRequest},
		{"jsonrpc 1.0", rawPost(`{"jsonrpc":"1.0","id":1,"method":"server/discover","params":{"_meta":`+metaJSON+`}}`, "server/discover", nil), 400, mcp.CodeInvalidRequest},
		{"missing method", rawPost(`{"jsonrpc":"2.0","id":1,"params":{}}`, "server/discover", nil), 400, mcp.CodeInvalidRequest},
		{"params array", rawPost(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":[]}`, "server/discover", nil), 400, mcp.CodeInvalidRequest},
		{"fractional id", rawPost(`{"jsonrpc":"2.0","id":1.5,"method":"server/discover","params":{"_meta":`+metaJSON+`}}`, "server/discover", nil), 400, mcp.CodeInvalidRequest},
		{"missing Mcp-Method", rawPost(discover, "", nil), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Method differs in case", rawPost(discover, "SERVER/DISCOVER", nil), 400, mcp.CodeHeaderMismatch},
		{"missing MCP-Protocol-Version", rawPost(discover, "server/discover", map[string]string{"MCP-Protocol-Version": ""}), 400, mcp.CodeHeaderMismatch},
		{"header version differs from _meta", rawPost(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}}`, "server/discover", nil), 400, mcp.CodeHeaderMismatch},
		{"missing params", rawPost(`{"jsonrpc":"2.0","id":1,"method":"server/discover"}`, "server/discover", nil), 400, mcp.CodeInvalidParams},
		{"missing _meta", rawPost(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, "server/discover", nil), 400, mcp.CodeInvalidParams},
		{"missing clientCapabilities", rawPost(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "server/discover", nil), 400, mcp.CodeInvalidParams},
		{"missing protocolVersion", rawPost(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{}}}}`, "server/discover", nil), 400, mcp.CodeInvalidParams},
		{"unsupported version", rawPost(`{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, "server/discover", map[string]string{"MCP-Protocol-Version": "2099-01-01"}), 400, mcp.CodeUnsupportedProtocolVersion},
		{"missing Mcp-Name", rawPost(callBody("echo", `{"text":"x"}`), "tools/call", nil), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Name differs", rawPost(callBody("echo", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "other"}), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Name with invalid base64", rawPost(callBody("echo", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "=?base64?!!!?="}), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Name upper-case sentinel is literal", rawPost(callBody("echo", `{"text":"x"}`), "tools/call", map[string]string{"Mcp-Name": "=?BASE64?ZWNobw==?="}), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Param missing", rawPost(callBody("headers", `{"region":"eu"}`), "tools/call", map[string]string{"Mcp-Name": "headers"}), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Param differs", rawPost(callBody("headers", `{"region":"eu"}`), "tools/call", map[string]string{"Mcp-Name": "headers", "Mcp-Param-Region": "us"}), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Param without argument", rawPost(callBody("headers", `{}`), "tools/call", map[string]string{"Mcp-Name": "headers", "Mcp-Param-Region": "us"}), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Param integer differs", rawPost(callBody("headers", `{"count":42}`), "tools/call", map[string]string{"Mcp-Name": "headers", "Mcp-Param-Count": "43"}), 400, mcp.CodeHeaderMismatch},
		{"Mcp-Param boolean differs", rawPost(callBody("headers", `{"dry":true}`), "tools/call", map[string]string{"Mcp-Name": "headers", "Mcp-Param-Dry": "false"}), 400, mcp.CodeHeaderMismatch},
		{"unknown method", rawPost(`{"jsonrpc":"2.0","id":1,"method":"nope/nope","params":{"_meta":`+metaJSON+`}}`, "nope/nope", nil), 404, mcp.CodeMethodNotFound},
		{"legacy initialize", rawPost(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"_meta":`+metaJSON+`}}`, "initialize", nil), 404, mcp.CodeMethodNotFound},
		{"removed ping", rawPost(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":`+metaJSON+`}}`, "ping", nil), 404, mcp.CodeMethodNotFound},
		{"tasks/list", rawPost(`{"jsonrpc":"2.0","id":1,"method":"tasks/list","params":{"_meta":`+metaJSON+`}}`, "tasks/list", nil), 404, mcp.CodeMethodNotFound},
		{"prompts/list without prompts", rawPost(`{"jsonrpc":"2.0","id":1,"method":"prompts/list","params":{"_meta":`+metaJSON+`}}`, "prompts/list", nil), 404, mcp.CodeMethodNotFound},
		{"unknown tool", rawPost(callBody("nope", `{}`), "tools/call", map[string]string{"Mcp-Name": "nope"}), 200, mcp.CodeInvalidParams},
		{"arguments not an object", rawPost(callBody("echo", `[1]`), "tools/call", map[string]string{"Mcp-Name": "echo"}), 200, mcp.CodeInvalidParams},
		{"bad cursor", rawPost(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"zzz","_meta":`+metaJSON+`}}`, "tools/list", nil), 200, mcp.CodeInvalidParams},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, srv, tt.req)
			if res.Status != tt.wantStatus || errorCode(res) != tt.wantCode {
				t.Fatalf("got HTTP %d code %d, want HTTP %d code %d; body %s", res.Status, errorCode(res), tt.wantStatus, tt.wantCode, res.Body)
			}
			if got := res.Header.Get("Cache-Control"); got != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", got)
			}
		})
	}
}

func TestMethodNotAllowedListsPOST(t *testing.T) {
	srv := newTestServer(t, nil)
	res := do(t, srv, httptest.NewRequest(http.MethodGet, "http://localhost/mcp", nil))
	if got := res.Header.Get("Allow"); got != "POST" {
		t.Errorf("Allow = %q, want POST", got)
	}
}

func TestUnknownPathIs404WithoutJSONRPC(t *testing.T) {
	srv := newTestServer(t, nil)
	r := rawPost(`{}`, "server/discover", nil)
	r.URL.Path = "/other"
	res := do(t, srv, r)
	if res.Status != 404 || res.Error != nil {
		t.Fatalf("got HTTP %d error %v, want plain 404", res.Status, res.Error)
	}
}

func TestErrorDataShapes(t *testing.T) {
	srv := newTestServer(t, nil)
	res := do(t, srv, rawPost(`{"jsonrpc":"2.0","id":"a","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`, "server/discover", map[string]string{"MCP-Protocol-Version": "2099-01-01"}))
	want := `{"jsonrpc":"2.0","id":"a","error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2099-01-01"}}}`
	if diff := cmp.Diff(want, string(res.Body)); diff != "" {
		t.Errorf("body mismatch (-want +got):\n%s", diff)
	}
}

func TestNotificationIsAccepted(t *testing.T) {
	srv := newTestServer(t, nil)
	res := do(t, srv, rawPost(`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`, "notifications/initialized", nil))
	if res.Status != http.StatusAccepted || len(res.Body) != 0 {
		t.Fatalf("got HTTP %d body %q, want 202 without body", res.Status, res.Body)
	}
}

func TestAllowedOriginsAndHosts(t *testing.T) {
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":` + metaJSON + `}}`
	tests := []struct {
		name    string
		hosts   []string
		origins []string
		host    string
		origin  string
		want    int
	}{
		{"loopback default", nil, nil, "127.0.0.1:8080", "http://localhost:3000", 200},
		{"ipv6 loopback", nil, nil, "[::1]:8080", "http://[::1]:3000", 200},
		{"configured host", []string{"mcp.example.com"}, nil, "mcp.example.com", "", 200},
		{"configured host rejects loopback", []string{"mcp.example.com"}, nil, "localhost", "", 403},
		{"configured origin", nil, []string{"https://app.example.com"}, "localhost", "https://app.example.com", 200},
		{"configured origin rejects other", nil, []string{"https://app.example.com"}, "localhost", "https://evil.example.com", 403},
		{"origin with path is not an origin", nil, nil, "localhost", "http://localhost/x", 403},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) {
				o.AllowedHosts, o.AllowedOrigins = tt.hosts, tt.origins
			})
			r := rawPost(discover, "server/discover", map[string]string{"Origin": tt.origin})
			r.Host = tt.host
			if res := do(t, srv, r); res.Status != tt.want {
				t.Fatalf("got HTTP %d, want %d; body %s", res.Status, tt.want, res.Body)
			}
		})
	}
}

func TestBodyLimit(t *testing.T) {
	srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) { o.MaxBodyBytes = 256 })
	big := callBody("echo", `{"text":"`+strings.Repeat("x", 1024)+`"}`)
	res := do(t, srv, rawPost(big, "tools/call", map[string]string{"Mcp-Name": "echo"}))
	if res.Status != http.StatusRequestEntityTooLarge || errorCode(res) != mcp.CodeInvalidRequest {
		t.Fatalf("got HTTP %d code %d, want 413 -32600", res.Status, errorCode(res))
	}
}

func TestMirroredHeadersAccepted(t *testing.T) {
	srv := newTestServer(t, nil)
	tests := []struct {
		name    string
		args    string
		headers map[string]string
	}{
		{"string", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "eu"}},
		{"string base64", `{"region":"über"}`, map[string]string{"Mcp-Param-Region": "=?base64?w7xiZXI=?="}},
		{"integer compares numerically", `{"count":42}`, map[string]string{"Mcp-Param-Count": "42.0"}},
		{"boolean", `{"dry":false}`, map[string]string{"Mcp-Param-Dry": "false"}},
		{"null argument needs no header", `{"region":null}`, nil},
		{"surrounding white space is trimmed", `{"region":"eu"}`, map[string]string{"Mcp-Param-Region": "  eu "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{"Mcp-Name": "headers"}
			for k, v := range tt.headers {
				h[k] = v
			}
			res := do(t, srv, rawPost(callBody("headers", tt.args), "tools/call", h))
			if res.Status != 200 || res.Error != nil {
				t.Fatalf("got HTTP %d error %v; body %s", res.Status, res.Error, res.Body)
			}
		})
	}
}

func TestBase64MirroredName(t *testing.T) {
	srv := newTestServer(t, nil)
	res := do(t, srv, rawPost(callBody("echo", `{"text":"hi"}`), "tools/call", map[string]string{"Mcp-Name": "=?base64?ZWNobw==?="}))
	if res.Status != 200 || res.Error != nil {
		t.Fatalf("got HTTP %d error %v", res.Status, res.Error)
	}
	var out mcp.CallToolResult
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"echo":"hi"}`, string(out.StructuredContent)); diff != "" {
		t.Errorf("structuredContent (-want +got):\n%s", diff)
	}
}
