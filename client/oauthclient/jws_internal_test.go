package oauthclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"testing"

	"github.com/golang-jwt/jwt/v5"
)

// TestSignJWT: the standard-library JWS of every supported key type
// verifies with a JWT library, with the right alg and kid.
func TestSignJWT(t *testing.T) {
	p256, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p521, _ := ecdsa.GenerateKey(elliptic.P521(), rand.Reader)
	rk, _ := rsa.GenerateKey(rand.Reader, 2048)
	_, ek, _ := ed25519.GenerateKey(rand.Reader)
	for _, tc := range []struct {
		key crypto.Signer
		alg string
	}{{p256, "ES256"}, {p384, "ES384"}, {p521, "ES512"}, {rk, "RS256"}, {ek, "EdDSA"}} {
		s, err := signJWT(tc.key, "k1", map[string]any{"sub": "c"})
		if err != nil {
			t.Fatalf("%s: %v", tc.alg, err)
		}
		tok, err := jwt.Parse(s, func(*jwt.Token) (any, error) { return tc.key.Public(), nil },
			jwt.WithValidMethods([]string{tc.alg}))
		if err != nil {
			t.Errorf("%s: does not verify: %v", tc.alg, err)
			continue
		}
		if tok.Header["kid"] != "k1" || tok.Claims.(jwt.MapClaims)["sub"] != "c" {
			t.Errorf("%s: header %v, claims %v", tc.alg, tok.Header, tok.Claims)
		}
	}
	small, _ := rsa.GenerateKey(rand.Reader, 1024)
	if _, err := signJWT(small, "", nil); err == nil {
		t.Error("a 1024-bit RSA key was accepted")
	}
}
