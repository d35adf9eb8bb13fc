package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Key lookup errors, which the verifier turns into categories.
var (
	errUnknownKey = errors.New("oauth: no key with this ID")
	errKeysFailed = errors.New("oauth: signing keys are not available")
)

// keySet caches the keys of one JWKS URL. Keys older than maxAge are
// stale: a lookup still returns a stale key at once, and starts one
// refresh in the background. A lookup of an unknown key ID waits for a
// fetch (joining the one in flight, if any). Fetches run one at a time,
// each bounded by the fetch timeout and MaxResponseBytes. After a
// successful fetch the next waits at least minRefresh; after a failed one
// (or one that timed out) retry spaces the next, from one second up to
// five, so that keys are fetched soon after the issuer is back. When a
// fetch fails the old keys keep serving, and a key ID that is not among
// them cannot be checked until a fetch succeeds (errKeysFailed).
type keySet struct {
	url        string
	client     *http.Client
	timeout    time.Duration
	maxAge     time.Duration
	minRefresh time.Duration
	maxKeys    int
	now        func() time.Time
	onFailure  func(error)
	fetches    *flights[struct{}, struct{}] // at most one fetch in flight
	retry      *backoff                     // spaces the fetches after a failure

	mu          sync.Mutex
	keys        map[string]jwk // by kid; "" for a key without one
	fetched     time.Time      // when keys were fetched; zero: never
	lastAttempt time.Time      // when the last fetch started; zero: never
}

// jwk is one usable key of a set.
type jwk struct {
	key crypto.PublicKey
	kty string // RSA, EC or OKP
	alg string // the key's "alg", or ""
	crv string // EC and OKP curve
}

// lookup returns the key for kid. A stale key is returned at once, with a
// refresh started in the background if the refresh rate allows; an
// unknown kid waits for a fetch, or for ctx to end.
func (ks *keySet) lookup(ctx context.Context, kid string) (jwk, error) {
	k, ok, fresh := ks.cached(kid)
	if ok {
		if !fresh {
			ks.refresh() // the stale key serves meanwhile
		}
		return k, nil
	}
	f, err := ks.refresh()
	if err != nil {
		return jwk{}, fmt.Errorf("%w: %w", errKeysFailed, err)
	}
	if f == nil { // no fetch may start yet
		return jwk{}, ks.missing()
	}
	if _, err := f.wait(ctx); err != nil {
		return jwk{}, fmt.Errorf("%w: %w", errKeysFailed, err)
	}
	if k, ok, _ := ks.cached(kid); ok {
		return k, nil
	}
	return jwk{}, errUnknownKey
}

// refresh returns the fetch in flight, or starts one if the refresh rate
// allows; nil and no error if it does not. The fetch does not depend on
// any caller's context: it serves every lookup until it ends.
func (ks *keySet) refresh() (*flight[struct{}], error) {
	return ks.fetches.do(struct{}{}, ks.mayFetch, func(ctx context.Context) (struct{}, error) {
		err := ks.fetch(ctx)
		if err != nil {
			ks.retry.failed(ks.now())
			ks.onFailure(err)
		} else {
			ks.retry.succeeded()
		}
		return struct{}{}, err
	})
}

// cached returns the key for kid, whether it is known, and whether the set
// is younger than maxAge.
func (ks *keySet) cached(kid string) (jwk, bool, bool) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	k, ok := ks.keys[kid]
	fresh := !ks.fetched.IsZero() && ks.now().Sub(ks.fetched) < ks.maxAge
	return k, ok, fresh
}

// mayFetch reports whether a fetch may start now, and if so records it:
// after a failed fetch once the backoff has passed, else minRefresh after
// the last one.
func (ks *keySet) mayFetch() bool {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	now := ks.now()
	if wait, failing := ks.retry.wait(now); failing {
		if wait > 0 {
			return false
		}
	} else if !ks.lastAttempt.IsZero() && now.Sub(ks.lastAttempt) < ks.minRefresh {
		return false
	}
	ks.lastAttempt = now
	return true
}

// missing is the error for a key ID that is not known when no fetch may
// start: unknown if the last fetch succeeded, else unavailable.
func (ks *keySet) missing() error {
	if _, failing := ks.retry.wait(ks.now()); failing {
		return errKeysFailed
	}
	ks.mu.Lock()
	defer ks.mu.Unlock()
	if ks.fetched.IsZero() {
		return errKeysFailed
	}
	return errUnknownKey
}

// retryAfter is how long a client refused with errKeysFailed should wait
// before it asks again: until the next fetch may start, at least a second.
func (ks *keySet) retryAfter() time.Duration {
	wait, _ := ks.retry.wait(ks.now())
	return max(wait, time.Second)
}

// fetch replaces the cached keys with the set at ks.url.
func (ks *keySet) fetch(ctx context.Context) error {
	var doc struct {
		Keys []json.RawMessage `json:"keys"`
	}
	if err := getJSON(ctx, ks.client, ks.timeout, ks.url, &doc); err != nil {
		return fmt.Errorf("fetch JWKS: %w", err)
	}
	keys := make(map[string]jwk)
	for _, raw := range doc.Keys {
		kid, k, ok := parseJWK(raw)
		if !ok {
			continue // an unusable or unsupported key is skipped, as RFC 7517 §5 allows
		}
		if _, dup := keys[kid]; dup {
			continue
		}
		if len(keys) == ks.maxKeys {
			break
		}
		keys[kid] = k
	}
	if len(keys) == 0 {
		return errors.New("fetch JWKS: no usable signing key")
	}
	ks.mu.Lock()
	ks.keys, ks.fetched = keys, ks.now()
	ks.mu.Unlock()
	return nil
}

// parseJWK returns the key ID and public key of a JWK usable for
// signatures: RSA (at least 2048 bits), EC on P-256, P-384 or P-521, or
// OKP Ed25519. Private members are ignored.
func parseJWK(raw json.RawMessage) (string, jwk, bool) {
	var j struct {
		Kty string `json:"kty"`
		Kid string `json:"kid"`
		Use string `json:"use"`
		Alg string `json:"alg"`
		N   string `json:"n"`
		E   string `json:"e"`
		Crv string `json:"crv"`
		X   string `json:"x"`
		Y   string `json:"y"`
	}
	if json.Unmarshal(raw, &j) != nil || (j.Use != "" && j.Use != "sig") {
		return "", jwk{}, false
	}
	k := jwk{kty: j.Kty, alg: j.Alg, crv: j.Crv}
	switch j.Kty {
	case "RSA":
		n, err1 := b64int(j.N)
		e, err2 := b64int(j.E)
		if err1 != nil || err2 != nil || n.BitLen() < 2048 || !e.IsInt64() || e.Int64() < 3 || e.Int64() > 1<<31-1 {
			return "", jwk{}, false
		}
		k.key = &rsa.PublicKey{N: n, E: int(e.Int64())}
	case "EC":
		var curve elliptic.Curve
		switch j.Crv {
		case "P-256":
			curve = elliptic.P256()
		case "P-384":
			curve = elliptic.P384()
		case "P-521":
			curve = elliptic.P521()
		default:
			return "", jwk{}, false
		}
		x, err1 := base64.RawURLEncoding.DecodeString(j.X)
		y, err2 := base64.RawURLEncoding.DecodeString(j.Y)
		size := (curve.Params().BitSize + 7) / 8
		if err1 != nil || err2 != nil || len(x) != size || len(y) != size {
			return "", jwk{}, false
		}
		point := append(append([]byte{4}, x...), y...)
		pub, err := ecdsa.ParseUncompressedPublicKey(curve, point)
		if err != nil {
			return "", jwk{}, false
		}
		k.key = pub
	case "OKP":
		x, err := base64.RawURLEncoding.DecodeString(j.X)
		if j.Crv != "Ed25519" || err != nil || len(x) != ed25519.PublicKeySize {
			return "", jwk{}, false
		}
		k.key = ed25519.PublicKey(x)
	default:
		return "", jwk{}, false
	}
	return j.Kid, k, true
}

// b64int decodes a base64url big-endian unsigned integer.
func b64int(s string) (*big.Int, error) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) == 0 {
		return nil, errors.New("bad integer")
	}
	return new(big.Int).SetBytes(b), nil
}

// fits reports whether key k may verify a token signed with alg: the key
// type must be the algorithm's, and a key that names its algorithm only
// that one.
func (k jwk) fits(alg string) bool {
	if k.alg != "" && k.alg != alg {
		return false
	}
	switch {
	case strings.HasPrefix(alg, "RS"), strings.HasPrefix(alg, "PS"):
		return k.kty == "RSA"
	case alg == "ES256":
		return k.kty == "EC" && k.crv == "P-256"
	case alg == "ES384":
		return k.kty == "EC" && k.crv == "P-384"
	case alg == "ES512":
		return k.kty == "EC" && k.crv == "P-521"
	case alg == "EdDSA":
		return k.kty == "OKP"
	}
	return false
}

// getJSON GETs url within timeout and decodes a JSON body of at most
// MaxResponseBytes into v.
func getJSON(ctx context.Context, client *http.Client, timeout time.Duration, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	return doJSON(client, req, v)
}

// doJSON sends req and decodes a 200 response's JSON body of at most
// MaxResponseBytes into v.
func doJSON(client *http.Client, req *http.Request, v any) error {
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %d", req.Method, req.URL.Redacted(), resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	if len(body) > MaxResponseBytes {
		return fmt.Errorf("%s %s: response larger than %d bytes", req.Method, req.URL.Redacted(), MaxResponseBytes)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("%s %s: %w", req.Method, req.URL.Redacted(), err)
	}
	return nil
}

// isLoopbackHost reports whether host is localhost or a loopback IP.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
