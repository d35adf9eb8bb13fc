package client_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// TestWaitOnTaskCreatedFinished: a tools/call whose CreateTaskResult
// already says "completed" (the task finished before the answer was
// written) carries no result; Wait fetches it with tasks/get instead of
// failing.
func TestWaitOnTaskCreatedFinished(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case mcp.MethodServerDiscover:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}}`, req.ID)
		case mcp.MethodToolsList:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","tools":[{"name":"slow","inputSchema":{"type":"object"}}],"ttlMs":0,"cacheScope":"private"}}`, req.ID)
		case mcp.MethodToolsCall:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"task","taskId":"t-1","status":"completed","createdAt":"x","lastUpdatedAt":"x","ttlMs":null}}`, req.ID)
		case mcp.MethodTasksGet:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","taskId":"t-1","status":"completed","createdAt":"x","lastUpdatedAt":"x","ttlMs":null,"result":{"content":[],"structuredContent":{"ok":true}}}}`, req.ID)
		default:
			http.Error(w, "no", http.StatusNotFound)
		}
	}))
	defer srv.Close()
	c := newClient(t, srv.URL, client.Options{})
	res, err := c.Call(t.Context(), "slow", map[string]any{}, client.PreferTask())
	if err != nil || res.Task == nil {
		t.Fatalf("call: %v %+v", err, res)
	}
	out, err := res.Task.Wait(t.Context())
	if err != nil || string(out.StructuredContent) != `{"ok":true}` {
		t.Fatalf("Wait: %v %+v", err, out)
	}
}
