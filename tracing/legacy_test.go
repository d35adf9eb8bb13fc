package tracing_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/tracing"
)

// TestLegacySessionRequests checks the spans of a 2025-era session's
// requests: the era and negotiated version, the client's traceparent, and
// a tool name that is not registered recorded as "unknown".
func TestLegacySessionRequests(t *testing.T) {
	st, _ := twoSQLiteHandles(t)
	a := newAPI(t, st, tracing.Options{})
	hs := httptest.NewServer(a.srv)
	defer hs.Close()
	var sid string
	post := func(body string) int {
		t.Helper()
		r, err := http.NewRequestWithContext(t.Context(), http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		r.Header.Set("Traceparent", clientHeader)
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("MCP-Protocol-Version", mcp.ProtocolVersion20251125)
		}
		res, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		io.Copy(io.Discard, res.Body)
		if sid == "" {
			sid = res.Header.Get("Mcp-Session-Id")
		}
		return res.StatusCode
	}
	if code := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",` +
		`"capabilities":{},"clientInfo":{"name":"legacy","version":"1"}}}`); code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: status %d, session %q", code, sid)
	}
	a.spans.await(t, "mcp initialize")
	if code := post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", code)
	}
	post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"no such tool, with user text","arguments":{}}}`)
	call := a.spans.await(t, "mcp tools/call")
	want := map[string]string{
		tracing.AttrMethod: mcp.MethodToolsCall, tracing.AttrTool: "unknown", tracing.AttrOutcome: "protocol_error",
		tracing.AttrErrorType: "protocol_error", tracing.AttrEra: tracing.Era2025,
		tracing.AttrProtocolVersion: mcp.ProtocolVersion20251125, tracing.AttrEndpoint: "traced",
	}
	if diff := cmp.Diff(want, attrs(call.Attributes())); diff != "" {
		t.Errorf("legacy tools/call span attributes (-want +got):\n%s", diff)
	}
	if call.Parent().TraceID().String() != clientTrace {
		t.Errorf("legacy tools/call span's parent trace = %v, want the client's", call.Parent().TraceID())
	}
}
