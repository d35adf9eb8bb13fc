package main

import (
	"bytes"
	"net/http"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/mcp"
)

// TestUnstorableText sends idempotency keys that no store can keep as text
// (a NUL, and two different invalid UTF-8 bytes that JSON decoding would
// both turn into U+FFFD) over HTTP to a node on each store: every one is
// refused with the same tool error, never -32603 and never a task, so the
// two invalid keys cannot collide, and the log holds none of the bytes.
func TestUnstorableText(t *testing.T) {
	stores := bothStores()
	keys := []string{`bad\u0000key`, "bad\xffkey", "bad\xfekey"}
	for name, spec := range stores {
		t.Run(name, func(t *testing.T) {
			logger, logs := bufferLogger()
			cfg := testConfig("", 0)
			cfg.StoreSpec, cfg.Logger = spec(t), logger
			n := start(t, cfg)
			c := newClients(t, n.URL()).client()
			var answers []string
			for _, key := range keys {
				body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + toolReports + `",` +
					`"arguments":{"accountId":"a","rows":1,"seconds":0,"idempotencyKey":"` + key + `"},` +
					`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + mcp.LatestProtocolVersion + `",` +
					`"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
				req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://localhost"+c.Path, strings.NewReader(body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", mcp.LatestProtocolVersion)
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", mcp.EncodeHeaderValue(toolReports))
				r, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != http.StatusOK || r.Error != nil {
					t.Fatalf("key %q: HTTP %d, %v; want a tool error", key, r.Status, r.Error)
				}
				answers = append(answers, toolErrorText(t, r))
			}
			for i, a := range answers {
				if a != answers[0] || !strings.Contains(a, "valid UTF-8") {
					t.Errorf("key %q: %q; want the same refusal for every key", keys[i], a)
				}
			}
			for _, b := range []string{"\x00", "\xff", "\xfe", `\u0000`, `\x00`} {
				if bytes.Contains([]byte(logs.String()), []byte(b)) {
					t.Errorf("the log holds %q:\n%s", b, logs)
				}
			}
			// The node still creates tasks.
			createTask(t, c, toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0, "idempotencyKey": "good"})
		})
	}
}
