package interop

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	mcpgo "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestMCPGoClient drives `taskwire serve` with the mcp-go v1.2.1 client
// pinned to each 2025-era revision, without the tasks capability: the
// same flow as TestGoSDKClient, plus the rule that such a client never
// sees execution.taskSupport "required".
func TestMCPGoClient(t *testing.T) {
	p := startServe(t)
	for _, version := range legacyVersions {
		t.Run(version, func(t *testing.T) { mcpGoFlow(t, p, version) })
	}
}

// mcpGoElicitor answers every elicitation with the flow's approval.
type mcpGoElicitor struct{ rec *elicitRecorder }

func (e mcpGoElicitor) Elicit(_ context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	e.rec.record(req.Params.Mode, req.Params.Message, req.Params.RequestedSchema)
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{
		Action: mcp.ElicitationResponseActionAccept, Content: approvalAnswer,
	}}, nil
}

func mcpGoFlow(t *testing.T, p *serveProc, version string) {
	rec := &elicitRecorder{}
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	// This client is a named caller: serve admits a Bearer token as the
	// caller's development identity.
	const caller = "interop-alice"
	trans, err := transport.NewStreamableHTTP(p.URL,
		transport.WithHTTPBasicClient(&http.Client{Transport: tr}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + caller}),
	)
	if err != nil {
		t.Fatal(err)
	}
	c := mcpgo.NewClient(trans,
		mcpgo.WithProtocolVersion(version),
		mcpgo.WithElicitationHandler(mcpGoElicitor{rec}),
	)
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	closed := false
	defer func() {
		if !closed {
			c.Close()
		}
	}()
	init, err := c.Initialize(ctx, mcp.InitializeRequest{Params: mcp.InitializeParams{
		ProtocolVersion: version,
		ClientInfo:      mcp.Implementation{Name: "interop-mcpgo", Version: "1.0.0"},
	}})
	if err != nil {
		t.Fatalf("initialize %s: %v", version, err)
	}
	sessionID := c.GetSessionId()

	t.Run("initialize", func(t *testing.T) {
		if init.ProtocolVersion != version {
			t.Errorf("negotiated %q, want %q", init.ProtocolVersion, version)
		}
		if init.ServerInfo.Name != serverName {
			t.Errorf("serverInfo = %+v, want name %q", init.ServerInfo, serverName)
		}
		if init.Capabilities.Tools == nil {
			t.Errorf("capabilities = %+v, want tools", init.Capabilities)
		}
		if init.Capabilities.Tasks != nil {
			t.Errorf("capabilities.tasks = %+v: offered to a client that declared no tasks", marshal(t, init.Capabilities.Tasks))
		}
		if sessionID == "" {
			t.Error("no Mcp-Session-Id on the initialize response")
		}
	})

	t.Run("tools/list", func(t *testing.T) {
		res, err := c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.Execution != nil && tool.Execution.TaskSupport == mcp.TaskSupportRequired {
				t.Errorf("%s: execution.taskSupport required, shown to a client without tasks", tool.Name)
			}
		}
		if d := cmp.Diff(wantTools, sortedNames(names)); d != "" {
			t.Errorf("tools (-want +got):\n%s", d)
		}
	})

	t.Run(toolTextStats, func(t *testing.T) {
		raw := mcpGoCall(t, ctx, c, toolTextStats, textStatsIn)
		var got textStats
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(textStatsWant, got); d != "" {
			t.Errorf("text.stats (-want +got):\n%s", d)
		}
	})

	t.Run(toolReports, func(t *testing.T) {
		account := "mcpgo-" + version
		checkReport(t, p.Dir, account, mcpGoCall(t, ctx, c, toolReports, reportArgs(account)))
	})

	t.Run(toolApprovals, func(t *testing.T) {
		checkApproval(t, mcpGoCall(t, ctx, c, toolApprovals, approvalArgs))
		if d := cmp.Diff([]elicitation{wantElicitation}, rec.take()); d != "" {
			t.Errorf("elicitation requests (-want +got):\n%s", d)
		}
	})

	t.Run("another caller", func(t *testing.T) {
		if status, _ := ping(t, p.URL, version, sessionID, caller); status != http.StatusOK {
			t.Fatalf("ping as the session's caller: HTTP %d, want 200", status)
		}
		// The session's ID sent by anyone else gets exactly what an
		// unknown ID gets.
		otherStatus, otherBody := ping(t, p.URL, version, sessionID, "interop-mallory")
		unknownStatus, unknownBody := ping(t, p.URL, version, otherID(sessionID), "interop-mallory")
		if otherStatus != http.StatusNotFound || otherStatus != unknownStatus || otherBody != unknownBody {
			t.Errorf("another caller: HTTP %d %q; unknown session: HTTP %d %q; want the same 404",
				otherStatus, otherBody, unknownStatus, unknownBody)
		}
	})

	t.Run("close", func(t *testing.T) {
		closed = true
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		// mcp-go v1.2.1 sends its DELETE without the headers it was given,
		// so the DELETE comes from no caller at all: it must not end
		// another caller's session.
		if got, _ := ping(t, p.URL, version, sessionID, caller); got != http.StatusOK {
			t.Errorf("ping after a DELETE without the caller's token: HTTP %d, want 200 (the session stays)", got)
		}
		if got := deleteSession(t, p.URL, version, sessionID, caller); got < 200 || got > 299 {
			t.Errorf("DELETE as the session's caller: HTTP %d, want 2xx", got)
		}
		if got, _ := ping(t, p.URL, version, sessionID, caller); got != http.StatusNotFound {
			t.Errorf("ping in the ended session: HTTP %d, want 404", got)
		}
	})
	checkNoLeaks(t, p, sessionID)
}

// mcpGoCall calls a tool and returns its structured content, failing the
// test on an error or on a result in 2026 shape.
func mcpGoCall(t *testing.T, ctx context.Context, c *mcpgo.Client, name string, args any) []byte {
	t.Helper()
	res, err := c.CallTool(ctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: name, Arguments: args}})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("tools/call %s: isError, content %s", name, marshal(t, res.Content))
	}
	if res.ResultType != "" {
		t.Errorf("tools/call %s: resultType %q in a 2025 result", name, res.ResultType)
	}
	if res.Meta != nil {
		if _, ok := res.Meta.AdditionalFields["io.modelcontextprotocol/serverInfo"]; ok {
			t.Errorf("tools/call %s: a 2025 result carries the 2026 serverInfo _meta", name)
		}
	}
	if res.StructuredContent == nil {
		t.Fatalf("tools/call %s: no structuredContent; content %s", name, marshal(t, res.Content))
	}
	return marshal(t, res.StructuredContent)
}
