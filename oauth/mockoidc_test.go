package oauth_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

// TestMockOIDC runs the resource server against the identity provider of
// docs/authorization.md's worked example, a third-party OpenID provider:
// its keys are discovered from its OpenID configuration, and a token it
// signs for this resource admits its subject, while one for another
// resource is refused.
func TestMockOIDC(t *testing.T) {
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	const resource = "http://127.0.0.1:8080/mcp"
	ctx := context.Background()
	jwks, err := oauth.DiscoverJWKS(ctx, nil, m.Issuer(), 5*time.Second)
	if err != nil {
		t.Fatalf("DiscoverJWKS: %v", err)
	}
	rs, err := oauth.New(oauth.Options{Resource: resource, Issuer: m.Issuer(), JWKSURL: jwks})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(aud string) string {
		now := time.Now()
		token, err := m.Keypair.SignJWT(jwt.MapClaims{
			"iss": m.Issuer(), "sub": "alice", "aud": aud, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
		})
		if err != nil {
			t.Fatal(err)
		}
		return token
	}
	admit := func(token string) (server.Identity, error) {
		h := http.Header{}
		h.Set("Authorization", "Bearer "+token)
		return rs.Admit(ctx, &server.AdmissionRequest{Endpoint: "mcp", Method: "tools/list", Header: h})
	}
	id, err := admit(sign(resource))
	if err != nil {
		t.Fatalf("Admit of a token for this resource: %v", err)
	}
	if want := m.Issuer() + "#alice"; id.Principal != want {
		t.Errorf("Principal = %q, want %q", id.Principal, want)
	}
	if _, err := admit(sign("http://127.0.0.1:9999/other")); err == nil {
		t.Error("a token for another resource was admitted")
	}
}
