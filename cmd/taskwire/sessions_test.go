package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
)

// legacyPost sends one 2025-11-25 message to url, inside session sid when
// it is not empty, and returns the response.
func legacyPost(t *testing.T, url, sid, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	}
	c := &http.Client{Timeout: waitFor}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// initialize opens a 2025-11-25 session on the node at url.
func initialize(t *testing.T, url string) string {
	t.Helper()
	return initializeWith(t, url, `{}`)
}

// callStats calls text.stats inside session sid and returns the HTTP
// status and the JSON-RPC response (an SSE response is reduced to its
// last data line).
func callStats(t *testing.T, url, sid string) (int, map[string]any) {
	t.Helper()
	resp, body := legacyPost(t, url, sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"text.stats","arguments":{"text":"a b"}}}`)
	if i := bytes.LastIndex(body, []byte("data: ")); i >= 0 {
		body = bytes.TrimSpace(body[i+len("data: "):])
	}
	var msg map[string]any
	if len(body) > 0 {
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("tools/call response %q: %v", body, err)
		}
	}
	return resp.StatusCode, msg
}

// TestSessionsSurviveRestart: serve keeps 2025-era sessions in its SQLite
// store, so a client's session goes on after the node restarts (with the
// server's in-process default it would get 404 and have to initialize
// again, losing its place).
func TestSessionsSurviveRestart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "tasks.db")
	a := start(t, testConfig(db, 0))
	sid := initialize(t, a.URL())
	if code, msg := callStats(t, a.URL(), sid); code != http.StatusOK || msg["result"] == nil {
		t.Fatalf("tools/call before the restart: %d %v", code, msg)
	}
	if err := a.Shutdown(); err != nil {
		t.Fatal(err)
	}
	b := start(t, testConfig(db, 0))
	if code, msg := callStats(t, b.URL(), sid); code != http.StatusOK || msg["result"] == nil {
		t.Fatalf("tools/call after the restart: %d %v, want the session to live on", code, msg)
	}
}

// TestSessionsAcrossPostgresNodes: on PostgreSQL, a session opened on one
// node of a fleet is served by another.
func TestSessionsAcrossPostgresNodes(t *testing.T) {
	raw := pgtest.URL(t)
	schema := testSchema(t, raw)
	cfg := node.Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.Postgres, URL: raw}, Schema: schema},
		ShutdownGrace: 200 * time.Millisecond,
	}
	a, b := start(t, cfg), start(t, cfg)
	sid := initialize(t, a.URL())
	if code, msg := callStats(t, b.URL(), sid); code != http.StatusOK || msg["result"] == nil {
		t.Fatalf("tools/call on the other node: %d %v", code, msg)
	}
	// DELETE on B ends the session for A as well.
	req, _ := http.NewRequest(http.MethodDelete, b.URL(), nil)
	req.Header.Set("Mcp-Session-Id", sid)
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		t.Fatalf("DELETE: %d", resp.StatusCode)
	}
	deadline := time.Now().Add(waitFor)
	for {
		code, _ := callStats(t, a.URL(), sid)
		if code == http.StatusNotFound {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("tools/call on A after DELETE on B: %d, want 404", code)
		}
		time.Sleep(100 * time.Millisecond) // A trusts its cache of the record for a short while
	}
}

// TestDevSessionsPerAddr: with development identities, Bearer names
// rotated from one address share --sessions-per-caller, while another
// address still opens sessions.
func TestDevSessionsPerAddr(t *testing.T) {
	cfg := testConfig(filepath.Join(t.TempDir(), "tasks.db"), 0)
	cfg.Sessions = server.SessionOptions{MaxPerPrincipal: 2}
	n := start(t, cfg)
	initializeAs := func(local, name string) int {
		req, err := http.NewRequest(http.MethodPost, n.URL(), strings.NewReader(
			`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+name)
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		c := &http.Client{Timeout: waitFor, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	var got []int
	for _, who := range []string{"127.0.0.1 n1", "127.0.0.1 n2", "127.0.0.1 n3", "127.0.0.2 n3"} {
		local, name, _ := strings.Cut(who, " ")
		got = append(got, initializeAs(local, name))
	}
	if want := []int{200, 200, 429, 200}; !slices.Equal(got, want) {
		t.Errorf("initialize as n1, n2, n3 from one address, n3 from another: %v, want %v", got, want)
	}
}
