package oauthclient

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
)

// DPoPMode says when an Authorizer asks for DPoP-bound access tokens (RFC
// 9449): tokens bound to a key of the client, which are worthless to
// whoever steals them without the key.
type DPoPMode int

const (
	// DPoPWhenSupported (the default) asks for a DPoP-bound token when the
	// authorization server's metadata lists ES256 in
	// dpop_signing_alg_values_supported, and a bearer token otherwise.
	DPoPWhenSupported DPoPMode = iota
	// DPoPNever always asks for bearer tokens.
	DPoPNever
	// DPoPAlways asks only for DPoP-bound tokens: a flow with an
	// authorization server that does not advertise ES256 fails.
	DPoPAlways
)

// TokenTypeDPoP is Record.TokenType for a DPoP-bound token.
const TokenTypeDPoP = "DPoP"

// maxNonceOrigins bounds the server-provided DPoP nonces remembered, one
// per origin (an authorization server, the MCP server).
const maxNonceOrigins = 16

// maxNonceBytes bounds a DPoP-Nonce header kept.
const maxNonceBytes = 512

// ErrNoDPoP: Options.DPoP is DPoPAlways and the authorization server does
// not advertise DPoP with ES256.
var ErrNoDPoP = errors.New("oauthclient: the authorization server does not advertise DPoP with ES256 (dpop_signing_alg_values_supported)")

// dpopKey is an ES256 key that signs DPoP proofs.
type dpopKey struct {
	priv   *ecdsa.PrivateKey
	header []byte // the proof's protected header, base64url
	jkt    string // the RFC 7638 thumbprint of the public key
}

func newDPoPKey(priv *ecdsa.PrivateKey) (*dpopKey, error) {
	pub, err := priv.PublicKey.ECDH()
	if err != nil || priv.Curve != elliptic.P256() {
		return nil, errors.New("oauthclient: a DPoP key must be an ECDSA P-256 key")
	}
	point := pub.Bytes() // 0x04 || x || y
	b64 := base64.RawURLEncoding.EncodeToString
	x, y := b64(point[1:33]), b64(point[33:])
	// RFC 7638: the required members, in lexicographic order, no spaces.
	jwk := `{"crv":"P-256","kty":"EC","x":"` + x + `","y":"` + y + `"}`
	sum := sha256.Sum256([]byte(jwk))
	header := `{"typ":"dpop+jwt","alg":"ES256","jwk":` + jwk + `}`
	return &dpopKey{priv: priv, header: []byte(b64([]byte(header))), jkt: b64(sum[:])}, nil
}

// proof signs a DPoP proof (RFC 9449 §4.2) for a request: a fresh jti,
// the method, the URL without query and fragment, iat now, and, when not
// empty, ath the hash of the access token and the server's nonce.
func (k *dpopKey) proof(method string, u *url.URL, token, nonce string, now time.Time) (string, error) {
	htu := *u
	htu.RawQuery, htu.ForceQuery, htu.Fragment, htu.RawFragment, htu.User = "", false, "", "", nil
	claims := map[string]any{"jti": randomString(), "htm": method, "htu": htu.String(), "iat": now.Unix()}
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		claims["ath"] = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if nonce != "" {
		claims["nonce"] = nonce
	}
	proof, err := signCompact(k.priv, string(k.header), claims)
	if err != nil {
		return "", fmt.Errorf("oauthclient: sign a DPoP proof: %w", err)
	}
	return proof, nil
}

// dpopState is an Authorizer's DPoP key in use and the nonces servers
// gave it, by origin.
type dpopState struct {
	mu     sync.Mutex
	key    *dpopKey // the key of the current record, parsed once
	nonces map[string]string
}

func origin(u *url.URL) string { return strings.ToLower(u.Scheme + "://" + u.Host) }

// nonce returns the last nonce the server at u's origin gave.
func (d *dpopState) nonce(u *url.URL) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.nonces[origin(u)]
}

// noteNonce keeps the DPoP-Nonce of resp, if any, for its origin.
func (d *dpopState) noteNonce(u *url.URL, resp *http.Response) {
	n := resp.Header.Get("DPoP-Nonce")
	if n == "" || len(n) > maxNonceBytes {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nonces == nil || len(d.nonces) >= maxNonceOrigins {
		d.nonces = make(map[string]string)
	}
	d.nonces[origin(u)] = n
}

// dpopKeyFor returns the key for a new token from asm: nil for a bearer
// token. It is Options.DPoPKey, else a new key, which the record keeps.
func (a *Authorizer) dpopKeyFor(asm *serverMetadata) (*dpopKey, error) {
	supported := slices.Contains(asm.DPoPSigningAlgValuesSupported, "ES256")
	switch {
	case a.opts.DPoP == DPoPNever || a.opts.DPoP == DPoPWhenSupported && !supported:
		return nil, nil
	case !supported:
		return nil, ErrNoDPoP
	}
	priv := a.opts.DPoPKey
	if priv == nil {
		var err error
		if priv, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
			return nil, fmt.Errorf("oauthclient: generate a DPoP key: %w", err)
		}
	}
	return newDPoPKey(priv)
}

// bindRecord records in rec the key its token was requested with, when the
// authorization server bound the token to it (token_type DPoP). A key of
// the Authorizer's own is kept in the record (PKCS #8), since the token is
// worthless without it; Options.DPoPKey is not, only its thumbprint.
func (a *Authorizer) bindRecord(rec *Record, key *dpopKey, tokenType string) error {
	rec.DPoPKey, rec.DPoPThumbprint = "", ""
	switch {
	case !strings.EqualFold(tokenType, TokenTypeDPoP):
		return nil
	case key == nil:
		return errors.New("oauthclient: the token response is for DPoP, which was not asked for")
	}
	rec.TokenType, rec.DPoPThumbprint = TokenTypeDPoP, key.jkt
	if key.priv != a.opts.DPoPKey {
		der, err := x509.MarshalPKCS8PrivateKey(key.priv)
		if err != nil {
			return fmt.Errorf("oauthclient: keep the DPoP key: %w", err)
		}
		rec.DPoPKey = base64.StdEncoding.EncodeToString(der)
	}
	a.dpop.mu.Lock()
	a.dpop.key = key
	a.dpop.mu.Unlock()
	return nil
}

// recordKey returns the key rec's DPoP-bound token is bound to.
func (a *Authorizer) recordKey(rec *Record) (*dpopKey, error) {
	a.dpop.mu.Lock()
	defer a.dpop.mu.Unlock()
	if k := a.dpop.key; k != nil && k.jkt == rec.DPoPThumbprint {
		return k, nil
	}
	var priv *ecdsa.PrivateKey
	if rec.DPoPKey != "" {
		der, err := base64.StdEncoding.DecodeString(rec.DPoPKey)
		if err != nil {
			return nil, errors.New("oauthclient: the stored DPoP key is not base64")
		}
		k, err := x509.ParsePKCS8PrivateKey(der)
		if priv, _ = k.(*ecdsa.PrivateKey); err != nil || priv == nil {
			return nil, errors.New("oauthclient: the stored DPoP key is not an ECDSA key")
		}
	} else if priv = a.opts.DPoPKey; priv == nil {
		return nil, errors.New("oauthclient: the token is bound to a DPoP key that is not configured")
	}
	k, err := newDPoPKey(priv)
	if err != nil {
		return nil, err
	}
	if k.jkt != rec.DPoPThumbprint {
		return nil, errors.New("oauthclient: the token is bound to another DPoP key")
	}
	a.dpop.key = k
	return k, nil
}

// sendDPoP sends req with rec's DPoP-bound token and a fresh proof, with
// the nonce the server gave last; a 401 with error="use_dpop_nonce" and a
// new nonce is sent once more with it, when the body can be replayed.
func (a *Authorizer) sendDPoP(req *http.Request, rec *Record) (*http.Response, error) {
	key, err := a.recordKey(rec)
	if err != nil {
		return nil, err
	}
	for attempt := 0; ; attempt++ {
		out := req.Clone(req.Context())
		if attempt > 0 {
			if out.Body, err = req.GetBody(); err != nil {
				return nil, fmt.Errorf("oauthclient: replay request body: %w", err)
			}
		}
		p, err := key.proof(req.Method, req.URL, rec.AccessToken, a.dpop.nonce(req.URL), a.opts.Now())
		if err != nil {
			return nil, err
		}
		out.Header.Set("Authorization", TokenTypeDPoP+" "+rec.AccessToken)
		out.Header.Set("DPoP", p)
		resp, err := a.base.RoundTrip(out)
		if err != nil {
			return nil, err
		}
		a.dpop.noteNonce(req.URL, resp)
		if attempt > 0 || !wantsNonce(resp) || !replayable(req) {
			return resp, nil
		}
		drain(resp)
	}
}

// wantsNonce reports a 401 whose DPoP challenge says use_dpop_nonce, with
// a nonce to use.
func wantsNonce(resp *http.Response) bool {
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("DPoP-Nonce") == "" {
		return false
	}
	for _, h := range resp.Header.Values("WWW-Authenticate") {
		if ch, ok := challengeOf(h, TokenTypeDPoP); ok && ch.Error == "use_dpop_nonce" {
			return true
		}
	}
	return false
}

func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// dpopContextKey carries the DPoP key of a token request in its context.
type dpopContextKey struct{}

func withDPoPKey(ctx context.Context, key *dpopKey) context.Context {
	if key == nil {
		return ctx
	}
	return context.WithValue(ctx, dpopContextKey{}, key)
}

// tokenClient is the client for a token request: a.hc, and with a DPoP key
// in ctx a.hc whose requests carry a proof (RFC 9449 §5) and are sent once
// more on a use_dpop_nonce error with the nonce (§8).
func (a *Authorizer) tokenClient(ctx context.Context) *http.Client {
	key, _ := ctx.Value(dpopContextKey{}).(*dpopKey)
	if key == nil {
		return a.hc
	}
	hc := *a.hc
	hc.Transport = &dpopTokenTransport{a: a, key: key, base: a.hc.Transport}
	return &hc
}

type dpopTokenTransport struct {
	a    *Authorizer
	key  *dpopKey
	base http.RoundTripper // nil: http.DefaultTransport
}

func (t *dpopTokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	for attempt := 0; ; attempt++ {
		out := req.Clone(req.Context())
		if attempt > 0 {
			var err error
			if out.Body, err = req.GetBody(); err != nil {
				return nil, fmt.Errorf("oauthclient: replay token request: %w", err)
			}
		}
		p, err := t.key.proof(req.Method, req.URL, "", t.a.dpop.nonce(req.URL), t.a.opts.Now())
		if err != nil {
			return nil, err
		}
		out.Header.Set("DPoP", p)
		resp, err := base.RoundTrip(out)
		if err != nil || resp.StatusCode != http.StatusBadRequest {
			if err == nil {
				t.a.dpop.noteNonce(req.URL, resp)
			}
			return resp, err
		}
		t.a.dpop.noteNonce(req.URL, resp)
		// RFC 9449 §8: a 400 with error use_dpop_nonce and a nonce.
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<10))
		resp.Body.Close()
		var oe struct {
			Error string `json:"error"`
		}
		if attempt > 0 || resp.Header.Get("DPoP-Nonce") == "" || json.Unmarshal(body, &oe) != nil ||
			oe.Error != "use_dpop_nonce" || !replayable(req) {
			resp.Body = io.NopCloser(bytes.NewReader(body))
			return resp, nil
		}
	}
}
