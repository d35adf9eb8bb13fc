package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/schemacheck"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// catalogTarget is the input of the catalog's confirm tool.
type catalogTarget struct {
	Target string `json:"target"`
}

// denyPartition is a RateLimiter that refuses one rate-limit partition.
type denyPartition string

func (d denyPartition) Allow(key string) (bool, time.Duration) {
	if key == string(d) {
		return false, 2500 * time.Millisecond
	}
	return true, 0
}

func textContent(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

// confirmSchema is the requested schema of the catalog's form elicitations.
const confirmSchema = `{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`

// newCatalogServer builds a server with a small deterministic catalog of every
// feature: tools (structured, failing, MRTR form and URL, progress, panicking),
// a resource, a resource template, a prompt and a completion handler. Admission
// is DevAdmission, the partition "limited" is always rate limited, and bodies
// are bounded to 64 KiB. mutate, if not nil, may change the options.
func newCatalogServer(tb testing.TB, mutate func(*server.Options, *server.Endpoint)) *server.Server {
	tb.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{
		Path: "/mcp", Name: "catalog", Version: "1.2.3", Title: "Catalog",
		Instructions: "Call echo to check the connection.",
		CacheTTL:     time.Minute,
	})
	server.AddTool(ep, &mcp.Tool{Name: "echo", Description: "Echo the text back."},
		func(_ context.Context, _ *server.Request, in EchoInput) (*mcp.CallToolResult, EchoOutput, error) {
			return nil, EchoOutput{Echo: in.Text}, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("disk is full")
		})
	server.AddTool(ep, &mcp.Tool{Name: "confirm", Description: "Delete a target after a confirmation."},
		func(_ context.Context, req *server.Request, in catalogTarget) (*mcp.CallToolResult, any, error) {
			if req.RequestState() == nil {
				return nil, nil, server.InputRequired(mcp.InputRequests{
					"confirm": mcp.NewElicitFormRequest("Delete "+in.Target+"?", json.RawMessage(confirmSchema)),
				}, []byte("confirm"))
			}
			return &mcp.CallToolResult{Content: textContent("deleted " + in.Target)}, nil, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "sign-in", Description: "Needs the user to sign in."},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			return nil, nil, server.InputRequired(mcp.InputRequests{
				"login": mcp.NewElicitURLRequest("Sign in to continue", "https://auth.example.com/start"),
			}, []byte("sign-in"))
		})
	server.AddTool(ep, &mcp.Tool{Name: "progress", Description: "Reports progress twice."},
		func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			for _, p := range []float64{1, 2} {
				if err := req.ReportProgress(ctx, p, 2, "step"); err != nil && !errors.Is(err, server.ErrNoProgressToken) {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: textContent("done")}, nil, nil
		})
	server.AddTool(ep, &mcp.Tool{Name: "panics", Description: "Panics."},
		func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, any, error) {
			panic("boom")
		})
	ep.AddResource(&mcp.Resource{URI: "file:///readme.md", Name: "readme", MIMEType: "text/markdown"},
		func(_ context.Context, req *server.Request) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Name, MIMEType: "text/markdown", Text: "# Catalog"}}}, nil
		})
	ep.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "file:///logs/{day}", Name: "logs", MIMEType: "text/plain"},
		func(_ context.Context, req *server.Request) (*mcp.ReadResourceResult, error) {
			if strings.HasSuffix(req.Name, "/missing") {
				return nil, server.ErrResourceNotFound
			}
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Name, MIMEType: "text/plain", Text: "log of " + req.Name}}}, nil
		})
	ep.AddPrompt(&mcp.Prompt{Name: "greet", Description: "Greet someone.", Arguments: []*mcp.PromptArgument{{Name: "name", Required: true}}},
		func(_ context.Context, _ *server.Request, args map[string]string) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{
				Description: "A greeting",
				Messages:    []*mcp.PromptMessage{{Role: mcp.RoleUser, Content: &mcp.TextContent{Text: "Hello, " + args["name"] + "!"}}},
			}, nil
		})
	ep.SetCompletionHandler(func(_ context.Context, _ *server.Request, p *mcp.CompleteParams) (*mcp.CompleteResult, error) {
		var values []string
		for _, v := range []string{"alice", "albert", "bob"} {
			if strings.HasPrefix(v, p.Argument.Value) {
				values = append(values, v)
			}
		}
		return &mcp.CompleteResult{Completion: mcp.CompletionValues{Values: values}}, nil
	})
	opts := server.Options{
		Endpoints:      []*server.Endpoint{ep},
		Admission:      server.DevAdmission(),
		RequestLimiter: denyPartition("limited"),
		MaxBodyBytes:   64 << 10,
	}
	if mutate != nil {
		mutate(&opts, ep)
	}
	srv, err := server.New(opts)
	if err != nil {
		tb.Fatalf("server.New: %v", err)
	}
	return srv
}

// rpc is a request body for method with the given params members (without
// braces, may be empty) and the required _meta declaring caps.
func rpc(method, members, caps string) string {
	if members != "" {
		members += ","
	}
	return `{"jsonrpc":"2.0","id":1,"method":"` + method + `","params":{` + members +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`
}

// goldenFile is the stored wire shape of one response.
type goldenFile struct {
	Status      int               `json:"status"`
	ContentType string            `json:"contentType"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        json.RawMessage   `json:"body,omitempty"`
	Messages    []json.RawMessage `json:"messages,omitempty"` // SSE data events, in order
}

// goldenHeaders are the response headers recorded when present.
var goldenHeaders = []string{"Allow", "Cache-Control", "Retry-After", "WWW-Authenticate", "X-Accel-Buffering"}

var requestStateRE = regexp.MustCompile(`"requestState":"[^"]*"`)

// maskState replaces sealed requestState values, which are random.
func maskState(b []byte) []byte {
	return requestStateRE.ReplaceAll(b, []byte(`"requestState":"<masked>"`))
}

func TestGolden(t *testing.T) {
	srv := newCatalogServer(t, nil)
	const none, form, formURL = `{}`, `{"elicitation":{"form":{}}}`, `{"elicitation":{"form":{},"url":{}}}`
	hdr := func(kv ...string) map[string]string {
		m := map[string]string{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name       string
		httpMethod string // default POST
		headers    map[string]string
		body       string
		// schema is the definition the whole message must satisfy; member
		// the one its result or error member must satisfy (optional).
		schema, member string
	}{
		// Successful results.
		{name: "server-discover", headers: hdr("Mcp-Method", "server/discover"), body: rpc("server/discover", "", none),
			schema: "DiscoverResultResponse", member: "DiscoverResult"},
		{name: "tools-list", headers: hdr("Mcp-Method", "tools/list"), body: rpc("tools/list", "", none),
			schema: "ListToolsResultResponse", member: "ListToolsResult"},
		{name: "resources-list", headers: hdr("Mcp-Method", "resources/list"), body: rpc("resources/list", "", none),
			schema: "ListResourcesResultResponse", member: "ListResourcesResult"},
		{name: "resources-templates-list", headers: hdr("Mcp-Method", "resources/templates/list"), body: rpc("resources/templates/list", "", none),
			schema: "ListResourceTemplatesResultResponse", member: "ListResourceTemplatesResult"},
		{name: "resources-read", headers: hdr("Mcp-Method", "resources/read", "Mcp-Name", "file:///readme.md"), body: rpc("resources/read", `"uri":"file:///readme.md"`, none),
			schema: "ReadResourceResultResponse", member: "ReadResourceResult"},
		{name: "resources-read-template", headers: hdr("Mcp-Method", "resources/read", "Mcp-Name", "file:///logs/monday"), body: rpc("resources/read", `"uri":"file:///logs/monday"`, none),
			schema: "ReadResourceResultResponse", member: "ReadResourceResult"},
		{name: "prompts-list", headers: hdr("Mcp-Method", "prompts/list"), body: rpc("prompts/list", "", none),
			schema: "ListPromptsResultResponse", member: "ListPromptsResult"},
		{name: "prompts-get", headers: hdr("Mcp-Method", "prompts/get", "Mcp-Name", "greet"), body: rpc("prompts/get", `"name":"greet","arguments":{"name":"Ada"}`, none),
			schema: "GetPromptResultResponse", member: "GetPromptResult"},
		{name: "completion-complete", headers: hdr("Mcp-Method", "completion/complete"),
			body:   rpc("completion/complete", `"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"name","value":"al"}`, none),
			schema: "CompleteResultResponse", member: "CompleteResult"},
		{name: "tools-call", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "echo"), body: rpc("tools/call", `"name":"echo","arguments":{"text":"hi"}`, none),
			schema: "CallToolResultResponse", member: "CallToolResult"},
		{name: "tools-call-tool-error", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "fail"), body: rpc("tools/call", `"name":"fail","arguments":{}`, none),
			schema: "CallToolResultResponse", member: "CallToolResult"},
		{name: "tools-call-invalid-arguments", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "echo"), body: rpc("tools/call", `"name":"echo","arguments":{"text":5}`, none),
			schema: "CallToolResultResponse", member: "CallToolResult"},
		{name: "tools-call-input-required", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "confirm"), body: rpc("tools/call", `"name":"confirm","arguments":{"target":"db"}`, form),
			schema: "CallToolResultResponse", member: "InputRequiredResult"},
		{name: "tools-call-input-required-url", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "sign-in"), body: rpc("tools/call", `"name":"sign-in","arguments":{}`, formURL),
			schema: "CallToolResultResponse", member: "InputRequiredResult"},
		{name: "tools-call-progress-sse", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "progress"),
			body:   `{"jsonrpc":"2.0","id":"p","method":"tools/call","params":{"name":"progress","_meta":{"progressToken":"tok-1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			schema: "CallToolResultResponse", member: "CallToolResult"},
		{name: "notification-accepted", headers: hdr("Mcp-Method", "notifications/initialized"), body: `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`},

		// JSON-RPC errors.
		{name: "error-32700-parse", headers: hdr("Mcp-Method", "tools/list"), body: `{"jsonrpc":"2.0","id":1,`,
			schema: "JSONRPCErrorResponse", member: "ParseError"},
		{name: "error-32600-batch", headers: hdr("Mcp-Method", "tools/list"), body: "[" + rpc("tools/list", "", none) + "]",
			schema: "JSONRPCErrorResponse", member: "InvalidRequestError"},
		{name: "error-32600-jsonrpc-version", headers: hdr("Mcp-Method", "tools/list"), body: `{"jsonrpc":"1.0","id":1,"method":"tools/list","params":{}}`,
			schema: "JSONRPCErrorResponse", member: "InvalidRequestError"},
		{name: "error-32601-unknown-method", headers: hdr("Mcp-Method", "nope/nope"), body: rpc("nope/nope", "", none),
			schema: "JSONRPCErrorResponse", member: "MethodNotFoundError"},
		{name: "error-32601-initialize", headers: hdr("Mcp-Method", "initialize"), body: rpc("initialize", "", none),
			schema: "JSONRPCErrorResponse", member: "MethodNotFoundError"},
		{name: "error-32602-missing-meta", headers: hdr("Mcp-Method", "tools/list"), body: `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
			schema: "JSONRPCErrorResponse", member: "InvalidParamsError"},
		{name: "error-32602-malformed-progress-token", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "progress"), body: progressBody(`{"a":1}`),
			schema: "JSONRPCErrorResponse", member: "InvalidParamsError"},
		{name: "error-32602-duplicate-params-member", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "echo"), body: rpc("tools/call", `"name":"fail","name":"echo","arguments":{"text":"hi"}`, none),
			schema: "JSONRPCErrorResponse", member: "InvalidParamsError"},
		{name: "error-32602-unknown-tool", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "nope"), body: rpc("tools/call", `"name":"nope","arguments":{}`, none),
			schema: "JSONRPCErrorResponse", member: "InvalidParamsError"},
		{name: "error-32602-bad-cursor", headers: hdr("Mcp-Method", "tools/list"), body: rpc("tools/list", `"cursor":"zzz"`, none),
			schema: "JSONRPCErrorResponse", member: "InvalidParamsError"},
		{name: "error-32602-missing-prompt-argument", headers: hdr("Mcp-Method", "prompts/get", "Mcp-Name", "greet"), body: rpc("prompts/get", `"name":"greet"`, none),
			schema: "JSONRPCErrorResponse", member: "InvalidParamsError"},
		{name: "error-32602-resource-not-found", headers: hdr("Mcp-Method", "resources/read", "Mcp-Name", "file:///nope"), body: rpc("resources/read", `"uri":"file:///nope"`, none),
			schema: "JSONRPCErrorResponse", member: "InvalidParamsError"},
		{name: "error-32602-bad-request-state", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "confirm"),
			body:   rpc("tools/call", `"name":"confirm","arguments":{"target":"db"},"requestState":"forged","inputResponses":{"confirm":{"action":"accept","content":{"ok":true}}}`, form),
			schema: "JSONRPCErrorResponse", member: "InvalidParamsError"},
		{name: "error-32603-internal", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "panics"), body: rpc("tools/call", `"name":"panics","arguments":{}`, none),
			schema: "JSONRPCErrorResponse", member: "InternalError"},
		{name: "error-32020-missing-name", headers: hdr("Mcp-Method", "tools/call"), body: rpc("tools/call", `"name":"echo","arguments":{"text":"hi"}`, none),
			schema: "HeaderMismatchError"},
		{name: "error-32020-method-mismatch", headers: hdr("Mcp-Method", "tools/list"), body: rpc("prompts/list", "", none),
			schema: "HeaderMismatchError"},
		{name: "error-32020-version-mismatch", headers: hdr("Mcp-Method", "tools/list", "MCP-Protocol-Version", "2025-11-25"), body: rpc("tools/list", "", none),
			schema: "HeaderMismatchError"},
		{name: "error-32021-url-elicitation", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "sign-in"), body: rpc("tools/call", `"name":"sign-in","arguments":{}`, form),
			schema: "MissingRequiredClientCapabilityError"},
		{name: "error-32021-form-elicitation", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "confirm"), body: rpc("tools/call", `"name":"confirm","arguments":{"target":"db"}`, none),
			schema: "MissingRequiredClientCapabilityError"},
		{name: "error-32022-unsupported-version", headers: hdr("Mcp-Method", "tools/list", "MCP-Protocol-Version", "2099-01-01"),
			body:   `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}}`,
			schema: "UnsupportedProtocolVersionError"},

		// Transport and admission rejections.
		{name: "http-401-unauthorized", headers: hdr("Mcp-Method", "tools/list", "Authorization", "Basic Zm9vOmJhcg=="), body: rpc("tools/list", "", none),
			schema: "JSONRPCErrorResponse", member: "InvalidRequestError"},
		{name: "http-403-origin", headers: hdr("Mcp-Method", "tools/list", "Origin", "https://evil.example"), body: rpc("tools/list", "", none),
			schema: "JSONRPCErrorResponse", member: "InvalidRequestError"},
		{name: "http-405-get", httpMethod: http.MethodGet, headers: hdr("Mcp-Method", "tools/list"),
			schema: "JSONRPCErrorResponse", member: "InvalidRequestError"},
		{name: "http-406-accept", headers: hdr("Mcp-Method", "tools/list", "Accept", "application/json"), body: rpc("tools/list", "", none),
			schema: "JSONRPCErrorResponse", member: "InvalidRequestError"},
		{name: "http-413-body-too-large", headers: hdr("Mcp-Method", "tools/call", "Mcp-Name", "echo"), body: rpc("tools/call", `"name":"echo","arguments":{"text":"`+strings.Repeat("x", 70<<10)+`"}`, none),
			schema: "JSONRPCErrorResponse", member: "InvalidRequestError"},
		{name: "http-415-content-type", headers: hdr("Mcp-Method", "tools/list", "Content-Type", "text/plain"), body: rpc("tools/list", "", none),
			schema: "JSONRPCErrorResponse", member: "InvalidRequestError"},
		{name: "http-429-rate-limited", headers: hdr("Mcp-Method", "tools/list", "Authorization", "Bearer limited"), body: rpc("tools/list", "", none),
			schema: "JSONRPCErrorResponse"},
	}
	seen := map[string]bool{}
	for _, tt := range tests {
		if seen[tt.name] {
			t.Fatalf("duplicate golden case %q", tt.name)
		}
		seen[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			r := rawPost(tt.body, "", tt.headers)
			if tt.httpMethod != "" {
				r.Method = tt.httpMethod
			}
			res := do(t, srv, r)
			if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
				t.Errorf("Cache-Control = %q, want no-store", cc)
			}
			validateWireShape(t, res, tt.schema, tt.member)
			got := renderGolden(t, res)
			path := filepath.Join("testdata", "golden", tt.name+".json")
			if *updateGolden {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./server -run TestGolden -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
			}
		})
	}
	if !*updateGolden {
		// Every golden file belongs to a case, so that stale files do not linger.
		files, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
		for _, f := range files {
			if name := strings.TrimSuffix(filepath.Base(f), ".json"); !seen[name] {
				t.Errorf("golden file %s has no case", f)
			}
		}
	}
}

// renderGolden returns the golden file content of a response, with random
// request states masked. Key order of the body is preserved.
func renderGolden(t *testing.T, res *mcptest.Response) []byte {
	t.Helper()
	g := goldenFile{Status: res.Status, ContentType: res.Header.Get("Content-Type")}
	for _, h := range goldenHeaders {
		if v := res.Header.Get(h); v != "" {
			if g.Headers == nil {
				g.Headers = map[string]string{}
			}
			g.Headers[h] = v
		}
	}
	if strings.HasPrefix(g.ContentType, "text/event-stream") {
		for _, m := range res.Messages {
			g.Messages = append(g.Messages, json.RawMessage(maskState(m)))
		}
	} else if len(res.Body) > 0 {
		if !json.Valid(res.Body) {
			t.Fatalf("body is not JSON: %q", res.Body)
		}
		g.Body = maskState(res.Body)
	}
	out, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// validateWireShape validates every message of a response against the
// official schema: each SSE notification as a ProgressNotification, the final
// message as schema (and the generic JSON-RPC response definition), and its
// result or error member as member.
func validateWireShape(t *testing.T, res *mcptest.Response, schema, member string) {
	t.Helper()
	if schema == "" {
		if res.Status != http.StatusAccepted || len(res.Body) != 0 {
			t.Fatalf("got HTTP %d body %q, want 202 without body", res.Status, res.Body)
		}
		return
	}
	if len(res.Messages) == 0 {
		t.Fatalf("HTTP %d without a JSON-RPC message: %q", res.Status, res.Body)
	}
	for i, n := range res.Notifications() {
		if err := schemacheck.Validate("ProgressNotification", n); err != nil {
			t.Errorf("notification %d: %v\n%s", i, err, n)
		}
	}
	final := res.Messages[len(res.Messages)-1]
	generic := "JSONRPCResultResponse"
	if res.Error != nil {
		generic = "JSONRPCErrorResponse"
	}
	for _, def := range []string{generic, schema} {
		if err := schemacheck.Validate(def, final); err != nil {
			t.Errorf("%v\n%s", err, final)
		}
	}
	if member == "" {
		return
	}
	doc := []byte(res.Result)
	if res.Error != nil {
		var e struct {
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(final, &e); err != nil {
			t.Fatal(err)
		}
		doc = e.Error
	}
	if err := schemacheck.Validate(member, doc); err != nil {
		t.Errorf("%v\n%s", err, doc)
	}
}

// TestGoldenFilesAreStrictJSON keeps the golden files readable by other
// tools: every file parses and holds a status.
func TestGoldenFilesAreStrictJSON(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden files (%v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var g goldenFile
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&g); err != nil || g.Status == 0 {
			t.Errorf("%s: %v (status %d)", f, err, g.Status)
		}
	}
}

// TestProgressTokenShapes checks that notifications/progress echoes the
// client's token in a schema-valid notification for both token types.
func TestProgressTokenShapes(t *testing.T) {
	srv := newCatalogServer(t, nil)
	for _, token := range []string{`"tok"`, `42`, `-7`, `""`} {
		t.Run(token, func(t *testing.T) {
			res := do(t, srv, rawPost(progressBody(token), "tools/call", map[string]string{"Mcp-Name": "progress"}))
			if len(res.Notifications()) != 2 {
				t.Fatalf("got %d notifications, want 2; body %s", len(res.Notifications()), res.Body)
			}
			validateWireShape(t, res, "CallToolResultResponse", "CallToolResult")
			for _, n := range res.Notifications() {
				mustContain(t, n, `"progressToken":`+token+`,`)
			}
		})
	}
}

// TestMalformedProgressTokenRefused: progressToken must be a string or an
// integer. A request carrying anything else is malformed (HTTP 400, -32602)
// and must never cause a schema-invalid notifications/progress.
func TestMalformedProgressTokenRefused(t *testing.T) {
	srv := newCatalogServer(t, nil)
	for _, token := range []string{`null`, `true`, `1.5`, `1e3`, `{"a":1}`, `[1]`} {
		t.Run(token, func(t *testing.T) {
			res := do(t, srv, rawPost(progressBody(token), "tools/call", map[string]string{"Mcp-Name": "progress"}))
			if res.Status != http.StatusBadRequest || errorCode(res) != mcp.CodeInvalidParams || len(res.Notifications()) != 0 {
				t.Fatalf("got HTTP %d code %d with %d notifications, want 400 -32602 and none; body %s",
					res.Status, errorCode(res), len(res.Notifications()), res.Body)
			}
		})
	}
}

func progressBody(token string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"progress","_meta":{"progressToken":%s,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`, token)
}
