package oauthclient

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	_ "crypto/sha256" // SHA-256 for ES256 and RS256
	_ "crypto/sha512" // SHA-384 and SHA-512 for ES384 and ES512
	"encoding/asn1"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
)

// The compact JWS signing of the JWTs this package makes (client
// assertions), with the standard library only: the client does not
// depend on a JWT library.

// jwsAlg is the JWS algorithm (RFC 7518 §3.1, RFC 8037) for key, and the
// hash it signs.
func jwsAlg(key crypto.Signer) (string, crypto.Hash, error) {
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		switch k.Curve {
		case elliptic.P256():
			return "ES256", crypto.SHA256, nil
		case elliptic.P384():
			return "ES384", crypto.SHA384, nil
		case elliptic.P521():
			return "ES512", crypto.SHA512, nil
		}
	case *rsa.PrivateKey:
		if k.N.BitLen() >= 2048 {
			return "RS256", crypto.SHA256, nil
		}
		return "", 0, errors.New("oauthclient: ClientKey: an RSA key needs at least 2048 bits")
	case ed25519.PrivateKey:
		return "EdDSA", 0, nil
	}
	return "", 0, fmt.Errorf("oauthclient: ClientKey: unsupported key type %T (want an ECDSA P-256/384/521, RSA or Ed25519 private key)", key)
}

// signJWT returns the compact JWS of claims signed by key, with kid in
// the header when it is not empty.
func signJWT(key crypto.Signer, kid string, claims map[string]any) (string, error) {
	alg, _, err := jwsAlg(key)
	if err != nil {
		return "", err
	}
	header := map[string]any{"alg": alg, "typ": "JWT"}
	if kid != "" {
		header["kid"] = kid
	}
	h, err := json.Marshal(header)
	if err != nil {
		return "", err
	}
	return signCompact(key, base64.RawURLEncoding.EncodeToString(h), claims)
}

// signCompact returns the compact JWS of claims under the protected
// header already encoded (base64url), signed by key with the algorithm
// jwsAlg gives it, which the header must name: the one signer of the JWTs
// and DPoP proofs this package makes.
func signCompact(key crypto.Signer, header string, claims map[string]any) (string, error) {
	_, hash, err := jwsAlg(key)
	if err != nil {
		return "", err
	}
	c, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	input := header + "." + base64.RawURLEncoding.EncodeToString(c)
	var sig []byte
	if hash == 0 { // Ed25519 signs the message itself
		sig, err = key.Sign(rand.Reader, []byte(input), crypto.Hash(0))
	} else {
		d := hash.New()
		d.Write([]byte(input))
		sig, err = key.Sign(rand.Reader, d.Sum(nil), hash)
	}
	if err != nil {
		return "", fmt.Errorf("oauthclient: sign: %w", err)
	}
	if ek, ok := key.(*ecdsa.PrivateKey); ok {
		if sig, err = ecdsaRaw(sig, (ek.Curve.Params().BitSize+7)/8); err != nil {
			return "", err
		}
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig), nil
}

// ecdsaRaw turns an ASN.1 ECDSA signature into JWS's R || S, each size
// bytes (RFC 7518 §3.4).
func ecdsaRaw(der []byte, size int) ([]byte, error) {
	var rs struct{ R, S *big.Int }
	if err := unmarshalASN1(der, &rs); err != nil {
		return nil, fmt.Errorf("oauthclient: ECDSA signature: %w", err)
	}
	out := make([]byte, 2*size)
	rs.R.FillBytes(out[:size])
	rs.S.FillBytes(out[size:])
	return out, nil
}

func unmarshalASN1(der []byte, v any) error {
	rest, err := asn1.Unmarshal(der, v)
	if err == nil && len(rest) > 0 {
		err = errors.New("trailing data")
	}
	return err
}
