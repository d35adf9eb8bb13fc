package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/testissuer"
)

func TestConsoleFlagErrors(t *testing.T) {
	dir := t.TempDir()
	db := "sqlite:" + filepath.Join(dir, "x.db")
	short := filepath.Join(dir, "short")
	big := filepath.Join(dir, "big")
	good := filepath.Join(dir, "good")
	for name, content := range map[string]string{short: "tooshort\n", big: strings.Repeat("x", maxTokenFile+1), good: "a-good-operator-token\n"} {
		if err := os.WriteFile(name, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := func(k string) string {
		if k == adminTokenEnv {
			return "an-operator-token-from-env"
		}
		return ""
	}
	tests := []struct {
		args   []string
		getenv func(string) string
		want   string
	}{
		{[]string{"serve", "--store", db, "--admin-token-file", good}, noEnv, "needs --admin-addr"},
		{[]string{"serve", "--store", db}, env, "needs --admin-addr"},
		{[]string{"serve", "--store", db, "--admin-addr", "0", "--admin-token-file", good}, env, "not both"},
		{[]string{"serve", "--store", db, "--admin-addr", "0", "--admin-token-file", short}, noEnv, "at least 16 bytes"},
		{[]string{"serve", "--store", db, "--admin-addr", "0", "--admin-token-file", big}, noEnv, "more than 4096 bytes"},
		{[]string{"serve", "--store", db, "--admin-addr", "0", "--admin-token-file", filepath.Join(dir, "none")}, noEnv, "--admin-token-file"},
		{[]string{"serve", "--store", db, "--admin-addr", "0", "--admin-token-file", good, "--console-scope", "ops"}, noEnv,
			"--console-scope needs --auth-issuer"},
	}
	for _, tt := range tests {
		err := run(t.Context(), tt.args, io.Discard, io.Discard, tt.getenv)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("run(%q) = %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
}

var consoleLine = regexp.MustCompile(`operator console at (http://\S+)`)

// startServe runs `taskwire serve` with args added and returns its output
// once it printed the admin address, and the MCP URL.
func startServe(t *testing.T, getenv func(string) string, args ...string) (*syncBuffer, string) {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
			"--store", "sqlite:" + filepath.Join(dir, "tasks.db"), "--workers", "1",
			"--reports-dir", filepath.Join(dir, "out"), "--shutdown-grace", "1s", "--log-level", "warn"}, args...), out, out, getenv)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	deadline := time.After(waitFor)
	for {
		if m := servingLine.FindStringSubmatch(out.String()); m != nil && adminLine.MatchString(out.String()) {
			return out, m[1]
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s", err, out)
		case <-deadline:
			t.Fatalf("serve printed no admin address:\n%s", out)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestServeConsole runs serve with an operator token: the console answers
// on the admin listener, to the token only, and not on the MCP listener.
func TestServeConsole(t *testing.T) {
	const tok = "serve-console-token-0123"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, mcpURL := startServe(t, noEnv, "--admin-token-file", tokenFile)
	m := consoleLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no console line:\n%s", out)
	}
	get := func(url, auth string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := get(m[1]+"/", tok); s != http.StatusOK {
		t.Errorf("console with the token: %d", s)
	}
	if s := get(m[1]+"/", "wrong-token-0123456789"); s != http.StatusUnauthorized {
		t.Errorf("console with a wrong token: %d", s)
	}
	mcpBase := strings.TrimSuffix(mcpURL, "/mcp")
	if s := get(mcpBase+"/console/", tok); s == http.StatusOK {
		t.Errorf("the MCP listener serves the console")
	}
	if strings.Contains(out.String(), tok) {
		t.Error("the output holds the token")
	}
}

func TestServeConsoleOff(t *testing.T) {
	out, _ := startServe(t, noEnv)
	if !strings.Contains(out.String(), "operator console off: no operator token") {
		t.Errorf("no word of the console being off:\n%s", out)
	}
	admin := adminLine.FindStringSubmatch(out.String())[1]
	if status, _ := httpGet(t, admin+"/console/"); status != http.StatusNotFound {
		t.Errorf("/console without a token: %d, want 404", status)
	}
}

// TestServeConsoleAccessTokens runs serve with --auth-issuer and
// --console-scope: the console admits access tokens of the issuer that
// grant the scope, refuses others, and still takes the operator token.
func TestServeConsoleAccessTokens(t *testing.T) {
	const tok = "serve-console-token-0123"
	iss := testissuer.New(t)
	resource := "http://127.0.0.1:1/mcp"
	out, _ := startServe(t, func(k string) string {
		if k == adminTokenEnv {
			return tok
		}
		return ""
	}, "--auth-issuer", iss.URL, "--auth-audience", resource, "--console-scope", "ops:console")
	m := consoleLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("no console line:\n%s", out)
	}
	access := func(scope string) string {
		c := iss.Claims("alice", resource, time.Now())
		c["scope"] = scope
		return iss.Token(t, c)
	}
	for _, tc := range []struct {
		name, auth string
		want       int
	}{
		{"the operator scope", access("ops:console"), http.StatusOK},
		{"the default scope only", access("taskwire:operator"), http.StatusForbidden},
		{"another issuer's token", testissuer.New(t).Token(t, iss.Claims("alice", resource, time.Now())), http.StatusUnauthorized},
		{"the operator token", tok, http.StatusOK},
	} {
		req, _ := http.NewRequest(http.MethodGet, m[1]+"/tasks", nil)
		req.Header.Set("Authorization", "Bearer "+tc.auth)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
	}
}
