package oauthclient_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/testissuer"
)

// TestFlowOnUnauthorized: the first request's 401 runs discovery, dynamic
// registration and the code flow; the request is retried with the token
// and later requests reuse it.
func TestFlowOnUnauthorized(t *testing.T) {
	r := newRig(t, "")
	az := r.authorizer(t, oauthclient.Options{})
	c := r.mcpClient(t, az)
	for range 2 {
		if _, err := c.Call(t.Context(), "echo", map[string]any{}); err != nil {
			t.Fatalf("call: %v", err)
		}
	}

	// Discovery: the challenge names the path-inserted URL; the root one is
	// never needed.
	var wellKnown []string
	for _, p := range r.seen() {
		if strings.Contains(p, "/.well-known/") {
			wellKnown = append(wellKnown, p)
		}
	}
	if diff := cmp.Diff([]string{"GET /.well-known/oauth-protected-resource/mcp"}, wellKnown); diff != "" {
		t.Errorf("metadata requests (-want +got):\n%s", diff)
	}

	reg := r.iss.Requests("/register")
	if len(reg) != 1 || reg[0].Get("application_type") != "native" || reg[0].Get("token_endpoint_auth_method") != "none" ||
		reg[0].Get("grant_types") != "authorization_code refresh_token" {
		t.Errorf("registrations: %v", reg)
	}
	authz := r.iss.Requests("/authorize")
	tok := r.iss.Requests("/token")
	if len(authz) != 1 || len(tok) != 1 {
		t.Fatalf("%d authorization and %d token requests, want 1 each", len(authz), len(tok))
	}
	a, k := authz[0], tok[0]
	if a.Get("resource") != r.url || k.Get("resource") != r.url {
		t.Errorf("resource: authorize %q, token %q, want %q", a.Get("resource"), k.Get("resource"), r.url)
	}
	if a.Get("scope") != "mcp:basic" {
		t.Errorf("scope %q, want the metadata's scopes_supported", a.Get("scope"))
	}
	sum := sha256.Sum256([]byte(k.Get("code_verifier")))
	if a.Get("code_challenge_method") != "S256" || base64.RawURLEncoding.EncodeToString(sum[:]) != a.Get("code_challenge") {
		t.Errorf("PKCE: method %q, challenge %q does not match the verifier", a.Get("code_challenge_method"), a.Get("code_challenge"))
	}
	if u, err := url.Parse(a.Get("redirect_uri")); err != nil || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Errorf("redirect_uri %q is not a loopback URL with a port", a.Get("redirect_uri"))
	}
	if a.Get("state") == "" || len(a.Get("state")) < 32 {
		t.Errorf("state %q is too short", a.Get("state"))
	}
}

// TestIssuerChecks: metadata whose issuer is not the one it was fetched
// for is never used, and a redirect whose iss or state is wrong is never
// redeemed.
func TestIssuerChecks(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configure  func(*testissuer.FlowConfig)
		want       error
		authorizes bool // the flow reaches /authorize
	}{
		{"metadata issuer", func(f *testissuer.FlowConfig) { f.MetadataIssuer = "https://attacker.example" }, oauthclient.ErrIssuerMismatch, false},
		{"redirect iss", func(f *testissuer.FlowConfig) { f.RedirectIssuer = "https://attacker.example" }, oauthclient.ErrIssuerMismatch, true},
		{"redirect iss with a slash", nil, oauthclient.ErrIssuerMismatch, true},
		{"state", func(f *testissuer.FlowConfig) { f.RedirectState = "forged" }, oauthclient.ErrStateMismatch, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, "")
			cfg := tc.configure
			if cfg == nil {
				cfg = func(f *testissuer.FlowConfig) { f.RedirectIssuer = r.iss.URL + "/" }
			}
			r.iss.Configure(cfg)
			_, err := r.authorizer(t, oauthclient.Options{}).Login(t.Context())
			if !errors.Is(err, tc.want) {
				t.Fatalf("Login: %v, want %v", err, tc.want)
			}
			if got := len(r.iss.Requests("/authorize")) > 0; got != tc.authorizes {
				t.Errorf("reached /authorize: %v, want %v", got, tc.authorizes)
			}
			if n := len(r.iss.Requests("/token")); n != 0 {
				t.Errorf("%d token requests, want none", n)
			}
		})
	}
}

// TestResourceMismatch: metadata naming another resource stops the flow
// before registration.
func TestResourceMismatch(t *testing.T) {
	r := newRig(t, "http://127.0.0.1:1/mcp")
	_, err := r.authorizer(t, oauthclient.Options{}).Login(t.Context())
	if !errors.Is(err, oauthclient.ErrResourceMismatch) {
		t.Fatalf("Login: %v, want ErrResourceMismatch", err)
	}
	// Through a client the flow's error is the request's.
	c, err := client.New(r.url, client.Options{Transport: r.authorizer(t, oauthclient.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ce *client.ConnectionError
	if err := c.Connect(t.Context()); !errors.As(err, &ce) || !errors.Is(err, oauthclient.ErrResourceMismatch) {
		t.Errorf("Connect: %v, want a ConnectionError wrapping ErrResourceMismatch", err)
	}
	if n := len(r.iss.Requests("/register")) + len(r.iss.Requests("/authorize")); n != 0 {
		t.Errorf("%d requests reached the issuer, want none", n)
	}
}

// TestRefreshOnExpiry: an expired token is refreshed, with the resource
// parameter, before it is sent.
func TestRefreshOnExpiry(t *testing.T) {
	r := newRig(t, "")
	clk := &clock{now: time.Now()}
	az := r.authorizer(t, oauthclient.Options{Now: clk.Now})
	rec, err := az.Login(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	first := rec.AccessToken
	// Login asked the server for its challenge first.
	if seen := r.seen(); len(seen) < 2 || seen[0] != "POST /mcp" || seen[1] != "GET /.well-known/oauth-protected-resource/mcp" {
		t.Errorf("Login's requests to the server: %q", seen)
	}
	if tok, err := az.Token(t.Context()); err != nil || tok != first {
		t.Fatalf("Token before expiry: a different token or %v", err)
	}
	clk.advance(2 * time.Hour)
	c := r.mcpClient(t, az)
	if _, err := c.Call(t.Context(), "echo", map[string]any{}); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	tok := r.iss.Requests("/token")
	if len(tok) != 2 || tok[1].Get("grant_type") != "refresh_token" || tok[1].Get("resource") != r.url {
		t.Fatalf("token requests %v, want a code redemption and a refresh with resource", tok)
	}
	if len(r.iss.Requests("/authorize")) != 1 {
		t.Errorf("the refresh ran the authorization flow again")
	}
	if now, _ := az.Token(t.Context()); now == first {
		t.Errorf("the token was not replaced by the refreshed one")
	}
}

// TestStepUp: a 403 insufficient_scope re-authorizes with the union of the
// scopes; the stepped-up token then serves later calls.
func TestStepUp(t *testing.T) {
	r := newRig(t, "")
	az := r.authorizer(t, oauthclient.Options{})
	c := r.mcpClient(t, az)
	if _, err := c.Call(t.Context(), "publish", map[string]any{}); err != nil {
		t.Fatalf("call: %v", err)
	}
	var scopes []string
	for _, a := range r.iss.Requests("/authorize") {
		scopes = append(scopes, a.Get("scope"))
	}
	if diff := cmp.Diff([]string{"mcp:basic", "mcp:basic reports:write"}, scopes); diff != "" {
		t.Errorf("requested scopes (-want +got):\n%s", diff)
	}

	if _, err := c.Call(t.Context(), "publish", map[string]any{}); err != nil {
		t.Fatalf("second call with the stepped-up token: %v", err)
	}
	if n := len(r.iss.Requests("/authorize")); n != 2 {
		t.Errorf("%d authorizations, want 2 (the stepped-up token is reused)", n)
	}
}

// TestNoInteraction: without OpenURL the Authorizer sends stored tokens
// only, and a 401 reaches the caller as *client.AuthError.
func TestNoInteraction(t *testing.T) {
	r := newRig(t, "")
	az2, err := oauthclient.New(r.url, oauthclient.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(r.url, client.Options{Transport: az2})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var ae *client.AuthError
	if err := c.Connect(t.Context()); !errors.As(err, &ae) || ae.StatusCode != 401 {
		t.Fatalf("Connect: %v, want a 401 AuthError", err)
	}
	if _, err := az2.Token(t.Context()); !errors.Is(err, oauthclient.ErrNoToken) {
		t.Errorf("Token: %v, want ErrNoToken", err)
	}
	if _, err := az2.Login(t.Context()); !errors.Is(err, oauthclient.ErrNoOpenURL) {
		t.Errorf("Login: %v, want ErrNoOpenURL", err)
	}
}

// TestFileStore: the login's token lands in a 0600 file in a 0700
// directory; a new Authorizer on the same store sends it without a flow;
// Logout removes it.
func TestFileStore(t *testing.T) {
	r := newRig(t, "")
	dir := filepath.Join(t.TempDir(), "tokens")
	store, err := oauthclient.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.authorizer(t, oauthclient.Options{Store: store}).Login(t.Context()); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{dir: 0o700, store.Path(r.url): 0o600} {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", filepath.Base(path), fi.Mode().Perm(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d files in the store, want 1 (no temporary files left)", len(entries))
	}

	later, err := oauthclient.New(r.url, oauthclient.Options{Store: store}) // no OpenURL: stored tokens only
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(r.url, client.Options{Transport: later})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Call(t.Context(), "echo", map[string]any{}); err != nil {
		t.Fatalf("call with the stored token: %v", err)
	}
	if err := later.Logout(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(store.Path(r.url)); !os.IsNotExist(err) {
		t.Errorf("after Logout the file remains: %v", err)
	}
	if rec, err := store.Load(r.url); rec != nil || err != nil {
		t.Errorf("Load after Logout: %v, %v", rec, err)
	}
}

// TestPreRegistered: a pre-registered confidential client authenticates
// with HTTP Basic and never registers.
func TestPreRegistered(t *testing.T) {
	r := newRig(t, "")
	r.iss.RegisterClient("cli", "s3cret")
	rec, err := r.authorizer(t, oauthclient.Options{ClientID: "cli", ClientSecret: "s3cret"}).Login(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if rec.AuthMethod != oauthclient.AuthBasic || rec.ClientID != "cli" {
		t.Errorf("registration %q %q, want cli with client_secret_basic", rec.ClientID, rec.AuthMethod)
	}
	if n := len(r.iss.Requests("/register")); n != 0 {
		t.Errorf("%d dynamic registrations, want none", n)
	}
	if tok := r.iss.Requests("/token"); len(tok) != 1 || tok[0].Has("client_secret") {
		t.Errorf("token requests %d; the secret travelled in the form: %v", len(tok), len(tok) == 1 && tok[0].Has("client_secret"))
	}
}

// TestConcurrentRequestsShareOneFlow: clients whose requests meet the 401
// (and then the step-up 403) together wait for one flow each time and all
// succeed with its token.
func TestConcurrentRequestsShareOneFlow(t *testing.T) {
	r := newRig(t, "")
	az := r.authorizer(t, oauthclient.Options{})
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			c, err := client.New(r.url, client.Options{Transport: az})
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			_, err = c.Call(t.Context(), "publish", map[string]any{})
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if got := len(r.iss.Requests("/authorize")); got != 2 {
		t.Errorf("%d authorization flows, want 2 (one for the 401, one step-up)", got)
	}
}

// TestRedirectTimeout: a user who never comes back ends the flow after
// RedirectTimeout, and nothing is redeemed.
func TestRedirectTimeout(t *testing.T) {
	r := newRig(t, "")
	shown := make(chan string, 1)
	az := r.authorizer(t, oauthclient.Options{
		OpenURL:         func(_ context.Context, u string) error { shown <- u; return nil },
		RedirectTimeout: 100 * time.Millisecond,
	})
	_, err := az.Login(t.Context())
	if err == nil || !strings.Contains(err.Error(), "no authorization response within") {
		t.Fatalf("Login: %v, want the redirect timeout", err)
	}
	if u := <-shown; !strings.HasPrefix(u, r.iss.AuthorizeURL()+"?") {
		t.Errorf("shown URL %q", u)
	}
	if n := len(r.iss.Requests("/token")); n != 0 {
		t.Errorf("%d token requests", n)
	}
}

// TestTokenStaysWithItsServer: a request to another origin through the
// Authorizer (a redirect, say) carries no Authorization header.
func TestTokenStaysWithItsServer(t *testing.T) {
	r := newRig(t, "")
	az := r.authorizer(t, oauthclient.Options{})
	if _, err := az.Login(t.Context()); err != nil {
		t.Fatal(err)
	}
	got := make(chan string, 2)
	other := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		got <- req.Header.Get("Authorization")
	}))
	defer other.Close()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, other.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: az}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := <-got; h != "" {
		t.Errorf("the other origin received Authorization %q", h)
	}
}

// TestExtraScopes: Options.Scopes are added to the metadata's
// scopes_supported, not instead of them.
func TestExtraScopes(t *testing.T) {
	r := newRig(t, "")
	if _, err := r.authorizer(t, oauthclient.Options{Scopes: []string{"extra", "mcp:basic"}}).Login(t.Context()); err != nil {
		t.Fatal(err)
	}
	if a := r.iss.Requests("/authorize"); len(a) != 1 || a[0].Get("scope") != "mcp:basic extra" {
		t.Errorf("authorization requests %v, want scope \"mcp:basic extra\"", a)
	}
}

// TestNoTokenLeavesCallerHeader: without a token of its own the Authorizer
// sends the caller's Authorization header as it is (client.Options.Token
// and the Authorizer combine).
func TestNoTokenLeavesCallerHeader(t *testing.T) {
	got := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, req *http.Request) {
		got <- req.Header.Get("Authorization")
	}))
	defer srv.Close()
	store, err := oauthclient.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	az, err := oauthclient.Stored(store, srv.URL+"/mcp")
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, srv.URL+"/mcp", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer from-the-caller")
	resp, err := (&http.Client{Transport: az}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := <-got; h != "Bearer from-the-caller" {
		t.Errorf("the server received Authorization %q", h)
	}
}
