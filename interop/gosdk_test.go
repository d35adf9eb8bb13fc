package interop

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	gosdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestGoSDKClient drives `taskwire serve` with the official go-sdk v1.8.0
// client pinned to each 2025-era revision: initialize, tools/list, an
// inline tool, reports.generate waited for inline to its report file,
// approvals.request answered by the client's elicitation handler, and the
// end of the session (DELETE).
func TestGoSDKClient(t *testing.T) {
	p := startServe(t)
	for _, version := range legacyVersions {
		t.Run(version, func(t *testing.T) { goSDKFlow(t, p, version) })
	}
}

func goSDKFlow(t *testing.T, p *serveProc, version string) {
	rec := &elicitRecorder{}
	client := gosdk.NewClient(&gosdk.Implementation{Name: "interop-gosdk", Version: "1.0.0"}, &gosdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *gosdk.ElicitRequest) (*gosdk.ElicitResult, error) {
			rec.record(req.Params.Mode, req.Params.Message, req.Params.RequestedSchema)
			return &gosdk.ElicitResult{Action: "accept", Content: approvalAnswer}, nil
		},
	})
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	cs, err := client.Connect(ctx, &gosdk.StreamableClientTransport{
		Endpoint:   p.URL,
		HTTPClient: &http.Client{Transport: tr},
	}, &gosdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect (initialize %s): %v", version, err)
	}
	closed := false
	defer func() {
		if !closed {
			cs.Close()
		}
	}()
	sessionID := cs.ID()

	t.Run("initialize", func(t *testing.T) {
		res := cs.InitializeResult()
		if res.ProtocolVersion != version {
			t.Errorf("negotiated %q, want %q", res.ProtocolVersion, version)
		}
		if res.ServerInfo == nil || res.ServerInfo.Name != serverName {
			t.Errorf("serverInfo = %+v, want name %q", res.ServerInfo, serverName)
		}
		if res.Capabilities == nil || res.Capabilities.Tools == nil {
			t.Errorf("capabilities = %+v, want tools", res.Capabilities)
		}
		if sessionID == "" {
			t.Error("no Mcp-Session-Id on the initialize response")
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		if d := cmp.Diff(wantTools, sortedNames(names)); d != "" {
			t.Errorf("tools (-want +got):\n%s", d)
		}
	})

	t.Run(toolTextStats, func(t *testing.T) {
		raw := goSDKCall(t, ctx, cs, toolTextStats, textStatsIn)
		var got textStats
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(textStatsWant, got); d != "" {
			t.Errorf("text.stats (-want +got):\n%s", d)
		}
	})

	t.Run(toolReports, func(t *testing.T) {
		account := "gosdk-" + version
		checkReport(t, p.Dir, account, goSDKCall(t, ctx, cs, toolReports, reportArgs(account)))
	})

	t.Run(toolApprovals, func(t *testing.T) {
		checkApproval(t, goSDKCall(t, ctx, cs, toolApprovals, approvalArgs))
		if d := cmp.Diff([]elicitation{wantElicitation}, rec.take()); d != "" {
			t.Errorf("elicitation requests (-want +got):\n%s", d)
		}
	})

	t.Run("close", func(t *testing.T) {
		closed = true
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if got := pingStatus(t, p.URL, version, sessionID); got != http.StatusNotFound {
			t.Errorf("ping in the closed session: HTTP %d, want 404", got)
		}
	})
	checkNoLeaks(t, p, sessionID)
}

// goSDKCall calls a tool and returns its structured content, failing the
// test on an error or on a result in 2026 shape.
func goSDKCall(t *testing.T, ctx context.Context, cs *gosdk.ClientSession, name string, args any) []byte {
	t.Helper()
	res, err := cs.CallTool(ctx, &gosdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("tools/call %s: isError, content %s", name, marshal(t, res.Content))
	}
	if _, ok := res.Meta["io.modelcontextprotocol/serverInfo"]; ok {
		t.Errorf("tools/call %s: a 2025 result carries the 2026 serverInfo _meta", name)
	}
	if res.StructuredContent == nil {
		t.Fatalf("tools/call %s: no structuredContent; content %s", name, marshal(t, res.Content))
	}
	return marshal(t, res.StructuredContent)
}

// marshal encodes v as JSON or fails the test.
func marshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
