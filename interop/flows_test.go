package interop

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// What the demo endpoint of `taskwire serve` offers, as a 2025-era client
// without tasks must see it. These are the documented contracts of the demo
// tools (cmd/taskwire), restated here independently of its code.
const (
	serverName    = "taskwire-demo"
	toolTextStats = "text.stats"
	toolReports   = "reports.generate"
	toolApprovals = "approvals.request"
)

// legacyVersions are the 2025-era revisions the clients are pinned to.
var legacyVersions = []string{"2025-11-25", "2025-06-18"}

// wantTools are the demo's tools: the durable ones opt in to waiting
// inline, so a client without tasks sees them as ordinary tools.
var wantTools = []string{toolApprovals, "hash.sha256", toolReports, toolTextStats, "time.convert"}

// textStatsIn is the text.stats call of every flow and textStatsWant its
// result: code points, UTF-8 bytes, words and lines.
var (
	textStatsIn   = map[string]any{"text": "héllo wörld\nsecond line"}
	textStatsWant = textStats{Characters: 23, Bytes: 25, Words: 4, Lines: 2}
)

type textStats struct {
	Characters int `json:"characters"`
	Bytes      int `json:"bytes"`
	Words      int `json:"words"`
	Lines      int `json:"lines"`
}

// report is the result of reports.generate and the content of its file.
type report struct {
	AccountID   string `json:"accountId"`
	Rows        int    `json:"rows"`
	Checksum    string `json:"checksum"`
	GeneratedAt string `json:"generatedAt"`
}

// reportArgs are the arguments of reports.generate in every flow: no
// simulated work, so the flow measures the protocol, not a timer.
func reportArgs(account string) map[string]any {
	return map[string]any{"accountId": account, "rows": 1500, "seconds": 0}
}

// wantChecksum is the documented checksum of a report: SHA-256 of the
// account ID and the row count separated by a NUL byte, in hex.
func wantChecksum(account string, rows int) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d", account, rows))
	return hex.EncodeToString(sum[:])
}

// checkReport checks a reports.generate result against its arguments and
// against the report file the worker wrote into dir/reports.
func checkReport(t *testing.T, dir, account string, raw []byte) {
	t.Helper()
	var got report
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("decode report %s: %v", raw, err)
	}
	want := report{AccountID: account, Rows: 1500, Checksum: wantChecksum(account, 1500)}
	if _, err := time.Parse(time.RFC3339, got.GeneratedAt); err != nil {
		t.Errorf("generatedAt %q is not RFC 3339: %v", got.GeneratedAt, err)
	}
	gotNoTime := got
	gotNoTime.GeneratedAt = ""
	if d := cmp.Diff(want, gotNoTime); d != "" {
		t.Errorf("report (-want +got):\n%s", d)
	}
	files, err := filepath.Glob(filepath.Join(dir, "reports", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var onDisk report
		if err := json.Unmarshal(b, &onDisk); err == nil && onDisk == got {
			return
		}
	}
	t.Errorf("no report file in %s holds the returned report %+v (files: %v)", filepath.Join(dir, "reports"), got, files)
}

// approval is the result of approvals.request.
type approval struct {
	Subject   string `json:"subject"`
	Approved  bool   `json:"approved"`
	Comment   string `json:"comment"`
	DecidedAt string `json:"decidedAt"`
}

// The approvals.request call of every flow, the form the user is shown,
// and the user's answer.
var (
	approvalArgs    = map[string]any{"subject": "Deploy v2", "details": "to production"}
	approvalMessage = "Approve: Deploy v2\n\nto production"
	approvalAnswer  = map[string]any{"approve": true, "comment": "ship it"}
	approvalWant    = approval{Subject: "Deploy v2", Approved: true, Comment: "ship it"}
)

// checkApproval checks an approvals.request result.
func checkApproval(t *testing.T, raw []byte) {
	t.Helper()
	var got approval
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatalf("decode approval %s: %v", raw, err)
	}
	if _, err := time.Parse(time.RFC3339, got.DecidedAt); err != nil {
		t.Errorf("decidedAt %q is not RFC 3339: %v", got.DecidedAt, err)
	}
	got.DecidedAt = ""
	if d := cmp.Diff(approvalWant, got); d != "" {
		t.Errorf("approval (-want +got):\n%s", d)
	}
}

// elicitation is what a client's elicitation handler was asked.
type elicitation struct {
	Mode       string
	Message    string
	Properties []string // of the requested schema, sorted
}

// wantElicitation is the approval form as the handler must see it.
var wantElicitation = elicitation{Mode: "form", Message: approvalMessage, Properties: []string{"approve", "comment"}}

// elicitRecorder records the elicitation requests a client's handler
// receives; handlers run on the clients' goroutines.
type elicitRecorder struct {
	mu  sync.Mutex
	got []elicitation
}

// record notes one request; schema is the requested schema as the client
// decoded it.
func (r *elicitRecorder) record(mode, message string, schema any) {
	e := elicitation{Mode: mode, Message: message}
	if e.Mode == "" {
		e.Mode = "form" // the default when a request names no mode
	}
	b, _ := json.Marshal(schema)
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	_ = json.Unmarshal(b, &s)
	for k := range s.Properties {
		e.Properties = append(e.Properties, k)
	}
	slices.Sort(e.Properties)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, e)
}

// take returns and clears what was recorded.
func (r *elicitRecorder) take() []elicitation {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	return got
}

// checkNoLeaks fails the test if the server's log holds any of the given
// secrets (session IDs): the server never logs them.
func checkNoLeaks(t *testing.T, p *serveProc, secrets ...string) {
	t.Helper()
	logs := p.Stderr()
	for _, s := range secrets {
		if s != "" && strings.Contains(logs, s) {
			t.Errorf("the server's log holds a session ID")
		}
	}
}

// sortedNames returns names sorted.
func sortedNames(names []string) []string {
	names = slices.Clone(names)
	slices.Sort(names)
	return names
}

// pingStatus sends a ping inside the session sessionID over plain HTTP and
// returns the HTTP status: 404 once the session has ended.
func pingStatus(t *testing.T, url, version, sessionID string) int {
	t.Helper()
	status, _ := ping(t, url, version, sessionID, "")
	return status
}

// ping sends a ping inside the session sessionID over plain HTTP, as the
// caller named by token ("" for none), and returns the status and body.
func ping(t *testing.T, url, version, sessionID, token string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url,
		strings.NewReader(`{"jsonrpc":"2.0","id":99,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", version)
	req.Header.Set("Mcp-Session-Id", sessionID)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	return resp.StatusCode, string(body)
}

// deleteSession ends the session sessionID with a DELETE as the caller
// named by token and returns the HTTP status.
func deleteSession(t *testing.T, url, version, sessionID, token string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("MCP-Protocol-Version", version)
	req.Header.Set("Mcp-Session-Id", sessionID)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// otherID returns an ID of the same length and alphabet as id that differs
// from it in its first character, so that no server issued it.
func otherID(id string) string {
	first := byte('A')
	if id != "" && id[0] == 'A' {
		first = 'B'
	}
	if id == "" {
		return "A"
	}
	return string(first) + id[1:]
}
