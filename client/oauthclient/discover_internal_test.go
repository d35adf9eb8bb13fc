package oauthclient

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiscoveryOrder(t *testing.T) {
	mustURL := func(s string) *url.URL {
		u, err := url.Parse(s)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, tc := range []struct {
		name, server, challenge string
		want                    []string
	}{
		{"challenge first", "https://h/mcp", "https://h/custom.json",
			[]string{"https://h/custom.json", "https://h/.well-known/oauth-protected-resource/mcp", "https://h/.well-known/oauth-protected-resource"}},
		{"path inserted, then root", "https://h:8443/a/mcp/", "",
			[]string{"https://h:8443/.well-known/oauth-protected-resource/a/mcp", "https://h:8443/.well-known/oauth-protected-resource"}},
		{"no path", "https://h", "", []string{"https://h/.well-known/oauth-protected-resource"}},
	} {
		t.Run("resource/"+tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, resourceMetadataURLs(mustURL(tc.server), tc.challenge)); diff != "" {
				t.Error(diff)
			}
		})
	}
	for _, tc := range []struct {
		issuer string
		want   []string
	}{
		{"https://as", []string{"https://as/.well-known/oauth-authorization-server", "https://as/.well-known/openid-configuration"}},
		{"https://as/tenant1", []string{
			"https://as/.well-known/oauth-authorization-server/tenant1",
			"https://as/.well-known/openid-configuration/tenant1",
			"https://as/tenant1/.well-known/openid-configuration",
		}},
	} {
		t.Run("server/"+tc.issuer, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, serverMetadataURLs(mustURL(tc.issuer))); diff != "" {
				t.Error(diff)
			}
		})
	}
}

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		header string
		want   Challenge
		ok     bool
	}{
		{`Bearer resource_metadata="https://h/.well-known/oauth-protected-resource/mcp"`,
			Challenge{ResourceMetadata: "https://h/.well-known/oauth-protected-resource/mcp"}, true},
		{`Bearer error="insufficient_scope", scope="a b", resource_metadata="https://h/m"`,
			Challenge{Error: "insufficient_scope", Scopes: []string{"a", "b"}, ResourceMetadata: "https://h/m"}, true},
		{`Basic realm="x", Bearer scope="mcp" , error=invalid_token`,
			Challenge{Scopes: []string{"mcp"}, Error: "invalid_token"}, true},
		{`bearer scope="q\"uoted"`, Challenge{Scopes: []string{`q"uoted`}}, true},
		{`Basic realm="x"`, Challenge{}, false},
		{`Bearer scope="unterminated`, Challenge{}, true},
		{``, Challenge{}, false},
	} {
		got, ok := ParseChallenge(tc.header)
		if ok != tc.ok {
			t.Errorf("%q: ok %v, want %v", tc.header, ok, tc.ok)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tc.header, diff)
		}
	}
}

func TestCovers(t *testing.T) {
	server, _ := url.Parse("http://localhost:9/a/mcp")
	for resource, want := range map[string]bool{
		"http://localhost:9/a/mcp":  true,
		"http://localhost:9/a/mcp/": true,
		"http://localhost:9/a":      true,
		"http://localhost:9":        true,
		"HTTP://LOCALHOST:9/a/mcp":  true,
		"http://localhost:9/a/m":    false,
		"http://localhost:9/b":      false,
		"http://localhost:10/a/mcp": false,
		"https://localhost:9/a/mcp": false,
		"https://evil.example/mcp":  false,
		"http://localhost:9/a#frag": false,
	} {
		if got := covers(resource, server); got != want {
			t.Errorf("covers(%q): %v, want %v", resource, got, want)
		}
	}
}

func TestCheckEndpoint(t *testing.T) {
	for raw, ok := range map[string]bool{
		"https://as.example/token": true,
		"http://127.0.0.1:8/token": true,
		"http://localhost/token":   true,
		"http://[::1]:9/token":     true,
		"http://as.example/token":  false,
		"ftp://as.example/token":   false,
		"/token":                   false,
		"https://u:p@as/token":     false,
	} {
		if _, err := checkEndpoint("endpoint", raw); (err == nil) != ok {
			t.Errorf("checkEndpoint(%q): %v", raw, err)
		}
	}
}

// TestMetadataBounded: a metadata document larger than MaxBodyBytes is
// refused, not read to the end.
func TestMetadataBounded(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"authorization_servers":["https://as"],"pad":"%s"}`, strings.Repeat("x", 4096))
	}))
	defer srv.Close()
	a, err := New(srv.URL+"/mcp", Options{MaxBodyBytes: 1024})
	if err != nil {
		t.Fatal(err)
	}
	_, err = a.discoverResource(t.Context(), Challenge{})
	if err == nil || !strings.Contains(err.Error(), "exceeds 1024 bytes") {
		t.Fatalf("discoverResource: %v, want the size limit", err)
	}
}
