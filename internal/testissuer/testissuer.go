// Package testissuer is a small OAuth authorization server for tests: it
// serves OpenID and RFC 8414 discovery, a JWKS, an RFC 7662 introspection
// endpoint and the authorization code flow (an auto-approving /authorize
// with PKCE S256, /token for codes and refresh tokens with the RFC 8707
// resource as audience, RFC 7591 /register), the client credentials and
// JWT bearer grants (machine.go) over loopback HTTP, and signs
// access tokens with keys it generates. Keys can be rotated while it runs.
package testissuer

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer is a running test authorization server.
type Issuer struct {
	// URL is the issuer identifier, the server's root URL.
	URL string
	// ClientID and ClientSecret authenticate introspection requests.
	ClientID, ClientSecret string

	srv *httptest.Server

	mu      sync.Mutex
	keys    map[string]*Key // published, by kid
	current map[string]*Key // the signing key per algorithm family ("RS", "ES", "EdDSA")
	opaque  map[string]map[string]any

	flow     FlowConfig
	clients  map[string]*registered
	codes    map[string]*grant
	refresh  map[string]*grant
	requests map[string][]url.Values
	trusted  map[string]crypto.PublicKey // workload assertion issuers (machine.go)

	jwksFetches atomic.Int64
	jwksStatus  atomic.Int32 // when not 0, the status JWKS requests get instead of the keys
	n           atomic.Int64
	hold        atomic.Pointer[hold] // JWKS requests wait for it (hold.go); nil: none
}

// Key is one signing key.
type Key struct {
	// ID is the key's "kid".
	ID string
	// Alg is the algorithm it was made for; an RSA key also signs PS256.
	Alg     string
	private crypto.Signer
}

// Public is the key's public half.
func (k *Key) Public() crypto.PublicKey { return k.private.Public() }

// New starts an issuer on loopback with an RSA, an EC P-256 and an Ed25519
// key, and stops it when the test ends.
func New(t testing.TB) *Issuer {
	t.Helper()
	iss := &Issuer{
		ClientID: "resource", ClientSecret: "resource-secret",
		keys: map[string]*Key{}, current: map[string]*Key{}, opaque: map[string]map[string]any{},
		clients: map[string]*registered{}, codes: map[string]*grant{}, refresh: map[string]*grant{},
		requests: map[string][]url.Values{}, trusted: map[string]crypto.PublicKey{},
	}
	for _, alg := range []string{"RS256", "ES256", "EdDSA"} {
		iss.Rotate(t, alg)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", iss.serveMetadata)
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", iss.serveMetadata)
	mux.HandleFunc("GET /authorize", iss.serveAuthorize)
	mux.HandleFunc("POST /token", iss.serveToken)
	mux.HandleFunc("POST /register", iss.serveRegister)
	mux.HandleFunc("GET /jwks", iss.serveJWKS)
	mux.HandleFunc("POST /introspect", iss.serveIntrospect)
	iss.srv = httptest.NewServer(mux)
	t.Cleanup(iss.srv.Close)
	iss.URL = iss.srv.URL
	return iss
}

// JWKSURL is where the issuer publishes its keys.
func (iss *Issuer) JWKSURL() string { return iss.URL + "/jwks" }

// IntrospectionURL is the issuer's RFC 7662 endpoint.
func (iss *Issuer) IntrospectionURL() string { return iss.URL + "/introspect" }

// JWKSFetches counts the JWKS requests served.
func (iss *Issuer) JWKSFetches() int64 { return iss.jwksFetches.Load() }

// Rotate makes a new key the signing key for alg's family and publishes
// it next to the old ones; it returns the new key.
func (iss *Issuer) Rotate(t testing.TB, alg string) *Key {
	t.Helper()
	k := iss.NewKey(t, alg)
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.keys[k.ID] = k
	iss.current[family(alg)] = k
	return k
}

// NewKey generates a key for alg (RS256, PS256, ES256 or EdDSA) that the
// issuer does not publish.
func (iss *Issuer) NewKey(t testing.TB, alg string) *Key {
	t.Helper()
	var (
		priv crypto.Signer
		err  error
	)
	switch family(alg) {
	case "RS":
		priv, err = rsa.GenerateKey(rand.Reader, 2048)
	case "ES":
		priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	case "EdDSA":
		_, priv, err = ed25519.GenerateKey(rand.Reader)
	default:
		t.Fatalf("testissuer: unsupported algorithm %s", alg)
	}
	if err != nil {
		t.Fatalf("testissuer: generate %s key: %v", alg, err)
	}
	return &Key{ID: fmt.Sprintf("k%d", iss.n.Add(1)), Alg: alg, private: priv}
}

// Withdraw stops publishing a key.
func (iss *Issuer) Withdraw(k *Key) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	delete(iss.keys, k.ID)
}

func family(alg string) string {
	switch alg {
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		return "RS"
	case "ES256":
		return "ES"
	case "EdDSA":
		return "EdDSA"
	}
	return alg
}

// Claims returns the claims of a valid token for subject and audience:
// iss, sub, aud, iat, and exp an hour after now.
func (iss *Issuer) Claims(subject, audience string, now time.Time) jwt.MapClaims {
	return jwt.MapClaims{
		"iss": iss.URL, "sub": subject, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
	}
}

// Token signs claims with the current RS256 key.
func (iss *Issuer) Token(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	return iss.SignWith(t, iss.Current("RS256"), "RS256", claims)
}

// Current returns the signing key for alg's family.
func (iss *Issuer) Current(alg string) *Key {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	return iss.current[family(alg)]
}

// SignWith signs claims with key k as algorithm alg, with k's ID as kid.
func (iss *Issuer) SignWith(t testing.TB, k *Key, alg string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	tok.Header["kid"] = k.ID
	s, err := tok.SignedString(k.private)
	if err != nil {
		t.Fatalf("testissuer: sign: %v", err)
	}
	return s
}

// SignWithHeader signs claims like SignWith, with header's parameters
// added to the token's header (a "crit", say).
func (iss *Issuer) SignWithHeader(t testing.TB, k *Key, alg string, header map[string]any, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.GetSigningMethod(alg), claims)
	tok.Header["kid"] = k.ID
	for name, v := range header {
		tok.Header[name] = v
	}
	s, err := tok.SignedString(k.private)
	if err != nil {
		t.Fatalf("testissuer: sign: %v", err)
	}
	return s
}

// Opaque registers an opaque token whose introspection answer is claims
// (with "active": true added unless claims set it) and returns it.
func (iss *Issuer) Opaque(claims map[string]any) string {
	tok := fmt.Sprintf("opaque-%d-%d", iss.n.Add(1), time.Now().UnixNano())
	c := map[string]any{"active": true}
	for k, v := range claims {
		c[k] = v
	}
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.opaque[tok] = c
	return tok
}

// Revoke makes an opaque token inactive.
func (iss *Issuer) Revoke(tok string) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	delete(iss.opaque, tok)
}

// FailJWKS makes JWKS requests fail with HTTP status (an outage of the
// identity provider); status 0 serves the keys again.
func (iss *Issuer) FailJWKS(status int) { iss.jwksStatus.Store(int32(status)) }

func (iss *Issuer) serveJWKS(w http.ResponseWriter, _ *http.Request) {
	iss.jwksFetches.Add(1)
	iss.waitHold()
	if status := iss.jwksStatus.Load(); status != 0 {
		http.Error(w, "unavailable", int(status))
		return
	}
	iss.mu.Lock()
	var keys []map[string]string
	for _, k := range iss.keys {
		keys = append(keys, jwkOf(k))
	}
	iss.mu.Unlock()
	writeJSON(w, map[string]any{"keys": keys})
}

func (iss *Issuer) serveIntrospect(w http.ResponseWriter, r *http.Request) {
	id, secret, ok := r.BasicAuth()
	if !ok || id != iss.ClientID || secret != iss.ClientSecret {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	if err := r.ParseForm(); err != nil {
		http.Error(w, "bad form", http.StatusBadRequest)
		return
	}
	iss.mu.Lock()
	c, ok := iss.opaque[r.PostForm.Get("token")]
	iss.mu.Unlock()
	if !ok {
		c = map[string]any{"active": false}
	}
	writeJSON(w, c)
}

func jwkOf(k *Key) map[string]string {
	b64 := base64.RawURLEncoding.EncodeToString
	j := map[string]string{"kid": k.ID, "use": "sig", "alg": k.Alg}
	switch pub := k.Public().(type) {
	case *rsa.PublicKey:
		j["kty"], j["n"], j["e"] = "RSA", b64(pub.N.Bytes()), b64(big.NewInt(int64(pub.E)).Bytes())
		delete(j, "alg") // usable for RS256 and PS256 alike
	case *ecdsa.PublicKey:
		b, _ := pub.Bytes()
		size := (pub.Curve.Params().BitSize + 7) / 8
		j["kty"], j["crv"], j["x"], j["y"] = "EC", "P-256", b64(b[1:1+size]), b64(b[1+size:])
	case ed25519.PublicKey:
		j["kty"], j["crv"], j["x"] = "OKP", "Ed25519", b64(pub)
	}
	return j
}

// PublicPEM returns k's public key in PEM, the public material an
// attacker would use as an HMAC secret.
func (k *Key) PublicPEM(t testing.TB) []byte {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(k.Public())
	if err != nil {
		t.Fatalf("testissuer: marshal public key: %v", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// SignHMAC signs claims as HS256 with secret, with kid in the header.
func SignHMAC(t testing.TB, secret []byte, kid string, claims jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(jwt.SigningMethodHS256, claims)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(secret)
	if err != nil {
		t.Fatalf("testissuer: sign HS256: %v", err)
	}
	return s
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// Relabeled returns k under another key ID, to sign a token whose kid
// names a different key.
func (k *Key) Relabeled(id string) *Key {
	c := *k
	c.ID = id
	return &c
}
