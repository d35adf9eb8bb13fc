package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// TestInvoicesExample runs examples/invoices, the one-tool program the
// README shows, as its users would: it must do what taskwire does, on its
// own tool.
func TestInvoicesExample(t *testing.T) {
	bin := programBinary(t, invoicesPkg)
	t.Run("sqlite", func(t *testing.T) { testInvoicesSQLite(t, bin) })
	t.Run("stdio", func(t *testing.T) { testInvoicesStdio(t, bin) })
	t.Run("postgres", func(t *testing.T) { testInvoicesFleet(t, bin) })
}

// exportOut is invoices.export's structured result.
type exportOut struct {
	Account  string `json:"account"`
	Invoices int    `json:"invoices"`
}

// export calls invoices.export on c and returns the task ID.
func (c *client) export(t *testing.T, account string, months int) string {
	t.Helper()
	r := c.mustCall(t, mcp.MethodToolsCall, "invoices.export", map[string]any{"name": "invoices.export",
		"arguments": map[string]any{"account": account, "months": months}})
	h, err := r.TaskHandle()
	if err != nil || h.TaskID == "" {
		t.Fatalf("invoices.export on %s: %v: HTTP %d %s", c.url, err, r.Status, r.Body)
	}
	return h.TaskID
}

// awaitExport polls the task until it ends, and returns its result and the
// status messages seen on the way.
func (c *client) awaitExport(t *testing.T, id string) (exportOut, []string) {
	t.Helper()
	var seen []string
	var g *mcp.GetTaskResult
	poll(t, 60*time.Second, 100*time.Millisecond, func() string { return fmt.Sprintf("task %s still %q", id, g.Status) },
		func() bool {
			g = c.getTask(t, id)
			if m := g.StatusMessage; m != "" && (len(seen) == 0 || seen[len(seen)-1] != m) {
				seen = append(seen, m)
			}
			return g.Status.Terminal()
		})
	if g.Status != mcp.TaskCompleted {
		t.Fatalf("task %s ended %q (error %v)", id, g.Status, g.Error)
	}
	var res struct {
		IsError           bool      `json:"isError"`
		StructuredContent exportOut `json:"structuredContent"`
	}
	if err := json.Unmarshal(g.Result, &res); err != nil || res.IsError {
		t.Fatalf("task %s result %s: %v", id, g.Result, err)
	}
	return res.StructuredContent, seen
}

var adminLine = regexp.MustCompile(`admin endpoints at (http://\S+)`)

// testInvoicesSQLite: `invoices serve` keeps its tasks in invoices.db in
// the working directory, runs them in process, reports progress month by
// month, and shows the tool on /metrics.
func testInvoicesSQLite(t *testing.T, bin string) {
	p := launchBinary(t, bin, "invoices", "serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0")
	p.awaitServing()
	if _, err := os.Stat(filepath.Join(p.cmd.Dir, "invoices.db")); err != nil {
		t.Errorf("no invoices.db in the working directory: %v\n%s", err, p.output())
	}
	c := newClient(t, p.url, "alice")
	id := c.export(t, "acme", 2)
	out, seen := c.awaitExport(t, id)
	if out != (exportOut{Account: "acme", Invoices: 6}) {
		t.Errorf("result %+v, want acme with 6 invoices", out)
	}
	if len(seen) == 0 || seen[0] != "month 1 of 2" {
		t.Errorf("status messages %q, want month 1 of 2 first", seen)
	}
	m := adminLine.FindStringSubmatch(p.stdout.String())
	if m == nil {
		t.Fatalf("no admin address printed:\n%s", p.output())
	}
	resp, err := http.Get(m[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"invoices.export"`)) {
		t.Errorf("/metrics: HTTP %d, invoices.export named: %v", resp.StatusCode, bytes.Contains(body, []byte("invoices.export")))
	}
	p.checkHealthy(t)
}

// testInvoicesStdio: `invoices serve --stdio` serves its tool to an MCP host
// over standard input and output, with its store in the user's data
// directory.
func testInvoicesStdio(t *testing.T, bin string) {
	home := t.TempDir()
	cmd := exec.Command(bin, "serve", "--stdio")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_DATA_HOME="+filepath.Join(home, "data"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr syncBuffer
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // EOF ends the server
		if err := cmd.Wait(); err != nil {
			t.Errorf("invoices serve --stdio: %v\n%s", err, stderr.String())
		}
	}()
	lines := make(chan []byte)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(stdin, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	await := func(id int) map[string]any {
		t.Helper()
		timeout := time.After(startTimeout)
		for {
			select {
			case l, ok := <-lines:
				if !ok {
					t.Fatalf("stdout ended before response %d\n%s", id, stderr.String())
				}
				var msg map[string]any
				if json.Unmarshal(l, &msg) == nil && msg["id"] == float64(id) {
					return msg
				}
			case <-timeout:
				t.Fatalf("no response %d within %v\n%s", id, startTimeout, stderr.String())
			}
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if msg := await(1); msg["result"] == nil {
		t.Fatalf("initialize: %v", msg)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if b, _ := json.Marshal(await(2)); !bytes.Contains(b, []byte(`"name":"invoices.export"`)) {
		t.Fatalf("tools/list over stdio: %s", b)
	}
	if dbs, _ := filepath.Glob(filepath.Join(home, "data", "invoices", "*.db")); len(dbs) != 1 {
		t.Errorf("store files in the user's data directory: %v\n%s", dbs, stderr.String())
	}
}

// testInvoicesFleet: `invoices migrate`, two API nodes (`serve --workers
// 0`) and one `invoices worker` on one PostgreSQL schema: a task created on
// one API node is read on the other while the worker runs it, and a
// 2025-11-25 session opened on one node answers on the other.
func testInvoicesFleet(t *testing.T, bin string) {
	pgURL := sharedPostgres(t)
	schema := newSchema(t, pgURL)
	store := []string{"--store", pgURL, "--schema", schema}
	m := launchBinary(t, bin, "migrate", append([]string{"migrate", "--log-level", "warn"}, store...)...)
	select {
	case <-m.done:
	case <-time.After(startTimeout):
		t.Fatal("invoices migrate did not finish")
	}
	if m.err != nil || !strings.Contains(m.stdout.String(), "is at schema version") {
		t.Fatalf("invoices migrate: %v\n%s", m.err, m.output())
	}
	api := func(name string) *proc {
		p := launchBinary(t, bin, name, append([]string{"serve", "--addr", "127.0.0.1:0", "--workers", "0", "--no-migrate"}, store...)...)
		p.awaitServing()
		return p
	}
	a, b := api("api-A"), api("api-B")
	w := launchBinary(t, bin, "worker", append([]string{"worker", "--workers", "2", "--no-migrate"}, store...)...)

	id := newClient(t, a.url, "alice").export(t, "fleet", 2)
	onB := newClient(t, b.url, "alice")
	if g := onB.getTask(t, id); g.Status != mcp.TaskWorking {
		t.Fatalf("on B: task %q, want working", g.Status)
	}
	if out, _ := onB.awaitExport(t, id); out != (exportOut{Account: "fleet", Invoices: 6}) {
		t.Errorf("result on B %+v, want fleet with 6 invoices", out)
	}

	sid := legacyInitialize(t, a.url)
	if code, body, _ := legacyCall(t, b.url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); code != http.StatusOK ||
		!bytes.Contains(body, []byte(`"name":"invoices.export"`)) {
		t.Errorf("tools/list on B in A's session: HTTP %d %s", code, body)
	}
	for _, p := range []*proc{a, b, w} {
		p.checkHealthy(t)
	}
}

// legacyCall sends one 2025-11-25 message in session sid ("" before
// initialize) and returns the HTTP status, the body (an SSE response
// reduced to its last data line) and the Mcp-Session-Id response header.
func legacyCall(t *testing.T, url, sid, body string) (int, []byte, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer alice")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	resp, err := (&http.Client{Timeout: requestTimeout}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndex(b, []byte("data: ")); i >= 0 {
		b = bytes.TrimSpace(b[i+len("data: "):])
	}
	return resp.StatusCode, b, resp.Header.Get("Mcp-Session-Id")
}

// legacyInitialize opens a 2025-11-25 session on the node at url.
func legacyInitialize(t *testing.T, url string) string {
	t.Helper()
	code, body, sid := legacyCall(t, url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"e2e","version":"1"}}}`)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize on %s: HTTP %d %s", url, code, body)
	}
	legacyCall(t, url, sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return sid
}
