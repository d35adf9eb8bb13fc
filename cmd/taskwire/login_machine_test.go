package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/testissuer"
)

// TestLoginMachine: `taskwire login` with no browser, by client
// credentials (the secret from a file) and by a workload identity token
// (from a file), each followed by a call with the stored token; the secret
// is neither printed nor stored.
func TestLoginMachine(t *testing.T) {
	iss := testissuer.New(t)
	iss.RegisterClient("ci-job", "s3cret-value")
	wk, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	iss.TrustAssertions("https://ci.example", &wk.PublicKey)
	addr := freeLoopbackAddr(t)
	resource := "http://" + addr + "/mcp"
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	if err := os.WriteFile(secretFile, []byte("s3cret-value\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	workload, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://ci.example", "sub": "repo:build", "aud": iss.URL, "exp": time.Now().Add(time.Hour).Unix(),
	}).SignedString(wk)
	if err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(dir, "workload-token")
	if err := os.WriteFile(tokenFile, []byte(workload), 0o600); err != nil {
		t.Fatal(err)
	}
	runCommand(t, []string{"serve", "--addr", addr, "--store", filepath.Join(dir, "auth.db"),
		"--workers", "1", "--reports-dir", filepath.Join(dir, "out"), "--shutdown-grace", "1s", "--log-level", "warn",
		"--auth-issuer", iss.URL, "--auth-audience", resource},
		func(t *testing.T, url string) {
			for _, tc := range []struct {
				name  string
				login []string
				grant string
			}{
				{"client credentials", []string{"--client-credentials", "--client-id", "ci-job", "--client-secret-file", secretFile}, "client_credentials"},
				{"workload identity", []string{"--assertion-file", tokenFile}, oauthclient.GrantJWTBearer},
			} {
				t.Run(tc.name, func(t *testing.T) {
					tokens := filepath.Join(t.TempDir(), "tokens")
					var out bytes.Buffer
					args := append([]string{"login", url, "--token-dir", tokens}, tc.login...)
					if err := run(t.Context(), args, &out, &out, noEnv); err != nil {
						t.Fatalf("login: %v\n%s", err, out.String())
					}
					if !strings.Contains(out.String(), "Logged in to "+url) || strings.Contains(out.String(), "s3cret") {
						t.Errorf("login output:\n%s", out.String())
					}
					store, err := oauthclient.NewFileStore(tokens)
					if err != nil {
						t.Fatal(err)
					}
					data, err := os.ReadFile(store.Path(url))
					if err != nil {
						t.Fatal(err)
					}
					if strings.Contains(string(data), "s3cret") || strings.Contains(string(data), workload) {
						t.Errorf("the stored record holds the secret or the workload token")
					}
					if rec, err := store.Load(url); err != nil || rec.Grant != tc.grant {
						t.Errorf("stored record: grant %q, %v; want %q", rec.Grant, err, tc.grant)
					}
					var stdout, stderr bytes.Buffer
					if err := run(t.Context(), []string{"call", "--url", url, "--token-dir", tokens, "--json", toolReports,
						"accountId=a", "rows=1", "seconds=0"}, &stdout, &stderr, noEnv); err != nil {
						t.Fatalf("taskwire call with the stored token: %v\n%s", err, stderr.String())
					}
				})
			}
		})
}
