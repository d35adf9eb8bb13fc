package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/testissuer"
)

// urlWriter collects a command's output and sends each printed
// authorization URL (an indented http line) on urls.
type urlWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	line []byte
	urls chan string
}

func (w *urlWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for _, b := range p {
		if b != '\n' {
			w.line = append(w.line, b)
			continue
		}
		if l := strings.TrimSpace(string(w.line)); strings.HasPrefix(l, "http://") && strings.HasPrefix(string(w.line), "  ") {
			select {
			case w.urls <- l:
			default:
			}
		}
		w.line = w.line[:0]
	}
	return len(p), nil
}

func (w *urlWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestLoginThenCall is the end-to-end path: serve with the auth flags,
// `taskwire login` against the test issuer (the "browser" is an HTTP GET
// of the printed URL, which the issuer approves), then a durable tool
// called with the stored token; logout removes it.
func TestLoginThenCall(t *testing.T) {
	iss := testissuer.New(t)
	addr := freeLoopbackAddr(t)
	resource := "http://" + addr + "/mcp"
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	runCommand(t, []string{"serve", "--addr", addr, "--store", filepath.Join(dir, "auth.db"),
		"--workers", "1", "--reports-dir", filepath.Join(dir, "out"), "--shutdown-grace", "1s", "--log-level", "warn",
		"--auth-issuer", iss.URL, "--auth-audience", resource, "--auth-scopes", "reports.generate=reports"},
		func(t *testing.T, url string) {
			out := &urlWriter{urls: make(chan string, 1)}
			done := make(chan error, 1)
			go func() {
				done <- run(t.Context(), []string{"login", url, "--no-browser", "--token-dir", tokens}, out, out, noEnv)
			}()
			select {
			case authURL := <-out.urls:
				if err := testissuer.Approve(t.Context(), authURL); err != nil {
					t.Fatalf("approve: %v", err)
				}
			case err := <-done:
				t.Fatalf("login ended before printing a URL: %v\n%s", err, out)
			}
			if err := <-done; err != nil {
				t.Fatalf("login: %v\n%s", err, out)
			}
			if !strings.Contains(out.String(), "Logged in to "+url) || !strings.Contains(out.String(), "scopes: reports") {
				t.Errorf("login output:\n%s", out)
			}

			store, err := oauthclient.NewFileStore(tokens)
			if err != nil {
				t.Fatal(err)
			}
			rec, err := store.Load(url)
			if err != nil || rec == nil {
				t.Fatalf("stored record: %v, %v", rec, err)
			}
			if strings.Contains(out.String(), rec.AccessToken) || strings.Contains(out.String(), rec.RefreshToken) {
				t.Errorf("login printed the token")
			}
			if fi, err := os.Stat(store.Path(url)); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("token file: %v, %v", fi.Mode(), err)
			}

			az, err := oauthclient.Stored(store, url)
			if err != nil {
				t.Fatal(err)
			}
			c, err := client.New(url, client.Options{Transport: az})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			res, err := c.Call(t.Context(), toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0}, client.PreferTask())
			if err != nil {
				t.Fatalf("call with the stored token: %v", err)
			}
			if res.Task == nil {
				t.Fatalf("the durable tool answered inline: %+v", res.Result)
			}
			if r, err := res.Task.Wait(t.Context()); err != nil || r.IsError {
				t.Fatalf("task: %+v, %v", r, err)
			}

			// The CLI's client commands send the stored token too.
			var stdout, stderr bytes.Buffer
			if err := run(t.Context(), []string{"call", "--url", url, "--token-dir", tokens, "--json", toolReports,
				"accountId=a", "rows=1", "seconds=0"}, &stdout, &stderr, noEnv); err != nil {
				t.Fatalf("taskwire call with the stored token: %v\n%s", err, stderr.String())
			}
			if !strings.Contains(stdout.String(), `"checksum"`) {
				t.Errorf("taskwire call printed %q, want the report", stdout.String())
			}

			if err := run(t.Context(), []string{"logout", "--token-dir", tokens, url}, &bytes.Buffer{}, &bytes.Buffer{}, noEnv); err != nil {
				t.Fatal(err)
			}
			err = run(t.Context(), []string{"call", "--url", url, "--token-dir", tokens, toolReports,
				"accountId=a", "rows=1", "seconds=0"}, &bytes.Buffer{}, &bytes.Buffer{}, noEnv)
			if code := exitCode(err); code != 3 {
				t.Errorf("taskwire call after logout: exit %d (%v), want 3", code, err)
			}
			c2, err := client.New(url, client.Options{Transport: mustStored(t, store, url)})
			if err != nil {
				t.Fatal(err)
			}
			defer c2.Close()
			var ae *client.AuthError
			if _, err := c2.Call(t.Context(), toolReports, map[string]any{"accountId": "a", "rows": 1, "seconds": 0}); !errors.As(err, &ae) || ae.StatusCode != 401 {
				t.Errorf("call after logout: %v, want a 401 AuthError", err)
			}
		})
}

func mustStored(t *testing.T, store oauthclient.Store, url string) *oauthclient.Authorizer {
	t.Helper()
	az, err := oauthclient.Stored(store, url)
	if err != nil {
		t.Fatal(err)
	}
	return az
}

// TestLoginUsage: login and logout want exactly one URL and refuse a
// secret without a client ID.
func TestLoginUsage(t *testing.T) {
	for _, args := range [][]string{
		{"login"},
		{"login", "http://127.0.0.1:1/mcp", "extra"},
		{"logout"},
		{"login", "--client-secret", "s", "http://127.0.0.1:1/mcp"},
		{"login", "ftp://example/mcp", "--token-dir", "x"},
	} {
		if err := run(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}, noEnv); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}
