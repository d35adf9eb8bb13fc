package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/oauth"
)

// freeLoopbackAddr returns a loopback address whose port was free a moment
// ago, for a server whose resource URI must be known before it starts.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestServeWithAuth runs `taskwire serve` with the auth flags against a
// test issuer (the JWKS discovered, not given): a valid token creates and
// reads a durable task, a request without one gets the challenge, and the
// metadata is served at both well-known URLs.
func TestServeWithAuth(t *testing.T) {
	iss := testissuer.New(t)
	addr := freeLoopbackAddr(t)
	resource := "http://" + addr + "/mcp"
	dir := t.TempDir()
	out := runCommand(t, []string{"serve", "--addr", addr, "--store", filepath.Join(dir, "auth.db"),
		"--workers", "1", "--reports-dir", filepath.Join(dir, "out"), "--shutdown-grace", "1s", "--log-level", "info",
		"--auth-issuer", iss.URL, "--auth-audience", resource, "--auth-scopes", "reports.generate=reports"},
		func(t *testing.T, url string) {
			c := newClient(t, url)
			res, err := c.CallTool(t.Context(), toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0})
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != http.StatusUnauthorized ||
				res.Header.Get("WWW-Authenticate") != `Bearer scope="reports", resource_metadata="http://`+addr+`/.well-known/oauth-protected-resource/mcp"` {
				t.Errorf("without a token: HTTP %d, challenge %q", res.Status, res.Header.Get("WWW-Authenticate"))
			}
			claims := iss.Claims("alice", resource, time.Now())
			claims["scope"] = "reports"
			c.Header = http.Header{"Authorization": {"Bearer " + iss.Token(t, claims)}}
			id := createTask(t, c, toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0})
			waitStatus(t, c, id, mcp.TaskCompleted)

			for _, p := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
				resp, err := http.Get("http://" + addr + p)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(body), `"resource":"`+resource+`"`) ||
					!strings.Contains(string(body), `"authorization_servers":["`+iss.URL+`"]`) {
					t.Errorf("GET %s: HTTP %d %s", p, resp.StatusCode, body)
				}
			}
		})
	if !strings.Contains(out, "callers need access tokens for this resource") {
		t.Errorf("serve did not say it requires tokens:\n%s", out)
	}
	if !strings.Contains(out, "reason=missing") || strings.Contains(out, "alice") {
		t.Errorf("log lacks the refusal category or holds the subject:\n%s", out)
	}
}

// TestServeSaysDevIdentities checks that serve without auth flags says
// that it admits development identities.
func TestServeSaysDevIdentities(t *testing.T) {
	out := runCommand(t, []string{"serve", "--addr", "127.0.0.1:0", "--store", filepath.Join(t.TempDir(), "dev.db"),
		"--workers", "0", "--shutdown-grace", "1s"}, func(*testing.T, string) {})
	if !strings.Contains(out, "development identities (any Bearer NAME is caller NAME, unchecked), so loopback only") {
		t.Errorf("serve did not say it uses development identities:\n%s", out)
	}
}

func TestAuthFlagErrors(t *testing.T) {
	iss := testissuer.New(t)
	db := filepath.Join(t.TempDir(), "x.db")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--addr", "192.0.2.1:8080"}, "--auth-issuer and --auth-audience"},
		{[]string{"--addr", "192.0.2.1:8080"}, "--insecure-dev-auth"},
		{[]string{"--auth-issuer", iss.URL}, "--auth-issuer and --auth-audience go together"},
		{[]string{"--auth-issuer", iss.URL, "--auth-audience", "http://127.0.0.1:1/other"}, "must be this server's MCP URL"},
		{[]string{"--auth-issuer", iss.URL, "--auth-audience", "http://127.0.0.1:1/mcp", "--auth-scopes", "reports"}, "not NAME=SCOPE"},
		{[]string{"--auth-issuer", iss.URL + "/nowhere", "--auth-audience", "http://127.0.0.1:1/mcp"}, "or give --auth-jwks-url"},
		{[]string{"--stdio", "--auth-issuer", iss.URL}, "do not apply to --stdio"},
		{[]string{"--auth-issuer", iss.URL, "--auth-audience", "http://127.0.0.1:1/mcp", "--auth-dpop", "sometimes"}, "--auth-dpop: DPoP mode"},
		{[]string{"--auth-issuer", iss.URL, "--auth-audience", "http://127.0.0.1:1/mcp", "--auth-dpop", "off", "--auth-dpop-nonce"}, "--auth-dpop-nonce needs"},
	} {
		args := append([]string{"serve", "--store", db}, tc.args...)
		var out strings.Builder
		err := run(t.Context(), args, &out, io.Discard, noEnv)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v = %v, want an error containing %q", tc.args, err, tc.want)
		}
		if strings.Contains(out.String(), "serving MCP") {
			t.Errorf("%v started serving", tc.args)
		}
	}
}

// TestAuthAllowsAnyAddress checks that a node with a resource server may
// listen beyond loopback, and one without may not.
func TestAuthAllowsAnyAddress(t *testing.T) {
	rs, err := oauth.New(oauth.Options{Resource: "https://mcp.example.com/mcp", Issuer: "https://id.example.com", JWKSURL: "https://id.example.com/jwks"})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(filepath.Join(t.TempDir(), "x.db"), 0)
	cfg.Addr = "192.0.2.1:8080"
	if err := cfg.Validate(); err == nil {
		t.Error("validate accepts development identities off loopback")
	}
	cfg.Auth = rs
	if err := cfg.Validate(); err != nil {
		t.Errorf("validate with a resource server: %v", err)
	}
}

// TestTasksBoundToSubject checks that one subject's task is invisible to
// another subject of the same issuer: reading, answering, cancelling and
// listening to it give the bytes an unknown task gives, and change
// nothing.
func TestTasksBoundToSubject(t *testing.T) {
	iss := testissuer.New(t)
	addr := freeLoopbackAddr(t)
	resource := "http://" + addr + "/mcp"
	rs, err := oauth.New(oauth.Options{Resource: resource, Issuer: iss.URL, JWKSURL: iss.JWKSURL()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1)
	cfg.Addr, cfg.Auth = addr, rs
	n := start(t, cfg)
	token := func(sub string) string { return iss.Token(t, iss.Claims(sub, resource, time.Now())) }
	as := func(sub string) *mcptest.Client {
		c := newClient(t, n.URL())
		c.Header = http.Header{"Authorization": {"Bearer " + token(sub)}}
		return c
	}
	id := createTask(t, as("alice"), toolApprovals, map[string]any{"subject": "s", "details": "d"})
	waitStatus(t, as("alice"), id, mcp.TaskInputRequired)
	unknown := strings.Repeat("x", len(id))

	answer := mcp.InputResponses{approvalKey: json.RawMessage(`{"action":"accept","content":{"approve":true}}`)}
	ops := []struct {
		name string
		do   func(c *mcptest.Client, id string) (*mcptest.Response, error)
	}{
		{"tasks/get", func(c *mcptest.Client, id string) (*mcptest.Response, error) { return c.GetTask(t.Context(), id) }},
		{"tasks/update", func(c *mcptest.Client, id string) (*mcptest.Response, error) {
			return c.UpdateTask(t.Context(), id, answer)
		}},
		{"tasks/cancel", func(c *mcptest.Client, id string) (*mcptest.Response, error) { return c.CancelTask(t.Context(), id) }},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			theirs, err1 := op.do(as("bob"), id) // a fresh client: the same JSON-RPC id
			none, err2 := op.do(as("bob"), unknown)
			if err1 != nil || err2 != nil {
				t.Fatalf("%v %v", err1, err2)
			}
			if theirs.Error == nil {
				t.Fatalf("bob's %s of alice's task succeeded: %s", op.name, theirs.Body)
			}
			if diff := cmp.Diff([]any{none.Status, string(none.Body)}, []any{theirs.Status, string(theirs.Body)}); diff != "" {
				t.Errorf("another subject's task differs from an unknown one (-unknown +theirs):\n%s", diff)
			}
		})
	}
	t.Run("subscriptions/listen", func(t *testing.T) {
		theirs := firstListenEvent(t, n.URL(), token("bob"), id)
		none := firstListenEvent(t, n.URL(), token("bob"), unknown)
		if diff := cmp.Diff(none, theirs); diff != "" {
			t.Errorf("listening to another subject's task differs from an unknown one (-unknown +theirs):\n%s", diff)
		}
		if own := firstListenEvent(t, n.URL(), token("alice"), id); !strings.Contains(own, id) {
			t.Errorf("alice's own listen does not accept her task: %s", own)
		}
	})
	if g := getTask(t, as("alice"), id); g.Status != mcp.TaskInputRequired {
		t.Errorf("after bob's requests alice's task is %q, want input_required", g.Status)
	}
}

// firstListenEvent opens subscriptions/listen for one task over HTTP and
// returns the status line and first message of the stream (the
// acknowledgement), then hangs up.
func firstListenEvent(t *testing.T, url, token, taskID string) string {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{"notifications":{"taskIds":["` + taskID + `"]},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}}}`
	ctx, cancel := context.WithTimeout(t.Context(), waitFor)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	req.Header.Set("Authorization", "Bearer "+token)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("listen: HTTP %d, no message: %v", resp.StatusCode, err)
		}
		if data, ok := strings.CutPrefix(line, "data:"); ok {
			return resp.Status + " " + strings.TrimSpace(data)
		}
		if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			rest, _ := io.ReadAll(br)
			return resp.Status + " " + line + string(rest)
		}
	}
}

// TestSessionsBoundToSubject checks that a 2025-era session opened by one
// subject is, to another subject of the same issuer, an unknown session.
func TestSessionsBoundToSubject(t *testing.T) {
	iss := testissuer.New(t)
	addr := freeLoopbackAddr(t)
	resource := "http://" + addr + "/mcp"
	rs, err := oauth.New(oauth.Options{Resource: resource, Issuer: iss.URL, JWKSURL: iss.JWKSURL()})
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(filepath.Join(t.TempDir(), "sessions.db"), 0)
	cfg.Addr, cfg.Auth = addr, rs
	n := start(t, cfg)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: waitFor}
	post := func(sub, sid, body string) (int, string, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, n.URL(), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+iss.Token(t, iss.Claims(sub, resource, time.Now())))
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
			req.Header.Set("MCP-Protocol-Version", "2025-06-18")
		}
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get(mcp.HeaderSessionID), string(b)
	}
	status, sid, body := post("alice", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	if status != http.StatusOK || sid == "" {
		t.Fatalf("initialize: HTTP %d, session %q, %s", status, sid, body)
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
	if status, _, body := post("alice", sid, list); status != http.StatusOK {
		t.Fatalf("alice in her session: HTTP %d %s", status, body)
	}
	s1, _, theirs := post("bob", sid, list)
	s2, _, unknown := post("bob", strings.Repeat("0", len(sid)), list)
	if s1 == http.StatusOK {
		t.Fatalf("bob used alice's session: %s", theirs)
	}
	if diff := cmp.Diff([]any{s2, unknown}, []any{s1, theirs}); diff != "" {
		t.Errorf("another subject's session differs from an unknown one (-unknown +theirs):\n%s", diff)
	}
}

// TestServeAuthHosts checks that serve with the auth flags accepts
// requests whose Host is the audience's host (and the names of
// --allowed-hosts, and loopback), so that a client using the metadata's
// resource URL reaches the challenge, while other hosts are still refused.
func TestServeAuthHosts(t *testing.T) {
	iss := testissuer.New(t)
	const audience = "https://mcp.example.com/mcp"
	dir := t.TempDir()
	runCommand(t, []string{"serve", "--addr", "127.0.0.1:0", "--store", filepath.Join(dir, "hosts.db"),
		"--workers", "0", "--shutdown-grace", "1s",
		"--auth-issuer", iss.URL, "--auth-audience", audience, "--allowed-hosts", "Proxy.internal, 10.0.0.7"},
		func(t *testing.T, url string) {
			const challenge = `Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"`
			for _, tc := range []struct {
				host      string
				status    int
				challenge string
			}{
				{"mcp.example.com", http.StatusUnauthorized, challenge},
				{"MCP.example.com:443", http.StatusUnauthorized, challenge},
				{"proxy.internal:8080", http.StatusUnauthorized, challenge},
				{"10.0.0.7", http.StatusUnauthorized, challenge},
				{"localhost", http.StatusUnauthorized, challenge},
				{"evil.example.com", http.StatusForbidden, ""},
				{"mcp.example.com.evil.example", http.StatusForbidden, ""},
			} {
				req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(
					`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`))
				if err != nil {
					t.Fatal(err)
				}
				req.Host = tc.host
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("MCP-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/list")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.status || resp.Header.Get("WWW-Authenticate") != tc.challenge {
					t.Errorf("Host %s: HTTP %d, challenge %q, want %d %q; body %s",
						tc.host, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), tc.status, tc.challenge, body)
				}
			}
		})
}
