package oauthclient_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sync"
	"testing"

	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// legacyServer is a 2025-03-26 MCP server: no protected resource metadata,
// its own origin the authorization server, with RFC 8414 metadata at the
// root when withMetadata, else only the default endpoints.
func legacyServer(t *testing.T, withMetadata bool) (mcpURL string, seen func() []string) {
	t.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "legacy", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "echo"}, func(context.Context, *server.Request, struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, struct{}{}, nil
	})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	var (
		mu    sync.Mutex
		paths []string
	)
	hs := httptest.NewUnstartedServer(nil)
	origin := "http://" + hs.Listener.Addr().String()
	mux := http.NewServeMux()
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer legacy-token" {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		srv.ServeHTTP(w, r)
	})
	prefix := ""
	if withMetadata {
		prefix = "/oauth"
		mux.HandleFunc("GET /.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{
				"issuer": origin, "authorization_endpoint": origin + prefix + "/authorize",
				"token_endpoint": origin + prefix + "/token", "registration_endpoint": origin + prefix + "/register",
				"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"},
			})
		})
	}
	mux.HandleFunc("GET "+prefix+"/authorize", func(w http.ResponseWriter, r *http.Request) {
		back, _ := url.Parse(r.URL.Query().Get("redirect_uri"))
		back.RawQuery = url.Values{"code": {"c1"}, "state": {r.URL.Query().Get("state")}}.Encode()
		http.Redirect(w, r, back.String(), http.StatusFound)
	})
	mux.HandleFunc("POST "+prefix+"/token", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "legacy-token", "token_type": "Bearer", "expires_in": 3600})
	})
	mux.HandleFunc("POST "+prefix+"/register", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"client_id": "legacy-client", "token_endpoint_auth_method": "none"})
	})
	hs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.Method+" "+r.URL.Path)
		mu.Unlock()
		mux.ServeHTTP(w, r)
	})
	hs.Start()
	t.Cleanup(hs.Close)
	return origin + "/mcp", func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(paths)
	}
}

// TestLegacyDiscovery: with no resource metadata, the client finds the
// authorization server at the MCP server's origin (2025-03-26), by its
// root metadata or, without one, at the default endpoints.
func TestLegacyDiscovery(t *testing.T) {
	for _, tc := range []struct {
		name         string
		withMetadata bool
		want         []string // requests that must have been made
	}{
		{"root metadata", true, []string{"GET /.well-known/oauth-authorization-server", "POST /oauth/register", "GET /oauth/authorize", "POST /oauth/token"}},
		{"default endpoints", false, []string{"POST /register", "GET /authorize", "POST /token"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, seen := legacyServer(t, tc.withMetadata)
			az, err := oauthclient.New(u, oauthclient.Options{OpenURL: testissuer.Approve})
			if err != nil {
				t.Fatal(err)
			}
			r := &rig{url: u}
			if err := r.callEcho(t, az); err != nil {
				t.Fatalf("call: %v", err)
			}
			got := seen()
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("no %q among the requests %q", w, got)
				}
			}
		})
	}
}
