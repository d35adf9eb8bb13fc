package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// inlineMsg is one JSON-RPC message a 2025-era client reads.
type inlineMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// inlineClient is a minimal 2025-06-18 client: a session, POSTs whose SSE
// responses it reads to the end, and answers to the server's requests.
type inlineClient struct {
	t      *testing.T
	url    string
	sid    string
	answer func(m inlineMsg) string // the result JSON of a server request
}

func (c *inlineClient) post(body string) []inlineMsg {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", "2025-06-18")
	}
	res, err := (&http.Client{Timeout: waitFor}).Do(req)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	if sid := res.Header.Get("Mcp-Session-Id"); sid != "" {
		c.sid = sid
	}
	if res.StatusCode == http.StatusAccepted {
		return nil
	}
	var msgs []inlineMsg
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		var m inlineMsg
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
			c.t.Fatalf("status %d: %v", res.StatusCode, err)
		}
		return append(msgs, m)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var m inlineMsg
		if err := json.Unmarshal(data, &m); err != nil {
			c.t.Fatalf("event %q: %v", data, err)
		}
		msgs = append(msgs, m)
		if m.Method != "" && len(m.ID) > 0 && c.answer != nil {
			c.post(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + c.answer(m) + `}`)
		}
		if m.Method == "" {
			break
		}
	}
	return msgs
}

// TestDurableToolsWaitInline: `taskwire serve` on its defaults serves its
// durable tools to a 2025-06-18 client without tasks: both are ordinary
// tools to it, reports.generate answers with its report, and
// approvals.request asks through a real elicitation request.
func TestDurableToolsWaitInline(t *testing.T) {
	n := start(t, testConfig(filepath.Join(t.TempDir(), "taskwire.db"), 1))
	c := &inlineClient{t: t, url: n.URL()}
	c.post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",` +
		`"capabilities":{"elicitation":{}},"clientInfo":{"name":"inline","version":"1"}}}`)
	if c.sid == "" {
		t.Fatal("initialize opened no session")
	}
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	list := c.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	for _, name := range []string{toolReports, toolApprovals} {
		if !strings.Contains(string(list[len(list)-1].Result), `"name":"`+name+`"`) {
			t.Errorf("tools/list lacks %s: %s", name, list[len(list)-1].Result)
		}
	}

	msgs := c.post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"reports.generate",` +
		`"arguments":{"accountId":"acme","rows":3,"seconds":0}}}`)
	var res struct {
		StructuredContent Report `json:"structuredContent"`
		IsError           bool   `json:"isError"`
	}
	final := msgs[len(msgs)-1]
	if err := json.Unmarshal(final.Result, &res); err != nil || res.IsError || res.StructuredContent.Rows != 3 ||
		res.StructuredContent.Checksum != reportChecksum("acme", 3) {
		t.Fatalf("reports.generate = %s %+v", final.Result, final.Error)
	}

	var asked []string
	c.answer = func(m inlineMsg) string {
		asked = append(asked, m.Method)
		return `{"action":"accept","content":{"approve":true,"comment":"ok"}}`
	}
	msgs = c.post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"approvals.request",` +
		`"arguments":{"subject":"deploy"}}}`)
	var appr struct {
		StructuredContent Approval `json:"structuredContent"`
	}
	final = msgs[len(msgs)-1]
	if err := json.Unmarshal(final.Result, &appr); err != nil || !appr.StructuredContent.Approved || appr.StructuredContent.Comment != "ok" {
		t.Fatalf("approvals.request = %s %+v", final.Result, final.Error)
	}
	if len(asked) != 1 || asked[0] != "elicitation/create" {
		t.Errorf("server requests = %v", asked)
	}
}
