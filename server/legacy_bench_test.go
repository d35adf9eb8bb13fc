package server_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkLegacyToolsCall compares one tools/call of the echo tool in a
// 2025-11-25 session with the same call on the modern path, in process:
//
//	go test -run '^$' -bench LegacyToolsCall -benchtime 2s ./server
func BenchmarkLegacyToolsCall(b *testing.B) {
	srv := newLegacyCatalog(b, nil)
	init := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"b","version":"1"}}}`))
	init.Header.Set("Content-Type", "application/json")
	init.Header.Set("Accept", "application/json, text/event-stream")
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, init)
	sid := rec.Header().Get("Mcp-Session-Id")
	if sid == "" {
		b.Fatalf("initialize: %d %s", rec.Code, rec.Body)
	}
	cases := []struct {
		name, body string
		headers    map[string]string
	}{
		{"modern", rpc("tools/call", `"name":"echo","arguments":{"text":"hi"}`, `{}`),
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "echo"}},
		{"legacy", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"}}}`,
			map[string]string{"Mcp-Protocol-Version": "2025-11-25", "Mcp-Session-Id": sid}},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(tc.body))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
				for k, v := range tc.headers {
					r.Header.Set(k, v)
				}
				w := httptest.NewRecorder()
				srv.ServeHTTP(w, r)
				if w.Code != http.StatusOK || strings.Contains(w.Body.String(), `"error"`) {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}
