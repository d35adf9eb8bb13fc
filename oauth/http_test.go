package oauth_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

type echoIn struct {
	Text string `json:"text"`
}

type echoOut struct {
	Echo string `json:"echo"`
}

// serveProtected serves an MCP endpoint /mcp with tools echo and secret
// (which needs scope "secret") on loopback behind a resource server for
// iss, and returns its base URL and the resource server.
func serveProtected(t *testing.T, iss *testissuer.Issuer) (string, *oauth.ResourceServer) {
	t.Helper()
	return serveProtectedWith(t, iss, nil)
}

// serveProtectedWith is serveProtected with the options changed by mutate.
func serveProtectedWith(t *testing.T, iss *testissuer.Issuer, mutate func(*oauth.Options)) (string, *oauth.ResourceServer) {
	t.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "protected", Version: "1.0.0"})
	for _, name := range []string{"echo", "secret"} {
		server.AddTool(ep, &mcp.Tool{Name: name}, func(_ context.Context, _ *server.Request, in echoIn) (*mcp.CallToolResult, echoOut, error) {
			return nil, echoOut{Echo: in.Text}, nil
		})
	}
	ln := httptest.NewUnstartedServer(nil)
	base := "http://" + ln.Listener.Addr().String()
	opts := oauth.Options{
		Resource: base + "/mcp", Issuer: iss.URL, JWKSURL: iss.JWKSURL(),
		ToolScopes: map[string][]string{"secret": {"secret"}},
	}
	if mutate != nil {
		mutate(&opts)
	}
	rs, err := oauth.New(opts)
	if err != nil {
		t.Fatalf("oauth.New: %v", err)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Admission: rs})
	if err != nil {
		t.Fatalf("server.New: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	ln.Config.Handler = rs.WithMetadata(srv)
	ln.Start()
	t.Cleanup(ln.Close)
	return base, rs
}

// TestOverHTTP checks the challenges and the metadata as a client sees
// them through the server's whole pipeline.
func TestOverHTTP(t *testing.T) {
	iss := testissuer.New(t)
	base, rs := serveProtected(t, iss)
	hc := &http.Client{Timeout: 10 * time.Second}
	client := func(token string) *mcptest.Client {
		c := mcptest.NewClient(mcptest.Remote(base, hc), "/mcp")
		if token != "" {
			c.Header = http.Header{"Authorization": {"Bearer " + token}}
		}
		return c
	}
	call := func(c *mcptest.Client, tool string) *mcptest.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, tool, map[string]any{"text": "hi"})
		if err != nil {
			t.Fatalf("tools/call %s: %v", tool, err)
		}
		return res
	}
	prm := base + "/.well-known/oauth-protected-resource/mcp"
	if prm != rs.MetadataURL() {
		t.Errorf("MetadataURL = %q, want %q", rs.MetadataURL(), prm)
	}
	now := time.Now()
	alice := iss.Token(t, iss.Claims("alice", base+"/mcp", now))

	if res := call(client(alice), "echo"); res.Status != http.StatusOK || res.Error != nil {
		t.Errorf("valid token: HTTP %d %s", res.Status, res.Body)
	}
	for _, tc := range []struct {
		name, token, tool string
		status            int
		challenge         string
	}{
		{"no token", "", "echo", 401, `Bearer resource_metadata="` + prm + `"`},
		{"wrong audience", iss.Token(t, iss.Claims("alice", base+"/other", now)), "echo", 401,
			`Bearer error="invalid_token", resource_metadata="` + prm + `"`},
		{"missing scope", alice, "secret", 403,
			`Bearer error="insufficient_scope", scope="secret", resource_metadata="` + prm + `"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(client(tc.token), tc.tool)
			got := []any{res.Status, res.Header.Get("WWW-Authenticate"), res.Error != nil}
			if diff := cmp.Diff([]any{tc.status, tc.challenge, true}, got); diff != "" {
				t.Errorf("HTTP status, challenge, JSON-RPC error (-want +got):\n%s\nbody %s", diff, res.Body)
			}
		})
	}

	want := map[string]any{
		"resource":                 base + "/mcp",
		"authorization_servers":    []any{iss.URL},
		"scopes_supported":         []any{"secret"},
		"bearer_methods_supported": []any{"header"},
		// DPoP is allowed by default (RFC 9728 §2, RFC 9449 §5.1).
		"dpop_signing_alg_values_supported": []any{"ES256", "ES384", "ES512", "PS256", "RS256", "EdDSA"},
	}
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := hc.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: HTTP %d %q %s (%v)", path, resp.StatusCode, resp.Header.Get("Content-Type"), body, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}
	resp, err := hc.Post(base+"/.well-known/oauth-protected-resource", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST metadata: HTTP %d, want 405", resp.StatusCode)
	}
}

func TestDiscoverJWKS(t *testing.T) {
	iss := testissuer.New(t)
	got, err := oauth.DiscoverJWKS(context.Background(), nil, iss.URL, 5*time.Second)
	if err != nil || got != iss.JWKSURL() {
		t.Errorf("DiscoverJWKS = %q, %v; want %q", got, err, iss.JWKSURL())
	}
	// The documents name iss.URL, not this issuer: discovery refuses them.
	if got, err := oauth.DiscoverJWKS(context.Background(), nil, iss.URL+"/", 5*time.Second); err == nil {
		t.Errorf("DiscoverJWKS of another issuer = %q", got)
	}
}

// TestDiscoverJWKSBoundedOverall points discovery at an issuer that
// accepts every request and never answers: the timeout bounds the whole
// discovery, so the first document's fetch uses all of it and the second
// is never requested (with a bound per fetch, discovery took twice the
// timeout).
func TestDiscoverJWKSBoundedOverall(t *testing.T) {
	requests := make(chan string, 4)
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests <- r.URL.Path
		<-r.Context().Done() // stalls until the client gives up
	}))
	defer stalled.Close()
	_, err := oauth.DiscoverJWKS(context.Background(), nil, stalled.URL, 200*time.Millisecond)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("DiscoverJWKS of a stalled issuer: %v, want a deadline error", err)
	}
	stalled.Close() // every handler has returned
	close(requests)
	var got []string
	for p := range requests {
		got = append(got, p)
	}
	if diff := cmp.Diff([]string{"/.well-known/openid-configuration"}, got); diff != "" {
		t.Errorf("documents requested (-want +got):\n%s", diff)
	}
}
