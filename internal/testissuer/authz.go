package testissuer

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The authorization code flow: /authorize approves every valid request at
// once (there is no user to ask) and redirects with a code; /token redeems
// codes (PKCE S256 checked) and refresh tokens and signs RS256 access
// tokens whose audience is the request's RFC 8707 resource; /register is
// RFC 7591 dynamic registration.

// FlowConfig is the issuer's behaviour in the authorization code flow;
// change it with Configure.
type FlowConfig struct {
	// Subject is the "sub" of the tokens /token signs. Default "alice".
	Subject string
	// AccessTTL is the lifetime of those tokens ("expires_in"). Default
	// one hour.
	AccessTTL time.Duration
	// ScopesSupported is advertised in the metadata when not nil.
	ScopesSupported []string
	// MetadataIssuer, when set, is the "issuer" the metadata claims instead
	// of the real one (a misconfigured or hostile server).
	MetadataIssuer string
	// RedirectIssuer, when set, is the "iss" the redirect carries instead of
	// the real one.
	RedirectIssuer string
	// RedirectState, when set, replaces the redirect's state.
	RedirectState string
	// DPoP advertises DPoP with ES256 (dpop_signing_alg_values_supported)
	// and binds the machine grants' tokens to the key of the token
	// request's DPoP proof (cnf.jkt, token_type DPoP; machine.go). The
	// proof is read, not verified: the resource server verifies the
	// proofs that matter.
	DPoP bool
}

type registered struct {
	secret   string
	method   string // none, client_secret_basic, client_secret_post, private_key_jwt
	redirect []string
	key      crypto.PublicKey // private_key_jwt (machine.go)
}

type grant struct {
	client, redirect, challenge, resource, scope string
}

// Configure changes the flow's behaviour while the issuer runs.
func (iss *Issuer) Configure(f func(*FlowConfig)) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	f(&iss.flow)
}

// AuthorizeURL is the issuer's authorization endpoint.
func (iss *Issuer) AuthorizeURL() string { return iss.URL + "/authorize" }

// TokenURL is the issuer's token endpoint.
func (iss *Issuer) TokenURL() string { return iss.URL + "/token" }

// RegisterClient pre-registers a client (method "none" when secret is
// empty, client_secret_basic otherwise) for loopback redirect URIs.
func (iss *Issuer) RegisterClient(id, secret string) {
	m := "none"
	if secret != "" {
		m = "client_secret_basic"
	}
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.clients[id] = &registered{secret: secret, method: m}
}

// Requests returns, in order, copies of the query (/authorize) or form
// (/token) of every request served at path; for /register, the client
// metadata's client_name, token_endpoint_auth_method, application_type and
// grant_types (space-separated).
func (iss *Issuer) Requests(path string) []url.Values {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	var out []url.Values
	for _, r := range iss.requests[path] {
		c := url.Values{}
		for k, v := range r {
			c[k] = append([]string(nil), v...)
		}
		out = append(out, c)
	}
	return out
}

func (iss *Issuer) record(path string, v url.Values) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.requests[path] = append(iss.requests[path], v)
}

func (iss *Issuer) serveMetadata(w http.ResponseWriter, _ *http.Request) {
	iss.mu.Lock()
	fc := iss.flow
	iss.mu.Unlock()
	issuer := iss.URL
	if fc.MetadataIssuer != "" {
		issuer = fc.MetadataIssuer
	}
	md := map[string]any{
		"issuer":                                         issuer,
		"jwks_uri":                                       iss.JWKSURL(),
		"introspection_endpoint":                         iss.IntrospectionURL(),
		"authorization_endpoint":                         iss.AuthorizeURL(),
		"token_endpoint":                                 iss.TokenURL(),
		"registration_endpoint":                          iss.URL + "/register",
		"response_types_supported":                       []string{"code"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":               []string{"S256"},
		"token_endpoint_auth_methods_supported":          []string{"none", "client_secret_basic", "client_secret_post"},
		"authorization_response_iss_parameter_supported": true,
		"subject_types_supported":                        []string{"public"},
		"id_token_signing_alg_values_supported":          []string{"RS256"},
	}
	if fc.ScopesSupported != nil {
		md["scopes_supported"] = fc.ScopesSupported
	}
	machineMetadata(md)
	if fc.DPoP {
		md["dpop_signing_alg_values_supported"] = []string{"ES256"}
	}
	writeJSON(w, md)
}

// loopbackRedirect: an http URL on 127.0.0.1 or [::1] (RFC 8252 §7.3); a
// registered one matches whatever its port.
func loopbackRedirect(raw string, registered []string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "http" || u.Fragment != "" {
		return false
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		return false
	}
	if len(registered) == 0 {
		return true
	}
	for _, r := range registered {
		if ru, err := url.Parse(r); err == nil && ru.Hostname() == u.Hostname() && ru.Path == u.Path {
			return true
		}
	}
	return false
}

func (iss *Issuer) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	iss.record("/authorize", q)
	iss.mu.Lock()
	c := iss.clients[q.Get("client_id")]
	fc := iss.flow
	iss.mu.Unlock()
	redirect := q.Get("redirect_uri")
	if c == nil || !loopbackRedirect(redirect, c.redirect) {
		http.Error(w, "unknown client or redirect URI", http.StatusBadRequest)
		return
	}
	back, _ := url.Parse(redirect)
	v := back.Query()
	state := q.Get("state")
	if fc.RedirectState != "" {
		state = fc.RedirectState
	}
	v.Set("state", state)
	v.Set("iss", iss.URL)
	if fc.RedirectIssuer != "" {
		v.Set("iss", fc.RedirectIssuer)
	}
	if q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		v.Set("error", "invalid_request")
	} else {
		code := fmt.Sprintf("code-%d-%s", iss.n.Add(1), randomID())
		iss.mu.Lock()
		iss.codes[code] = &grant{client: q.Get("client_id"), redirect: redirect,
			challenge: q.Get("code_challenge"), resource: q.Get("resource"), scope: q.Get("scope")}
		iss.mu.Unlock()
		v.Set("code", code)
	}
	back.RawQuery = v.Encode()
	http.Redirect(w, r, back.String(), http.StatusFound)
}

func tokenError(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": code})
}

// clientOf authenticates the token request's client by its registered
// method.
func (iss *Issuer) clientOf(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	iss.mu.Lock()
	c := iss.clients[id]
	iss.mu.Unlock()
	if c == nil {
		return "", false
	}
	switch c.method {
	case "none":
		return id, !basic && secret == ""
	case "client_secret_basic":
		return id, basic && subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
	default:
		return id, !basic && subtle.ConstantTimeCompare([]byte(secret), []byte(c.secret)) == 1
	}
}

func (iss *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		tokenError(w, http.StatusBadRequest, "invalid_request")
		return
	}
	iss.record("/token", r.PostForm)
	if iss.serveMachine(w, r) {
		return
	}
	client, ok := iss.clientOf(r)
	if !ok {
		tokenError(w, http.StatusUnauthorized, "invalid_client")
		return
	}
	f := r.PostForm
	iss.mu.Lock()
	var g *grant
	switch f.Get("grant_type") {
	case "authorization_code":
		g = iss.codes[f.Get("code")]
		delete(iss.codes, f.Get("code")) // single use
		sum := sha256.Sum256([]byte(f.Get("code_verifier")))
		if g != nil && (g.client != client || g.redirect != f.Get("redirect_uri") ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge || g.resource != f.Get("resource")) {
			g = nil
		}
	case "refresh_token":
		g = iss.refresh[f.Get("refresh_token")]
		delete(iss.refresh, f.Get("refresh_token")) // rotated
		if g != nil && (g.client != client || (f.Get("resource") != "" && f.Get("resource") != g.resource)) {
			g = nil
		}
	}
	fc := iss.flow
	key := iss.current["RS"]
	iss.mu.Unlock()
	if g == nil {
		tokenError(w, http.StatusBadRequest, "invalid_grant")
		return
	}
	if fc.Subject == "" {
		fc.Subject = "alice"
	}
	if fc.AccessTTL == 0 {
		fc.AccessTTL = time.Hour
	}
	now := time.Now()
	claims := jwt.MapClaims{"iss": iss.URL, "sub": fc.Subject, "aud": g.resource, "client_id": client,
		"jti": randomID(), "iat": now.Unix(), "exp": now.Add(fc.AccessTTL).Unix()}
	if g.scope != "" {
		claims["scope"] = g.scope
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = key.ID
	access, err := tok.SignedString(key.private)
	if err != nil {
		tokenError(w, http.StatusInternalServerError, "server_error")
		return
	}
	refresh := fmt.Sprintf("refresh-%d-%s", iss.n.Add(1), randomID())
	iss.mu.Lock()
	iss.refresh[refresh] = g
	iss.mu.Unlock()
	w.Header().Set("Cache-Control", "no-store")
	resp := map[string]any{"access_token": access, "token_type": "Bearer",
		"expires_in": int64(fc.AccessTTL / time.Second), "refresh_token": refresh}
	if g.scope != "" {
		resp["scope"] = g.scope
	}
	writeJSON(w, resp)
}

func (iss *Issuer) serveRegister(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		AuthMethod   string   `json:"token_endpoint_auth_method"`
		ClientName   string   `json:"client_name"`
		AppType      string   `json:"application_type"`
		GrantTypes   []string `json:"grant_types"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		tokenError(w, http.StatusBadRequest, "invalid_client_metadata")
		return
	}
	for _, u := range req.RedirectURIs {
		if !loopbackRedirect(u, nil) {
			tokenError(w, http.StatusBadRequest, "invalid_redirect_uri")
			return
		}
	}
	if req.AuthMethod == "" {
		req.AuthMethod = "client_secret_basic"
	}
	iss.record("/register", url.Values{"client_name": {req.ClientName}, "token_endpoint_auth_method": {req.AuthMethod},
		"application_type": {req.AppType}, "grant_types": {strings.Join(req.GrantTypes, " ")}})
	id := fmt.Sprintf("client-%d", iss.n.Add(1))
	c := &registered{method: req.AuthMethod, redirect: req.RedirectURIs}
	resp := map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs, "token_endpoint_auth_method": req.AuthMethod}
	if req.AuthMethod != "none" {
		c.secret = randomID()
		resp["client_secret"] = c.secret
	}
	iss.mu.Lock()
	iss.clients[id] = c
	iss.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(resp)
}

// Approve plays the user's browser against an authorization server that
// approves without asking (this one, or the conformance suite's): it
// requests authURL and follows the redirects (at most 10) to the client's
// loopback listener. It fits oauthclient.Options.OpenURL.
func Approve(ctx context.Context, authURL string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, authURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.Body.Close()
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}
