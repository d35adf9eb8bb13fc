package mcp_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
)

func TestLegacyVersionClassification(t *testing.T) {
	tests := []struct {
		v              string
		legacy, modern bool
	}{
		{"2025-03-26", true, false},
		{"2025-06-18", true, false},
		{"2025-11-25", true, false},
		{"2026-07-28", false, true},
		{"2027-01-01", false, true},
		{"2024-11-05", false, false},
		{"2026-07-2x", false, false},
		{"2026-07-28 ", false, false},
		{"9999-99-99", false, true},
		{"", false, false},
	}
	for _, tt := range tests {
		if got := mcp.IsLegacyVersion(tt.v); got != tt.legacy {
			t.Errorf("IsLegacyVersion(%q) = %v, want %v", tt.v, got, tt.legacy)
		}
		if got := mcp.IsModernVersion(tt.v); got != tt.modern {
			t.Errorf("IsModernVersion(%q) = %v, want %v", tt.v, got, tt.modern)
		}
	}
}

func TestLegacyWireShapes(t *testing.T) {
	tool := &mcp.Tool{Name: "build", Description: "Builds."}
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"tool without execution", mcp.LegacyTool{Tool: tool},
			`{"name":"build","description":"Builds.","inputSchema":{"type":"object"}}`},
		{"tool with execution", mcp.LegacyTool{Tool: tool, Execution: &mcp.ToolExecution{TaskSupport: mcp.TaskSupportRequired}},
			`{"name":"build","description":"Builds.","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`},
		{"empty tools list", mcp.LegacyListToolsResult{}, `{"tools":[]}`},
		{"server tasks capability", mcp.LegacyServerCapabilities{Tasks: &mcp.ServerTasksCapability{
			List: mcp.Object{}, Cancel: mcp.Object{},
			Requests: &mcp.ServerTaskRequestsLegacy{Tools: &mcp.ToolsTaskRequests{Call: mcp.Object{}}},
		}}, `{"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}}`},
		{"initialize result", mcp.InitializeResult{
			ProtocolVersion: mcp.ProtocolVersion20251125,
			Capabilities:    &mcp.LegacyServerCapabilities{Logging: mcp.Object{}, Tools: &mcp.ToolsCapability{}},
			ServerInfo:      &mcp.Implementation{Name: "s", Version: "1"},
		}, `{"protocolVersion":"2025-11-25","capabilities":{"logging":{},"tools":{}},"serverInfo":{"name":"s","version":"1"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(b)); diff != "" {
				t.Errorf("encoding (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLegacyClientCapabilitiesDecode(t *testing.T) {
	var p mcp.InitializeParams
	raw := `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{},"roots":{"listChanged":true},"tasks":{"list":{},"cancel":{},"requests":{"elicitation":{"create":{}},"sampling":{"createMessage":{}}}}},"clientInfo":{"name":"c","version":"2"}}`
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	caps := p.Capabilities.ClientCapabilities()
	if !caps.SupportsElicitationForm() || caps.SupportsElicitationURL() || caps.Sampling == nil || caps.Roots == nil || !caps.Roots.ListChanged {
		t.Errorf("mapped capabilities = %+v", caps)
	}
	if tk := p.Capabilities.Tasks; tk == nil || tk.Requests == nil || tk.Requests.Elicitation == nil || tk.Requests.Sampling == nil || tk.List == nil {
		t.Errorf("tasks capability = %+v", tk)
	}
	if got := (*mcp.LegacyClientCapabilities)(nil).ClientCapabilities(); got == nil {
		t.Error("nil capabilities must map to an empty object")
	}
}
