package oauthclient_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/oauth2-proxy/mockoidc"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/oauth"
)

// machine returns an Authorizer for the rig with no browser, a grant and
// the injected clock.
func (r *rig) machine(t *testing.T, clk *clock, opts oauthclient.Options) *oauthclient.Authorizer {
	t.Helper()
	if clk != nil {
		opts.Now = clk.Now
	}
	az, err := oauthclient.New(r.url, opts)
	if err != nil {
		t.Fatal(err)
	}
	return az
}

// callEcho connects through az and calls the rig's echo tool.
func (r *rig) callEcho(t *testing.T, az *oauthclient.Authorizer) error {
	t.Helper()
	c, err := client.New(r.url, client.Options{Transport: az})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Connect(t.Context()); err != nil {
		return err
	}
	_, err = c.Call(t.Context(), "echo", map[string]any{})
	return err
}

// tokenForms returns the given form field of every /token request.
func (r *rig) tokenForms(field string) []string {
	var out []string
	for _, f := range r.iss.Requests("/token") {
		out = append(out, f.Get(field))
	}
	return out
}

func ecKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestClientCredentialsSecret: the client credentials grant with a
// client_secret_basic client, then again (no browser, no registration)
// when the token has expired by the client's clock.
func TestClientCredentialsSecret(t *testing.T) {
	r := newRig(t, "")
	r.iss.RegisterClient("ci-job", "s3cret")
	clk := &clock{now: time.Now()}
	az := r.machine(t, clk, oauthclient.Options{
		ClientID: "ci-job", ClientSecret: "s3cret", Grant: &oauthclient.ClientCredentials{}, Scopes: []string{"mcp:basic"},
	})
	if err := r.callEcho(t, az); err != nil {
		t.Fatalf("call: %v", err)
	}
	clk.advance(2 * time.Hour)
	if err := r.callEcho(t, az); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if diff := cmp.Diff([]string{"client_credentials", "client_credentials"}, r.tokenForms("grant_type")); diff != "" {
		t.Errorf("token requests (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{r.url, r.url}, r.tokenForms("resource")); diff != "" {
		t.Errorf("resource parameters (-want +got):\n%s", diff)
	}
	if got := r.tokenForms("scope"); got[0] != "mcp:basic" {
		t.Errorf("scope = %q, want the metadata's mcp:basic", got[0])
	}
	if n := len(r.iss.Requests("/authorize")) + len(r.iss.Requests("/register")); n != 0 {
		t.Errorf("%d authorization or registration requests, want none", n)
	}
}

// TestClientCredentialsKey: private_key_jwt with a key read from PEM.
func TestClientCredentialsKey(t *testing.T) {
	r := newRig(t, "")
	k := ecKey(t)
	r.iss.RegisterKeyClient("worker", &k.PublicKey)
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	key, err := oauthclient.ParsePrivateKey(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	if err != nil {
		t.Fatalf("ParsePrivateKey: %v", err)
	}
	az := r.machine(t, nil, oauthclient.Options{ClientID: "worker", ClientKey: key, Grant: &oauthclient.ClientCredentials{}})
	if err := r.callEcho(t, az); err != nil {
		t.Fatalf("call: %v", err)
	}
	f := r.iss.Requests("/token")[0]
	if f.Get("client_assertion_type") != "urn:ietf:params:oauth:client-assertion-type:jwt-bearer" || f.Get("client_secret") != "" {
		t.Errorf("token request: assertion type %q, secret %q", f.Get("client_assertion_type"), f.Get("client_secret"))
	}
}

// TestClientCredentialsBadSecret: the server's invalid_client is the
// caller's error, after one token request.
func TestClientCredentialsBadSecret(t *testing.T) {
	r := newRig(t, "")
	r.iss.RegisterClient("ci-job", "s3cret")
	az := r.machine(t, nil, oauthclient.Options{ClientID: "ci-job", ClientSecret: "wrong", Grant: &oauthclient.ClientCredentials{}})
	err := r.callEcho(t, az)
	var ae *oauthclient.AuthorizationError
	if !errors.As(err, &ae) || ae.Code != "invalid_client" {
		t.Fatalf("call = %v, want an invalid_client AuthorizationError", err)
	}
	if strings.Contains(err.Error(), "wrong") {
		t.Errorf("the error shows the secret: %v", err)
	}
}

// workloadToken signs a workload identity token for the issuer at aud.
func workloadToken(t *testing.T, k *ecdsa.PrivateKey, sub, aud string, exp time.Time) string {
	t.Helper()
	s, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
		"iss": "https://workload.example", "sub": sub, "aud": aud, "iat": time.Now().Unix(), "exp": exp.Unix(),
	}).SignedString(k)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestJWTBearerRotatedFile: the workload token is read from its file at
// each token request, so the platform's rotation is picked up.
func TestJWTBearerRotatedFile(t *testing.T) {
	r := newRig(t, "")
	k := ecKey(t)
	r.iss.TrustAssertions("https://workload.example", &k.PublicKey)
	path := filepath.Join(t.TempDir(), "token")
	first := workloadToken(t, k, "pod-1", r.iss.URL, time.Now().Add(time.Hour))
	if err := os.WriteFile(path, []byte(first+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	clk := &clock{now: time.Now()}
	az := r.machine(t, clk, oauthclient.Options{Grant: &oauthclient.JWTBearer{Assertion: oauthclient.AssertionFile(path)}})
	if err := r.callEcho(t, az); err != nil {
		t.Fatalf("call: %v", err)
	}
	second := workloadToken(t, k, "pod-1", r.iss.URL, time.Now().Add(3*time.Hour))
	if err := os.WriteFile(path, []byte(second), 0o600); err != nil {
		t.Fatal(err)
	}
	clk.advance(2 * time.Hour)
	if err := r.callEcho(t, az); err != nil {
		t.Fatalf("call after expiry: %v", err)
	}
	if diff := cmp.Diff([]string{first, second}, r.tokenForms("assertion")); diff != "" {
		t.Errorf("assertions sent (-want +got):\n%s", diff)
	}
}

// TestJWTBearerCommand: the assertion is a command's output; a failing
// command is the caller's error.
func TestJWTBearerCommand(t *testing.T) {
	r := newRig(t, "")
	k := ecKey(t)
	r.iss.TrustAssertions("https://workload.example", &k.PublicKey)
	tok := workloadToken(t, k, "job-7", r.iss.URL, time.Now().Add(time.Hour))
	az := r.machine(t, nil, oauthclient.Options{Grant: &oauthclient.JWTBearer{
		Assertion: oauthclient.AssertionCommand("sh", "-c", "printf '%s\\n' \"$0\"", tok)}})
	if err := r.callEcho(t, az); err != nil {
		t.Fatalf("call: %v", err)
	}
	az = r.machine(t, nil, oauthclient.Options{Grant: &oauthclient.JWTBearer{
		Assertion: oauthclient.AssertionCommand("sh", "-c", "echo no token >&2; exit 3")}})
	if err := r.callEcho(t, az); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Errorf("call with a failing command = %v, want its exit status", err)
	}
}

// TestJWTBearerUnusableAssertion: an expired assertion and a missing file
// fail before any token request; a wrong audience is the server's
// invalid_grant.
func TestJWTBearerUnusableAssertion(t *testing.T) {
	r := newRig(t, "")
	k := ecKey(t)
	r.iss.TrustAssertions("https://workload.example", &k.PublicKey)
	dir := t.TempDir()
	write := func(name, tok string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(tok), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	expired := write("expired", workloadToken(t, k, "w", r.iss.URL, time.Now().Add(-time.Minute)))
	wrongAud := write("aud", workloadToken(t, k, "w", "https://elsewhere.example", time.Now().Add(time.Hour)))
	for _, tc := range []struct {
		name, path string
		want       func(error) bool
		requests   int
	}{
		{"expired", expired, func(err error) bool { return errors.Is(err, oauthclient.ErrAssertionExpired) }, 0},
		{"missing file", filepath.Join(dir, "absent"), func(err error) bool { return errors.Is(err, fs.ErrNotExist) }, 0},
		{"wrong audience", wrongAud, func(err error) bool {
			var ae *oauthclient.AuthorizationError
			return errors.As(err, &ae) && ae.Code == "invalid_grant"
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(r.iss.Requests("/token"))
			az := r.machine(t, nil, oauthclient.Options{Grant: &oauthclient.JWTBearer{Assertion: oauthclient.AssertionFile(tc.path)}})
			if err := r.callEcho(t, az); !tc.want(err) {
				t.Errorf("call = %v", err)
			}
			if n := len(r.iss.Requests("/token")) - before; n != tc.requests {
				t.Errorf("%d token requests, want %d", n, tc.requests)
			}
		})
	}
}

// TestEnterpriseAuthorization: the ID token is exchanged at a loopback
// IdP for an ID-JAG, which the test issuer (trusting the IdP) redeems in
// the JWT bearer grant for a client_secret_basic client.
func TestEnterpriseAuthorization(t *testing.T) {
	r := newRig(t, "")
	r.iss.RegisterClient("mcp-client", "as-secret")
	idpKey := ecKey(t)
	var (
		mu        sync.Mutex
		exchanges []map[string]string
	)
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := req.ParseForm(); err != nil {
			http.Error(w, "bad form", http.StatusBadRequest)
			return
		}
		f := map[string]string{}
		for _, k := range []string{"grant_type", "subject_token", "subject_token_type", "requested_token_type", "audience", "resource", "client_id"} {
			f[k] = req.PostForm.Get(k)
		}
		mu.Lock()
		exchanges = append(exchanges, f)
		mu.Unlock()
		jag, err := jwt.NewWithClaims(jwt.SigningMethodES256, jwt.MapClaims{
			"iss": "https://workload.example", "sub": "alice@example.com", "aud": f["audience"], "resource": f["resource"],
			"client_id": "mcp-client", "iat": time.Now().Unix(), "exp": time.Now().Add(5 * time.Minute).Unix(),
		}).SignedString(idpKey)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"access_token": jag, "issued_token_type": oauthclient.TokenTypeIDJAG, "token_type": "N_A"})
	}))
	t.Cleanup(idp.Close)
	r.iss.TrustAssertions("https://workload.example", &idpKey.PublicKey)
	az := r.machine(t, nil, oauthclient.Options{ClientID: "mcp-client", ClientSecret: "as-secret",
		Grant: &oauthclient.EnterpriseAuthorization{
			IdPTokenURL: idp.URL + "/token", IdPClientID: "idp-client", IDToken: oauthclient.StaticAssertion("the-id-token"),
		}})
	if err := r.callEcho(t, az); err != nil {
		t.Fatalf("call: %v", err)
	}
	want := []map[string]string{{
		"grant_type": oauthclient.GrantTokenExchange, "subject_token": "the-id-token",
		"subject_token_type": oauthclient.TokenTypeIDToken, "requested_token_type": oauthclient.TokenTypeIDJAG,
		"audience": r.iss.URL, "resource": r.url, "client_id": "idp-client",
	}}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(want, exchanges); diff != "" {
		t.Errorf("token exchange (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{oauthclient.GrantJWTBearer}, r.tokenForms("grant_type")); diff != "" {
		t.Errorf("token requests at the authorization server (-want +got):\n%s", diff)
	}
}

// TestMachineGrantNotOffered: a third-party OpenID provider (mockoidc)
// that offers only the code and refresh grants gets no client credentials
// request; the error names the grants it lists.
func TestMachineGrantNotOffered(t *testing.T) {
	m, err := mockoidc.Run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Shutdown() })
	jwks, err := oauth.DiscoverJWKS(context.Background(), nil, m.Issuer(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	r := newRigFor(t, "", nil, m.Issuer(), jwks, nil)
	az := r.machine(t, nil, oauthclient.Options{ClientID: m.ClientID, ClientSecret: m.ClientSecret, Grant: &oauthclient.ClientCredentials{}})
	err = r.callEcho(t, az)
	if err == nil || !strings.Contains(err.Error(), "does not offer the client_credentials grant (it lists authorization_code, refresh_token)") {
		t.Fatalf("call = %v, want the grant refused before any token request", err)
	}
}

// TestMachineOptions: every problem of a machine configuration at once.
func TestMachineOptions(t *testing.T) {
	_, err := oauthclient.New("http://127.0.0.1:1/mcp", oauthclient.Options{
		ClientKey:   ecKey(t),
		ClientKeyID: "k1",
		Grant:       &oauthclient.EnterpriseAuthorization{IdPTokenURL: "http://idp.example/token"},
		OpenURL:     func(context.Context, string) error { return nil },
	})
	if err == nil {
		t.Fatal("New accepted the options")
	}
	for _, want := range []string{
		"ClientKey needs ClientID", "Grant and OpenURL exclude each other", `IdPTokenURL "http://idp.example/token" must use https`,
		"EnterpriseAuthorization needs IdPClientID and IDToken", "EnterpriseAuthorization needs ClientID",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	_, err = oauthclient.New("http://127.0.0.1:1/mcp", oauthclient.Options{ClientID: "c", Grant: &oauthclient.ClientCredentials{}})
	if err == nil || !strings.Contains(err.Error(), "ClientCredentials needs ClientID and ClientSecret or ClientKey") {
		t.Errorf("ClientCredentials without a secret: %v", err)
	}
}

// TestClientCredentialsDPoP: where the authorization server advertises
// DPoP, the client credentials grant asks for a token bound to a key of
// the Authorizer's own (a proof on the token request), and calls a
// resource server that requires DPoP with proofs. (The clock is the real
// one: a proof's iat must be within the server's window.)
func TestClientCredentialsDPoP(t *testing.T) {
	r := newRigWith(t, "", func(o *oauth.Options) { o.DPoP = oauth.DPoP{Mode: oauth.DPoPRequired} })
	r.iss.Configure(func(fc *testissuer.FlowConfig) { fc.DPoP = true })
	r.iss.RegisterClient("ci-job", "s3cret")
	store, err := oauthclient.NewFileStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	az := r.machine(t, nil, oauthclient.Options{ClientID: "ci-job", ClientSecret: "s3cret",
		Grant: &oauthclient.ClientCredentials{}, Store: store})
	if err := r.callEcho(t, az); err != nil {
		t.Fatalf("call with a DPoP-bound machine token: %v", err)
	}
	rec, err := store.Load(r.url)
	if err != nil || rec == nil {
		t.Fatalf("stored record: %v, %v", rec, err)
	}
	if rec.TokenType != oauthclient.TokenTypeDPoP || rec.DPoPThumbprint == "" || rec.DPoPKey == "" {
		t.Fatalf("record: token type %q, thumbprint %q, key kept %v; want a DPoP-bound token with its key",
			rec.TokenType, rec.DPoPThumbprint, rec.DPoPKey != "")
	}
	// The issuer binds a token only to the key of the request's proof.
	if n := len(r.iss.Requests("/token")); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}
