package interop

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoWaitInlineSurvivesDisconnect checks the rules of waiting inline
// with a real client that, over HTTP, cancels a call by closing its stream
// and sends nothing else (mcp-go v1.2.1, 2025-11-25, no tasks): while the
// POST waits for the durable task, notifications/progress carrying the
// client's progressToken arrive; a disconnect does not cancel the task;
// a retry with the same idempotency key attaches to the same task, which
// completes once and writes one report.
func TestMCPGoWaitInlineSurvivesDisconnect(t *testing.T) {
	const version = "2025-11-25"
	p := startServe(t)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	trans, err := transport.NewStreamableHTTP(p.URL, transport.WithHTTPBasicClient(&http.Client{Transport: tr}))
	if err != nil {
		t.Fatal(err)
	}
	c := mcpgo.NewClient(trans, mcpgo.WithProtocolVersion(version))
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	defer c.Close()
	if _, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcp.Implementation{Name: "interop-mcpgo-wait", Version: "1.0.0"},
	}}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	progress := make(chan any, 64) // tokens of progress notifications; never blocks the client
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationProgress) {
			return
		}
		select {
		case progress <- n.Params.AdditionalFields["progressToken"]:
		default:
		}
	})

	const account = "mcpgo-disconnect"
	args := map[string]any{"accountId": account, "rows": 7, "seconds": 3, "idempotencyKey": "interop-disconnect"}
	call := func(ctx context.Context, token string) (*mcp.CallToolResult, error) {
		return c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{
			Name: toolReports, Arguments: args, Meta: &mcp.Meta{ProgressToken: token},
		}})
	}

	// The first call: disconnect once the server reports progress.
	first, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() {
		_, err := call(first, "first")
		done <- err
	}()
	timer := time.NewTimer(waitFor)
	defer timer.Stop()
	select {
	case tok := <-progress:
		if tok != "first" {
			t.Errorf("progress notification with token %v, want \"first\"", tok)
		}
	case err := <-done:
		t.Fatalf("the call ended before any progress notification: %v", err)
	case <-timer.C:
		t.Fatalf("no progress notification within %v", waitFor)
	}
	stop()
	if err := <-done; err == nil {
		t.Fatal("the disconnected call returned a result")
	}

	// The retry attaches to the same task and gets its report.
	res, err := call(ctx, "retry")
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	if res.IsError || res.StructuredContent == nil {
		t.Fatalf("retry: %s", marshal(t, res))
	}
	var got report
	if err := json.Unmarshal(marshal(t, res.StructuredContent), &got); err != nil {
		t.Fatal(err)
	}
	if got.AccountID != account || got.Rows != 7 || got.Checksum != wantChecksum(account, 7) {
		t.Errorf("report %+v", got)
	}
	files, _ := filepath.Glob(filepath.Join(p.Dir, "reports", "*.json"))
	n := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r report
		if json.Unmarshal(b, &r) == nil && r.AccountID == account {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d report files for the account, want 1: the retry must attach to the first task", n)
	}
}
