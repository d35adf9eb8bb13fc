package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

// metaJSON is the required _meta of a request without optional capabilities.
const metaJSON = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

// EchoInput is the input of the echo test tool.
type EchoInput struct {
	Text string `json:"text"`
}

// EchoOutput is the output of the echo test tool.
type EchoOutput struct {
	Echo string `json:"echo"`
}

// newTestServer builds a server with a small catalog; mutate lets a test
// change the options (the endpoint is options.Endpoints[0]).
func newTestServer(t *testing.T, mutate func(*server.Options, *server.Endpoint)) *server.Server {
	t.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "test", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *server.Request, in EchoInput) (*mcp.CallToolResult, EchoOutput, error) {
		return nil, EchoOutput{Echo: in.Text}, nil
	})
	ep.AddRawTool(&mcp.Tool{
		Name:        "headers",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"},"dry":{"type":"boolean","x-mcp-header":"Dry"}}}`),
	}, func(context.Context, *server.Request) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
	})
	opts := server.Options{Endpoints: []*server.Endpoint{ep}}
	if mutate != nil {
		mutate(&opts, ep)
	}
	srv, err := server.New(opts)
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	return srv
}

// rawPost builds a POST with the standard headers for method; headers
// overrides them (an empty value deletes the header).
func rawPost(body string, method string, headers map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	r.Header.Set("MCP-Protocol-Version", "2026-07-28")
	if method != "" {
		r.Header.Set("Mcp-Method", method)
	}
	for k, v := range headers {
		if v == "" {
			r.Header.Del(k)
		} else {
			r.Header.Set(k, v)
		}
	}
	return r
}

// do sends r to h and parses the response.
func do(t *testing.T, h http.Handler, r *http.Request) *mcptest.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	res, err := mcptest.ParseResponse(rec.Code, rec.Header(), rec.Body.Bytes())
	if err != nil {
		t.Fatalf("parse response: %v (body %q)", err, rec.Body.String())
	}
	return res
}

// callBody is a tools/call body for name with the given arguments JSON.
func callBody(name, args string) string {
	return `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,"_meta":` + metaJSON + `}}`
}

// errorCode returns the JSON-RPC error code of res, or 0.
func errorCode(res *mcptest.Response) int64 {
	if res.Error == nil {
		return 0
	}
	return res.Error.Code
}

func mustContain(t *testing.T, body []byte, want string) {
	t.Helper()
	if !bytes.Contains(body, []byte(want)) {
		t.Errorf("body %s does not contain %s", body, want)
	}
}

// newBucket returns a token bucket for opts, failing the test when the
// options are refused.
func newBucket(t testing.TB, opts server.TokenBucketOptions) *server.TokenBucket {
	t.Helper()
	tb, err := server.NewTokenBucket(opts)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// limitListener is server.LimitListener, failing the test on an error.
func limitListener(t testing.TB, l net.Listener, n int) *server.ConnLimiter {
	t.Helper()
	cl, err := server.LimitListener(l, n)
	if err != nil {
		t.Fatal(err)
	}
	return cl
}
