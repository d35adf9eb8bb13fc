package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/internal/schemacheck"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

// Fuzz targets of the request pipeline. Each runs its seed corpus under
// go test; explore with, for example:
//
//	go test -run '^$' -fuzz FuzzEnvelope -fuzztime 20s ./server
//
// FuzzHeaderValue, which needs unexported functions, is in
// fuzz_internal_test.go.

// fuzzBodyLimit is MaxBodyBytes of newCatalogServer.
const fuzzBodyLimit = 64 << 10

// statusTable lists the HTTP statuses each JSON-RPC error code may be sent
// with (the status table of the architecture).
var statusTable = map[int64][]int{
	mcp.CodeParseError:                      {400},
	mcp.CodeInvalidRequest:                  {400, 401, 403, 405, 406, 413, 415},
	mcp.CodeMethodNotFound:                  {404},
	mcp.CodeInvalidParams:                   {200, 400},
	mcp.CodeInternalError:                   {200, 503, 504},
	mcp.CodeHeaderMismatch:                  {400},
	mcp.CodeMissingRequiredClientCapability: {400},
	mcp.CodeUnsupportedProtocolVersion:      {400},
	server.CodeRateLimited:                  {429},
}

// checkResponse asserts the invariants every response of the pipeline keeps
// and returns it parsed. A notification is answered 202 without a body;
// anything else is a JSON-RPC response (possibly after SSE notifications)
// that validates against the official schema, with an HTTP status the status
// table allows for its error code, and never a 5xx other than 503 and 504.
func checkResponse(t *testing.T, h http.Handler, r *http.Request) *mcptest.Response {
	t.Helper()
	res := do(t, h, r)
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control = %q, want no-store (HTTP %d)", cc, res.Status)
	}
	if res.Status == http.StatusAccepted {
		if len(res.Body) != 0 {
			t.Fatalf("202 with a body: %q", res.Body)
		}
		return res
	}
	ct := res.Header.Get("Content-Type")
	if ct != "application/json" && !(ct == "text/event-stream" && res.Status == http.StatusOK) {
		t.Fatalf("HTTP %d with Content-Type %q; body %q", res.Status, ct, res.Body)
	}
	if len(res.Messages) == 0 {
		t.Fatalf("HTTP %d without a JSON-RPC message: %q", res.Status, res.Body)
	}
	for _, m := range res.Messages {
		if !json.Valid(m) {
			t.Fatalf("message is not JSON: %q", m)
		}
	}
	for _, n := range res.Notifications() {
		if err := schemacheck.Validate("ProgressNotification", n); err != nil {
			t.Fatalf("%v\n%s", err, n)
		}
	}
	final := res.Messages[len(res.Messages)-1]
	if res.Error != nil {
		if err := schemacheck.Validate("JSONRPCErrorResponse", final); err != nil {
			t.Fatalf("%v\n%s", err, final)
		}
		if ct == "application/json" && !slices.Contains(statusTable[res.Error.Code], res.Status) {
			t.Fatalf("HTTP %d for error code %d; body %s", res.Status, res.Error.Code, res.Body)
		}
		return res
	}
	if res.Status != http.StatusOK {
		t.Fatalf("a result with HTTP %d: %s", res.Status, res.Body)
	}
	if err := schemacheck.Validate("JSONRPCResultResponse", final); err != nil {
		t.Fatalf("%v\n%s", err, final)
	}
	return res
}

// isProgressToken reports whether raw is a JSON string or integer.
func isProgressToken(raw json.RawMessage) bool {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return false
	}
	switch x := v.(type) {
	case string:
		return true
	case json.Number:
		_, err := x.Int64()
		return err == nil
	}
	return false
}

// jsonDepth returns the nesting depth of valid JSON text.
func jsonDepth(data []byte) int {
	d := json.NewDecoder(bytes.NewReader(data))
	depth, deepest := 0, 0
	for {
		tok, err := d.Token()
		if err != nil {
			return deepest
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
			deepest = max(deepest, depth)
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
}

var metaKeys = []string{
	mcp.MetaProtocolVersion, mcp.MetaClientCapabilities, mcp.MetaClientInfo, mcp.MetaLogLevel,
	mcp.MetaProgressToken, "traceparent", "tracestate", "baggage",
}

// metaDeclares reports whether the JSON object meta has the required
// members, by exact name: protocolVersion "2026-07-28" and an object of
// clientCapabilities.
func metaDeclares(meta []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil || m == nil {
		return false
	}
	var version, caps bool
	for k, v := range m {
		var s string
		if k == mcp.MetaProtocolVersion && json.Unmarshal(v, &s) == nil && s == mcp.LatestProtocolVersion {
			version = true
		}
		if k == mcp.MetaClientCapabilities && bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) {
			caps = true
		}
	}
	return version && caps
}

// metaWellFormed reports whether meta is a _meta every server must accept:
// it decodes as mcp.RequestMeta with the required members, no key differs
// from a known key by case only, and the optional members have their schema
// types.
func metaWellFormed(meta []byte) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(meta, &m) != nil || m == nil {
		return false
	}
	for k := range m {
		for _, known := range metaKeys {
			if k != known && strings.EqualFold(k, known) {
				return false
			}
		}
	}
	var rm mcp.RequestMeta
	if json.Unmarshal(meta, &rm) != nil || rm.ProtocolVersion != mcp.LatestProtocolVersion || rm.ClientCapabilities == nil {
		return false
	}
	if _, ok := rm.LogLevel.Severity(); rm.LogLevel != "" && !ok {
		return false
	}
	if _, ok := m[mcp.MetaProgressToken]; ok && !isProgressToken(rm.ProgressToken) {
		return false
	}
	if v, ok := m[mcp.MetaClientInfo]; ok && !bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		if err := schemacheck.Validate("Implementation", v); err != nil {
			return false
		}
	}
	return true
}

// FuzzRequestMeta sends arbitrary bytes as params._meta of well-formed
// requests with correct headers. Besides the invariants of checkResponse: a
// result only comes back when _meta declared protocolVersion and
// clientCapabilities, and a well-formed _meta always gets a result.
func FuzzRequestMeta(f *testing.F) {
	srv := newCatalogServer(f, nil)
	type target struct{ method, members, name string }
	targets := []target{
		{mcp.MethodServerDiscover, "", ""},
		{mcp.MethodToolsCall, `"name":"echo","arguments":{"text":"x"}`, "echo"},
		{mcp.MethodToolsList, "", ""},
		{mcp.MethodPromptsGet, `"name":"greet","arguments":{"name":"Ada"}`, "greet"},
		{mcp.MethodResourcesRead, `"uri":"file:///readme.md"`, "file:///readme.md"},
	}
	for _, seed := range []string{
		metaJSON,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{},"url":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1.0.0"}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true},"sampling":{"context":{},"tools":{}},"experimental":{"x":{}}}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug","progressToken":"p1","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"progressToken":7}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`,
		`{"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":2026,"io.modelcontextprotocol/clientCapabilities":{}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":null}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":5}}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"x"}`,
		`{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}`,
		`{}`, `null`, `[]`, `"x"`, `0`, `{"a":`, ``, `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`,
	} {
		for i := range targets {
			f.Add([]byte(seed), uint8(i))
		}
	}
	f.Fuzz(func(t *testing.T, meta []byte, which uint8) {
		tg := targets[int(which)%len(targets)]
		members := tg.members
		if members != "" {
			members += ","
		}
		body := `{"jsonrpc":"2.0","id":1,"method":"` + tg.method + `","params":{` + members + `"_meta":` + string(meta) + `}}`
		headers := map[string]string{}
		if tg.name != "" {
			headers["Mcp-Name"] = tg.name
		}
		res := checkResponse(t, srv, rawPost(body, tg.method, headers))
		if res.Status == http.StatusAccepted {
			t.Fatalf("a request with an id was answered 202")
		}
		if !slices.Contains([]int{200, 400, 413}, res.Status) {
			t.Fatalf("HTTP %d; body %s", res.Status, res.Body)
		}
		if !json.Valid(meta) {
			return // meta may have closed params early; only the general invariants hold
		}
		if res.Error == nil && !metaDeclares(meta) {
			t.Fatalf("a result for _meta %s, which lacks the required members", meta)
		}
		if metaWellFormed(meta) && len(body) <= fuzzBodyLimit && jsonDepth([]byte(body)) <= 128 && res.Error != nil {
			t.Fatalf("HTTP %d error %d for the well-formed _meta %s; body %s", res.Status, res.Error.Code, meta, res.Body)
		}
	})
}

// FuzzEnvelope sends arbitrary bodies through the full handler, with either
// the given Mcp-Method and Mcp-Name headers or headers mirrored from the
// body (so that the fuzzer reaches the methods). Besides the invariants of
// checkResponse: 202 only for a valid notification, and a result only for a
// valid request whose id it echoes.
func FuzzEnvelope(f *testing.F) {
	srv := newCatalogServer(f, nil)
	call := func(name, args, caps string) string {
		return rpc("tools/call", `"name":"`+name+`","arguments":`+args, caps)
	}
	seeds := []string{
		rpc("server/discover", "", `{}`),
		rpc("tools/list", `"cursor":"bzE6MQ"`, `{}`),
		rpc("resources/list", "", `{}`),
		rpc("resources/templates/list", "", `{}`),
		rpc("resources/read", `"uri":"file:///logs/monday"`, `{}`),
		rpc("prompts/list", "", `{}`),
		rpc("prompts/get", `"name":"greet","arguments":{"name":"Ada"}`, `{}`),
		rpc("completion/complete", `"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"a"}`, `{}`),
		call("echo", `{"text":"hi"}`, `{}`),
		call("echo", `{"text":"über"}`, `{}`),
		call("fail", `{}`, `{}`),
		call("confirm", `{"target":"db"}`, `{"elicitation":{}}`),
		call("confirm", `{"target":"db"}`, `{}`),
		call("sign-in", `{}`, `{"elicitation":{"url":{}}}`),
		call("panics", `{}`, `{}`),
		rpc("tools/call", `"name":"confirm","arguments":{"target":"db"},"requestState":"AAAA","inputResponses":{"confirm":{"action":"accept"}}`, `{"elicitation":{}}`),
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"t","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
		rpc("tasks/get", `"taskId":"t-1"`, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`),
		rpc("tasks/cancel", `"taskId":"t-1"`, `{}`),
		rpc("tasks/result", `"taskId":"t-1"`, `{"extensions":{"io.modelcontextprotocol/tasks":{}}}`),
		rpc("subscriptions/listen", `"notifications":{"toolsListChanged":true}`, `{}`),
		`{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":1.5,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":[]}`,
		`{"jsonrpc":"2.0","id":1,"method":"","params":{}}`,
		`{"jsonrpc":"2.0","id":1,"result":{}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}]`,
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":`, `{}`, `[]`, `null`, ``, "\xff", strings.Repeat("[", 200) + strings.Repeat("]", 200),
	}
	for _, s := range seeds {
		f.Add([]byte(s), true, "", "")
		f.Add([]byte(s), false, "tools/call", "echo")
	}
	f.Fuzz(func(t *testing.T, body []byte, mirror bool, method, name string) {
		headers := map[string]string{"Mcp-Method": method, "Mcp-Name": name}
		if mirror {
			var env struct {
				Method string `json:"method"`
				Params struct {
					Name string `json:"name"`
					URI  string `json:"uri"`
				} `json:"params"`
			}
			json.Unmarshal(body, &env)
			headers["Mcp-Method"] = mcp.EncodeHeaderValue(env.Method)
			switch env.Method {
			case mcp.MethodToolsCall, mcp.MethodPromptsGet:
				headers["Mcp-Name"] = mcp.EncodeHeaderValue(env.Params.Name)
			case mcp.MethodResourcesRead:
				headers["Mcp-Name"] = mcp.EncodeHeaderValue(env.Params.URI)
			default:
				headers["Mcp-Name"] = ""
			}
		}
		res := checkResponse(t, srv, rawPost(string(body), "", headers))
		req, err := mcp.DecodeRequest(body)
		if res.Status == http.StatusAccepted {
			if err != nil || !req.IsNotification() || len(body) > fuzzBodyLimit {
				t.Fatalf("202 for a body that is not a notification: %q", body)
			}
			return
		}
		if res.Error == nil {
			if err != nil || req.IsNotification() {
				t.Fatalf("a result for a body that is not a request: %q", body)
			}
			var final struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal(res.Messages[len(res.Messages)-1], &final)
			if !bytes.Equal(final.ID, req.ID.Raw()) {
				t.Fatalf("response id %s, request id %s", final.ID, req.ID.Raw())
			}
		}
	})
}

// TestRawNonASCIIHeaderRejected: mirrored header values must be visible
// ASCII, space or tab; anything else must come base64-encoded. A raw UTF-8
// value is invalid characters, 400 / -32020, even when it equals the body
// value.
func TestRawNonASCIIHeaderRejected(t *testing.T) {
	srv := newTestServer(t, nil)
	tests := []struct {
		name    string
		body    string
		headers map[string]string
	}{
		{"Mcp-Param", callBody("headers", `{"region":"über"}`), map[string]string{"Mcp-Name": "headers", "Mcp-Param-Region": "über"}},
		{"Mcp-Name", callBody("ü", `{}`), map[string]string{"Mcp-Name": "ü"}},
		{"Mcp-Param latin-1 byte", callBody("headers", `{"region":"\u00ff"}`), map[string]string{"Mcp-Name": "headers", "Mcp-Param-Region": "\xff"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, srv, rawPost(tt.body, mcp.MethodToolsCall, tt.headers))
			if res.Status != http.StatusBadRequest || errorCode(res) != mcp.CodeHeaderMismatch {
				t.Fatalf("got HTTP %d code %d, want 400 -32020; body %s", res.Status, errorCode(res), res.Body)
			}
		})
	}
}

// TestParamsMembersAreExact: JSON member names are case-sensitive and the
// pipeline rejects duplicate members in the envelope; the same holds inside
// params and _meta, or the server would act on members a spec-following
// reader (an intermediary inspecting the body, or the client) does not see.
// Found by FuzzRequestMeta.
func TestParamsMembersAreExact(t *testing.T) {
	srv := newTestServer(t, func(_ *server.Options, ep *server.Endpoint) {
		server.AddTool(ep, &mcp.Tool{Name: "fail"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("fail ran")
		})
	})
	tests := []struct {
		name, body, method string
		headers            map[string]string
	}{
		{"case-variant _meta keys", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"IO.MODELCONTEXTPROTOCOL/PROTOCOLVERSION":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			"server/discover", nil},
		{"case-variant _meta member", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_META":` + metaJSON + `}}`,
			"server/discover", nil},
		{"case-variant name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","NAME":"echo","arguments":{"text":"x"},"_meta":` + metaJSON + `}}`,
			"tools/call", map[string]string{"Mcp-Name": "echo"}},
		{"duplicate name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail","name":"echo","arguments":{"text":"x"},"_meta":` + metaJSON + `}}`,
			"tools/call", map[string]string{"Mcp-Name": "echo"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, srv, rawPost(tt.body, tt.method, tt.headers))
			if res.Status != http.StatusBadRequest || res.Error == nil {
				t.Fatalf("got HTTP %d error %v, want HTTP 400 with a JSON-RPC error; body %s", res.Status, res.Error, res.Body)
			}
		})
	}
}

// TestInvalidLogLevelRefused: _meta io.modelcontextprotocol/logLevel is a
// LoggingLevel; the schema lists an invalid log level among the -32602
// cases. Like a malformed progressToken, it makes the _meta malformed.
func TestInvalidLogLevelRefused(t *testing.T) {
	srv := newTestServer(t, nil)
	body := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"verbose"}}}`
	res := do(t, srv, rawPost(body, mcp.MethodServerDiscover, nil))
	if res.Status != http.StatusBadRequest || errorCode(res) != mcp.CodeInvalidParams {
		t.Fatalf("got HTTP %d code %d, want 400 -32602; body %s", res.Status, errorCode(res), res.Body)
	}
}
