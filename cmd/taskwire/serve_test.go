package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// TestServeEndToEnd runs the serve wiring against a temporary SQLite file
// over real HTTP: the inline demo tools, reports.generate with its report
// file and idempotency key, input validation, and approvals.request through
// an elicitation form.
func TestServeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	logger, logs := bufferLogger()
	cfg := testConfig(filepath.Join(dir, "tasks.db"), 2)
	cfg.Logger = logger
	n := start(t, cfg)
	if !strings.HasPrefix(n.URL(), "http://127.0.0.1:") || !strings.HasSuffix(n.URL(), "/mcp") {
		t.Fatalf("URL = %q", n.URL())
	}
	c := newClient(t, n.URL())
	reportsDir := filepath.Join(dir, "reports") // the default: beside the database

	t.Run("tools/list", func(t *testing.T) {
		r, err := c.Call(t.Context(), mcp.MethodToolsList, nil)
		if err != nil || r.Error != nil {
			t.Fatalf("tools/list: %v %v", err, r.Error)
		}
		var res mcp.ListToolsResult
		if err := r.DecodeResult(&res); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
			if tool.Name == toolReports {
				for _, prop := range []string{"accountId", "rows", "checksum", "generatedAt"} {
					if !strings.Contains(string(tool.OutputSchema), `"`+prop+`"`) {
						t.Errorf("reports.generate output schema lacks %s: %s", prop, tool.OutputSchema)
					}
				}
			}
		}
		slices.Sort(names)
		want := []string{toolApprovals, "hash.sha256", toolReports, "text.stats", "time.convert"}
		if !slices.Equal(names, want) {
			t.Errorf("tools = %v, want %v", names, want)
		}
	})

	t.Run("inline tool", func(t *testing.T) {
		r := callTool(t, c, "hash.sha256", map[string]any{"text": "abc"})
		var res struct {
			StructuredContent HashOutput `json:"structuredContent"`
		}
		if err := r.DecodeResult(&res); err != nil {
			t.Fatal(err)
		}
		if got := res.StructuredContent.SHA256; got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
			t.Errorf("sha256 = %s", got)
		}
	})

	var reportID string
	t.Run("reports.generate", func(t *testing.T) {
		args := map[string]any{"accountId": "acme-42", "rows": 1500, "seconds": 0, "idempotencyKey": "monthly-2026-07"}
		reportID = createTask(t, c, toolReports, args)
		g := waitStatus(t, c, reportID, mcp.TaskCompleted)
		got := structured[Report](t, g)
		if got.AccountID != "acme-42" || got.Rows != 1500 || got.Checksum != reportChecksum("acme-42", 1500) {
			t.Errorf("report = %+v", got)
		}
		if len(got.Checksum) != 64 {
			t.Errorf("checksum %q is not SHA-256 hex", got.Checksum)
		}
		if _, err := time.Parse(time.RFC3339, got.GeneratedAt); err != nil {
			t.Errorf("generatedAt: %v", err)
		}

		// The side effect: exactly one file, named after the task, holding
		// the report.
		if files := reportFiles(t, reportsDir); !slices.Equal(files, []string{reportID + ".json"}) {
			t.Fatalf("reports dir holds %v, want only %s.json", files, reportID)
		}
		b, err := os.ReadFile(filepath.Join(reportsDir, reportID+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var onDisk Report
		if err := json.Unmarshal(b, &onDisk); err != nil || onDisk != got {
			t.Errorf("report file = %+v (%v), want %+v", onDisk, err, got)
		}

		// A retry with the same key and arguments is the same task, and
		// does no new work.
		if again := createTask(t, c, toolReports, args); again != reportID {
			t.Errorf("retry with the same idempotency key: task %s, want %s", again, reportID)
		}
		if files := reportFiles(t, reportsDir); len(files) != 1 {
			t.Errorf("reports dir after the retry holds %v", files)
		}

		// The same key with other arguments is refused with a tool error.
		args["rows"] = 1501
		text := toolErrorText(t, callTool(t, c, toolReports, args))
		if !strings.Contains(text, "idempotencyKey was already used with different arguments") {
			t.Errorf("conflict text = %q", text)
		}
	})

	t.Run("reports.generate validation", func(t *testing.T) {
		for _, tt := range []struct {
			args map[string]any
			want string
		}{
			{map[string]any{"accountId": " ", "rows": 1, "seconds": 0}, "accountId must not be empty"},
			{map[string]any{"accountId": "a", "rows": 0, "seconds": 0}, "rows must be between 1 and 1000000"},
			{map[string]any{"accountId": "a", "rows": 1_000_001, "seconds": 0}, "rows must be between 1 and 1000000"},
			{map[string]any{"accountId": "a", "rows": 1, "seconds": -1}, "seconds must be between 0 and 3600"},
			{map[string]any{"accountId": "a", "rows": 1, "seconds": 3601}, "seconds must be between 0 and 3600"},
			{map[string]any{"accountId": "a", "rows": 1.5, "seconds": 0}, "Invalid arguments"},
			{map[string]any{"rows": 1, "seconds": 0}, "Invalid arguments"},
		} {
			if got := toolErrorText(t, callTool(t, c, toolReports, tt.args)); !strings.Contains(got, tt.want) {
				t.Errorf("%v: %q, want %q", tt.args, got, tt.want)
			}
		}
	})

	t.Run("tasks capability required", func(t *testing.T) {
		plain := newClient(t, n.URL())
		plain.Capabilities = &mcp.ClientCapabilities{}
		r, err := plain.CallTool(t.Context(), toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != 400 || r.Error == nil || r.Error.Code != mcp.CodeMissingRequiredClientCapability {
			t.Errorf("without Tasks: HTTP %d, error %v", r.Status, r.Error)
		}
	})

	t.Run("approvals.request", func(t *testing.T) {
		for _, tt := range []struct {
			name, answer string
			approved     bool
			comment      string
		}{
			{"accept", `{"action":"accept","content":{"approve":true,"comment":"Ship it"}}`, true, "Ship it"},
			{"accept without approve", `{"action":"accept","content":{"approve":false}}`, false, ""},
			{"decline", `{"action":"decline"}`, false, ""},
			{"cancel", `{"action":"cancel"}`, false, ""},
		} {
			t.Run(tt.name, func(t *testing.T) {
				subject := "Deploy v2 to production"
				id := createTask(t, c, toolApprovals, map[string]any{"subject": subject, "details": "All regions."})
				g := waitStatus(t, c, id, mcp.TaskInputRequired)
				req := g.InputRequests[approvalKey]
				if len(g.InputRequests) != 1 || req == nil || req.Method != mcp.MethodElicitationCreate {
					t.Fatalf("input requests = %v", g.InputRequests)
				}
				var p mcp.ElicitParams
				if err := json.Unmarshal(req.Params, &p); err != nil {
					t.Fatal(err)
				}
				if p.Mode != mcp.ElicitModeForm || !strings.Contains(p.Message, subject) || !strings.Contains(p.Message, "All regions.") ||
					!strings.Contains(string(p.RequestedSchema), `"approve"`) {
					t.Errorf("elicitation = %+v", p)
				}

				r, err := c.UpdateTask(t.Context(), id, mcp.InputResponses{approvalKey: json.RawMessage(tt.answer)})
				if err != nil || r.Error != nil {
					t.Fatalf("tasks/update: %v %v", err, r.Error)
				}
				got := structured[Approval](t, waitStatus(t, c, id, mcp.TaskCompleted))
				if got.Subject != subject || got.Approved != tt.approved || got.Comment != tt.comment {
					t.Errorf("approval = %+v", got)
				}
				if _, err := time.Parse(time.RFC3339, got.DecidedAt); err != nil {
					t.Errorf("decidedAt: %v", err)
				}
			})
		}
	})

	// Nothing request-derived reaches the logs.
	for _, secret := range []string{reportID, "acme-42", "monthly-2026-07", "Deploy v2", "Ship it"} {
		if secret != "" && strings.Contains(logs.String(), secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
}
