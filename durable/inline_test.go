package durable_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
)

// legacyClient is a 2025-era client over HTTP: it opens a session with
// initialize and reads each POST's response, JSON or server-sent events,
// to its final message.
type legacyClient struct {
	t       *testing.T
	url     string
	version string
	sid     string
	next    int
}

// legacyMsg is the final message of a POST.
type legacyMsg struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// newLegacyClient opens a session of the given revision whose client
// declares caps (nil: none, so that it does not use tasks).
func newLegacyClient(t *testing.T, url, version string, caps map[string]any) *legacyClient {
	c := &legacyClient{t: t, url: url, version: version}
	if caps == nil {
		caps = map[string]any{}
	}
	c.request("initialize", map[string]any{
		"protocolVersion": version, "capabilities": caps,
		"clientInfo": map[string]any{"name": "legacy", "version": "1"},
	})
	if c.sid == "" {
		t.Fatal("initialize: no Mcp-Session-Id")
	}
	c.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return c
}

func (c *legacyClient) request(method string, params any) legacyMsg {
	c.t.Helper()
	c.next++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": c.next, "method": method, "params": params})
	return c.post(string(b))
}

func (c *legacyClient) post(body string) legacyMsg {
	c.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, c.url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if c.sid != "" {
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("MCP-Protocol-Version", c.version)
	}
	res, err := (&http.Client{Timeout: waitFor}).Do(req)
	if err != nil {
		c.t.Fatalf("POST: %v", err)
	}
	defer res.Body.Close()
	if sid := res.Header.Get("Mcp-Session-Id"); sid != "" {
		c.sid = sid
	}
	var m legacyMsg
	if res.StatusCode == http.StatusAccepted {
		return m
	}
	if !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		if err := json.NewDecoder(res.Body).Decode(&m); err != nil {
			c.t.Fatalf("status %d: %v", res.StatusCode, err)
		}
		return m
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data: "))
		if !ok {
			continue
		}
		var ev struct {
			Method string `json:"method"`
			legacyMsg
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			c.t.Fatalf("event %q: %v", data, err)
		}
		if ev.Method == "" { // the response, not a notification
			return ev.legacyMsg
		}
	}
	c.t.Fatalf("the stream ended without a response: %v", sc.Err())
	return m
}

// TestClientsWithoutTasks: a durable tool declared with the defaults is
// an ordinary tool to a 2025-era client without tasks, whose call waits
// inline for the task and returns its result; a tool with RequireTasks is
// hidden from that client and its call refused. A 2026-07-28 request
// without the Tasks extension is refused for both with -32021.
func TestClientsWithoutTasks(t *testing.T) {
	var set durable.Set
	inline := sumTool()
	inline.Tool = &mcp.Tool{Name: "sum.inline", Description: "Adds two numbers."}
	durable.Add(&set, inline)
	only := sumTool()
	only.Tool = &mcp.Tool{Name: "sum.tasks", Description: "Adds two numbers, for clients with tasks."}
	only.RequireTasks = true
	durable.Add(&set, only)
	if err := set.Check(); err != nil {
		t.Fatal(err)
	}
	r := newRig(t, openSQLite(t), &set, &set)
	args := map[string]any{"a": 2, "b": 3}

	for _, version := range []string{mcp.ProtocolVersion20250618, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			c := newLegacyClient(t, r.url+"/mcp", version, nil)
			list := c.request("tools/list", map[string]any{})
			var tools struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if list.Error != nil || json.Unmarshal(list.Result, &tools) != nil {
				t.Fatalf("tools/list: %+v %s", list.Error, list.Result)
			}
			var names []string
			for _, tool := range tools.Tools {
				names = append(names, tool.Name)
			}
			if diff := cmp.Diff([]string{"sum.inline"}, names); diff != "" {
				t.Errorf("tools/list (-want +got):\n%s", diff)
			}

			got := c.request("tools/call", map[string]any{"name": "sum.inline", "arguments": args})
			var res struct {
				IsError           bool           `json:"isError"`
				StructuredContent map[string]any `json:"structuredContent"`
			}
			if got.Error != nil || json.Unmarshal(got.Result, &res) != nil || res.IsError {
				t.Fatalf("tools/call sum.inline: %+v %s", got.Error, got.Result)
			}
			if diff := cmp.Diff(map[string]any{"sum": 5.0}, res.StructuredContent); diff != "" {
				t.Errorf("inline result (-want +got):\n%s", diff)
			}

			refused := c.request("tools/call", map[string]any{"name": "sum.tasks", "arguments": args})
			if refused.Error == nil && !strings.Contains(string(refused.Result), `"isError":true`) {
				t.Errorf("tools/call sum.tasks without tasks: %s, want an error", refused.Result)
			}
		})
	}

	t.Run(mcp.LatestProtocolVersion, func(t *testing.T) {
		c := r.modernClient(t) // declares nothing
		ctx, cancel := context.WithTimeout(context.Background(), waitFor)
		defer cancel()
		list, err := c.Call(ctx, "tools/list", nil)
		if err != nil {
			t.Fatal(err)
		}
		var tools struct {
			Tools []struct {
				Name string `json:"name"`
			} `json:"tools"`
		}
		if err := list.DecodeResult(&tools); err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range tools.Tools {
			names = append(names, tool.Name)
		}
		if diff := cmp.Diff([]string{"sum.inline", "sum.tasks"}, names); diff != "" {
			t.Errorf("tools/list (-want +got):\n%s", diff)
		}
		for _, name := range []string{"sum.inline", "sum.tasks"} {
			resp, err := c.CallTool(ctx, name, args)
			if err != nil {
				t.Fatal(err)
			}
			if e := resp.Error; e == nil || e.Code != mcp.CodeMissingRequiredClientCapability {
				t.Errorf("tools/call %s without the Tasks extension: %s, want -32021", name, resp.Body)
			}
		}
	})
}
