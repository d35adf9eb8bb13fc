package interop

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

// zitadelClientID and zitadelSecret are the one confidential client the
// zitadel OpenID Provider knows.
const (
	zitadelClientID = "ci-job"
	zitadelSecret   = "zitadel-s3cret"
)

// ccClient is the confidential client: the example storage's client type,
// allowed the client_credentials grant only, with JWT access tokens and
// client_secret_basic.
type ccClient struct{ *storage.Client }

func (ccClient) GrantTypes() []oidc.GrantType {
	return []oidc.GrantType{oidc.GrantTypeClientCredentials}
}
func (ccClient) AccessTokenType() op.AccessTokenType { return op.AccessTokenTypeJWT }
func (ccClient) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodBasic }

// ccStorage is zitadel's in-memory example storage (keys, tokens) with
// the client credentials grant answered for ccClient alone, issuing
// access tokens whose audience is the MCP resource.
type ccStorage struct {
	*storage.Storage
	client   ccClient
	audience string
}

// ClientCredentials authenticates the client (op.ClientCredentialsStorage).
func (s *ccStorage) ClientCredentials(_ context.Context, clientID, secret string) (op.Client, error) {
	if clientID != zitadelClientID || subtle.ConstantTimeCompare([]byte(secret), []byte(zitadelSecret)) != 1 {
		return nil, errors.New("unknown client or wrong secret")
	}
	return s.client, nil
}

// ClientCredentialsTokenRequest is the token the client gets
// (op.ClientCredentialsStorage): its own subject, the MCP resource as the
// audience (zitadel ignores RFC 8707's resource parameter; the audience is
// the provider's configuration, as a project is in ZITADEL).
func (s *ccStorage) ClientCredentialsTokenRequest(_ context.Context, clientID string, scopes []string) (op.TokenRequest, error) {
	if clientID != zitadelClientID {
		return nil, errors.New("unknown client")
	}
	return &oidc.JWTTokenRequest{Subject: clientID, Audience: []string{s.audience}, Scopes: scopes}, nil
}

// zitadelRig is a zitadel/oidc v3 OpenID Provider and an MCP server that
// trusts it (package oauth), each on its own loopback httptest server.
type zitadelRig struct {
	issuer string // the OP's issuer
	mcpURL string // the MCP endpoint

	mu    sync.Mutex
	paths []string // every request the OP has served, "METHOD /path", then " (basic)" with HTTP Basic credentials
}

// opRequests returns the requests the OP has served.
func (r *zitadelRig) opRequests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

func newZitadelRig(t *testing.T) *zitadelRig {
	t.Helper()
	ophs := httptest.NewUnstartedServer(nil)
	mcphs := httptest.NewUnstartedServer(nil)
	r := &zitadelRig{issuer: "http://" + ophs.Listener.Addr().String(), mcpURL: "http://" + mcphs.Listener.Addr().String() + "/mcp"}

	web := storage.WebClient(zitadelClientID, zitadelSecret, r.issuer+"/unused")
	st := &ccStorage{Storage: storage.NewStorage(storage.NewUserStore(r.issuer)), client: ccClient{web}, audience: r.mcpURL}
	cfg := &op.Config{CodeMethodS256: true}
	if _, err := rand.Read(cfg.CryptoKey[:]); err != nil {
		t.Fatal(err)
	}
	provider, err := op.NewProvider(cfg, st, op.StaticIssuer(r.issuer), op.WithAllowInsecure())
	if err != nil {
		t.Fatalf("zitadel provider: %v", err)
	}
	ophs.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		seen := req.Method + " " + req.URL.Path
		if _, _, ok := req.BasicAuth(); ok {
			seen += " (basic)"
		}
		r.paths = append(r.paths, seen)
		r.mu.Unlock()
		provider.ServeHTTP(w, req)
	})
	ophs.Start()
	t.Cleanup(ophs.Close)

	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "zitadel-rig", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "whoami"}, func(_ context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, struct{}, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: req.Identity.Principal}}}, struct{}{}, nil
	})
	rs, err := oauth.New(oauth.Options{Resource: r.mcpURL, Issuer: r.issuer, JWKSURL: r.issuer + "/keys"})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, Admission: rs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	mcphs.Config.Handler = rs.WithMetadata(srv)
	mcphs.Start()
	t.Cleanup(mcphs.Close)
	return r
}

// whoami connects to the rig's MCP server with the client credentials
// grant and secret, and returns the principal the server saw.
func (r *zitadelRig) whoami(t *testing.T, secret string) (string, error) {
	t.Helper()
	az, err := oauthclient.New(r.mcpURL, oauthclient.Options{
		ClientID: zitadelClientID, ClientSecret: secret, Grant: &oauthclient.ClientCredentials{},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(r.mcpURL, client.Options{Transport: az})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Connect(t.Context()); err != nil {
		return "", err
	}
	res, err := c.Call(t.Context(), "whoami", map[string]any{})
	if err != nil {
		return "", err
	}
	if res.Result == nil || len(res.Result.Content) != 1 {
		t.Fatalf("whoami: %+v, want an inline result with one content block", res)
	}
	txt, ok := res.Result.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("whoami: content %T, want text", res.Result.Content[0])
	}
	return txt.Text, nil
}

// TestZitadelClientCredentials: oauthclient's client credentials grant
// with client_secret_basic against zitadel/oidc's OpenID Provider, found by
// discovery from the MCP server's protected resource metadata; the JWT
// access token it issues admits the caller. A wrong secret is the OP's
// invalid_client, and the error does not show the secret.
func TestZitadelClientCredentials(t *testing.T) {
	r := newZitadelRig(t)
	got, err := r.whoami(t, zitadelSecret)
	if err != nil {
		t.Fatalf("call with the right secret: %v", err)
	}
	if want := r.issuer + "#" + zitadelClientID; got != want {
		t.Errorf("principal = %q, want %q", got, want)
	}
	// Discovery from the protected resource metadata: RFC 8414's
	// well-known URL first, which op.Provider does not serve (only the
	// experimental op.MetadataHandler does), then OpenID Discovery; then
	// the token request, authenticated with client_secret_basic. The
	// resource server fetches the keys once.
	want := []string{
		"GET /.well-known/oauth-authorization-server", "GET /.well-known/openid-configuration",
		"POST /oauth/token (basic)", "GET /keys",
	}
	if diff := cmp.Diff(want, r.opRequests()); diff != "" {
		t.Errorf("requests at the OP (-want +got):\n%s", diff)
	}

	_, err = r.whoami(t, "wrong-secret")
	var ae *oauthclient.AuthorizationError
	if !errors.As(err, &ae) || ae.Code != "invalid_client" {
		t.Fatalf("call with a wrong secret = %v, want an invalid_client AuthorizationError", err)
	}
	if strings.Contains(err.Error(), "wrong-secret") || strings.Contains(err.Error(), zitadelSecret) {
		t.Errorf("the error shows a secret: %v", err)
	}
}
