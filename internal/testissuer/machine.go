package testissuer

import (
	"crypto"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// The machine grants at /token: client_credentials for a client with a
// secret (client_secret_basic or _post) or a public key (private_key_jwt,
// RFC 7523 §2.2), and the RFC 7523 JWT bearer grant for an assertion signed
// by a trusted workload issuer. Both sign access tokens like the code flow,
// with the request's resource as audience, and issue no refresh token.

const (
	grantClientCredentials = "client_credentials"
	grantJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	clientAssertionType    = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
)

// RegisterKeyClient pre-registers a client that authenticates with a JWT
// signed by the private half of pub (private_key_jwt).
func (iss *Issuer) RegisterKeyClient(id string, pub crypto.PublicKey) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.clients[id] = &registered{method: "private_key_jwt", key: pub}
}

// TrustAssertions makes the JWT bearer grant accept assertions whose iss
// is issuer, signed by pub, with this issuer's URL as audience.
func (iss *Issuer) TrustAssertions(issuer string, pub crypto.PublicKey) {
	iss.mu.Lock()
	defer iss.mu.Unlock()
	iss.trusted[issuer] = pub
}

// verifyJWT checks s's signature with pub (any asymmetric algorithm golang-jwt
// knows), its exp, and that its audience is this issuer.
func (iss *Issuer) verifyJWT(s string, pub crypto.PublicKey) (jwt.MapClaims, bool) {
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(s, claims, func(*jwt.Token) (any, error) { return pub, nil },
		jwt.WithValidMethods([]string{"RS256", "PS256", "ES256", "ES384", "ES512", "EdDSA"}),
		jwt.WithAudience(iss.URL), jwt.WithExpirationRequired(), jwt.WithLeeway(5*time.Second))
	return claims, err == nil
}

// machineClient authenticates a machine grant's client: a client
// assertion for a key client, otherwise as clientOf does; a request with
// no client at all is the public workload of a JWT bearer grant.
func (iss *Issuer) machineClient(r *http.Request) (string, bool) {
	f := r.PostForm
	if f.Get("client_assertion_type") == "" {
		if _, _, basic := r.BasicAuth(); !basic && f.Get("client_id") == "" {
			return "", f.Get("grant_type") == grantJWTBearer
		}
		return iss.clientOf(r)
	}
	if f.Get("client_assertion_type") != clientAssertionType {
		return "", false
	}
	iss.mu.Lock()
	c := iss.clients[f.Get("client_id")]
	iss.mu.Unlock()
	if c == nil || c.key == nil {
		return "", false
	}
	claims, ok := iss.verifyJWT(f.Get("client_assertion"), c.key)
	id := f.Get("client_id")
	return id, ok && claims["iss"] == id && claims["sub"] == id
}

// serveMachine answers a machine grant's token request and reports
// whether it was one.
func (iss *Issuer) serveMachine(w http.ResponseWriter, r *http.Request) bool {
	gt := r.PostForm.Get("grant_type")
	if gt != grantClientCredentials && gt != grantJWTBearer {
		return false
	}
	client, ok := iss.machineClient(r)
	if !ok || (gt == grantClientCredentials && client == "") {
		tokenError(w, http.StatusUnauthorized, "invalid_client")
		return true
	}
	subject := client
	if gt == grantJWTBearer {
		s := r.PostForm.Get("assertion")
		p := jwt.NewParser()
		unverified := jwt.MapClaims{}
		_, _, err := p.ParseUnverified(s, unverified)
		issuer, _ := unverified["iss"].(string)
		iss.mu.Lock()
		pub := iss.trusted[issuer]
		iss.mu.Unlock()
		claims, ok := jwt.MapClaims(nil), false
		if err == nil && pub != nil {
			claims, ok = iss.verifyJWT(s, pub)
		}
		if !ok {
			tokenError(w, http.StatusBadRequest, "invalid_grant")
			return true
		}
		subject, _ = claims["sub"].(string)
	}
	iss.issueMachineToken(w, r, client, subject)
	return true
}

func (iss *Issuer) issueMachineToken(w http.ResponseWriter, r *http.Request, client, subject string) {
	iss.mu.Lock()
	fc := iss.flow
	key := iss.current["RS"]
	iss.mu.Unlock()
	if fc.AccessTTL == 0 {
		fc.AccessTTL = time.Hour
	}
	now := time.Now()
	resource, scope := r.PostForm.Get("resource"), r.PostForm.Get("scope")
	claims := jwt.MapClaims{"iss": iss.URL, "sub": subject, "aud": resource,
		"jti": randomID(), "iat": now.Unix(), "exp": now.Add(fc.AccessTTL).Unix()}
	if client != "" {
		claims["client_id"] = client
	}
	if scope != "" {
		claims["scope"] = scope
	}
	tokenType := "Bearer"
	if jkt, ok := proofThumbprint(r.Header.Get("DPoP")); ok && fc.DPoP {
		claims["cnf"] = map[string]any{"jkt": jkt}
		tokenType = "DPoP"
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = key.ID
	access, err := tok.SignedString(key.private)
	if err != nil {
		tokenError(w, http.StatusInternalServerError, "server_error")
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	resp := map[string]any{"access_token": access, "token_type": tokenType, "expires_in": int64(fc.AccessTTL / time.Second)}
	if scope != "" {
		resp["scope"] = scope
	}
	writeJSON(w, resp)
}

// machineMetadata adds the machine grants to the metadata md.
func machineMetadata(md map[string]any) {
	md["grant_types_supported"] = append(slices.Clone(md["grant_types_supported"].([]string)),
		grantClientCredentials, grantJWTBearer)
	md["token_endpoint_auth_methods_supported"] = append(slices.Clone(md["token_endpoint_auth_methods_supported"].([]string)),
		"private_key_jwt")
	md["token_endpoint_auth_signing_alg_values_supported"] = []string{"RS256", "PS256", "ES256", "ES384", "ES512", "EdDSA"}
}

// proofThumbprint returns the RFC 7638 thumbprint of the EC P-256 jwk in
// the protected header of the DPoP proof, which it does not verify.
func proofThumbprint(proof string) (string, bool) {
	head, _, ok := strings.Cut(proof, ".")
	if !ok {
		return "", false
	}
	raw, err := base64.RawURLEncoding.DecodeString(head)
	if err != nil {
		return "", false
	}
	var h struct {
		JWK struct {
			Crv string `json:"crv"`
			Kty string `json:"kty"`
			X   string `json:"x"`
			Y   string `json:"y"`
		} `json:"jwk"`
	}
	if json.Unmarshal(raw, &h) != nil || h.JWK.Kty != "EC" || h.JWK.X == "" || h.JWK.Y == "" {
		return "", false
	}
	members := `{"crv":"` + h.JWK.Crv + `","kty":"EC","x":"` + h.JWK.X + `","y":"` + h.JWK.Y + `"}`
	sum := sha256.Sum256([]byte(members))
	return base64.RawURLEncoding.EncodeToString(sum[:]), true
}
