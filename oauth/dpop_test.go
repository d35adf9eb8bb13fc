package oauth_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

// holder is a DPoP key pair of a test client.
type holder struct {
	key *ecdsa.PrivateKey
	jwk map[string]any
	jkt string
}

func newHolder(t testing.TB) *holder {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b64 := base64.RawURLEncoding.EncodeToString
	x, y := k.PublicKey.X.FillBytes(make([]byte, 32)), k.PublicKey.Y.FillBytes(make([]byte, 32))
	h := &holder{key: k, jwk: map[string]any{"kty": "EC", "crv": "P-256", "x": b64(x), "y": b64(y)}}
	sum := sha256.Sum256([]byte(fmt.Sprintf(`{"crv":"P-256","kty":"EC","x":"%s","y":"%s"}`, b64(x), b64(y))))
	h.jkt = b64(sum[:])
	return h
}

var jtis int

// proof is a DPoP proof by h for a request, with claims changed by mutate
// (a nil value deletes a claim) and its header by header.
func (h *holder) proof(t testing.TB, method, htu, token string, at time.Time, mutate map[string]any, header map[string]any) string {
	t.Helper()
	sum := sha256.Sum256([]byte(token))
	jtis++
	c := jwt.MapClaims{"jti": fmt.Sprintf("jti-%d", jtis), "htm": method, "htu": htu, "iat": at.Unix(),
		"ath": base64.RawURLEncoding.EncodeToString(sum[:])}
	for k, v := range mutate {
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodES256, c)
	tok.Header["typ"] = "dpop+jwt"
	tok.Header["jwk"] = h.jwk
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(h.key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// dpopOutcome is what a test sees of a DPoP admission.
type dpopOutcome struct {
	Status     int
	Challenges []string
	Reason     string
	Nonce      string
}

// admitHTTP admits a POST /mcp on host 127.0.0.1:1 with the given
// Authorization and DPoP values.
func (r *rig) admitHTTP(t *testing.T, auth string, proofs ...string) dpopOutcome {
	t.Helper()
	h := http.Header{}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	for _, p := range proofs {
		h.Add("DPoP", p)
	}
	r.log.Reset()
	_, err := r.rs.Admit(context.Background(), &server.AdmissionRequest{
		Endpoint: "test", Method: mcp.MethodToolsList, Header: h, HTTPMethod: http.MethodPost, Host: "127.0.0.1:1", Path: "/mcp",
	})
	o := dpopOutcome{Status: http.StatusOK}
	if err != nil {
		var rej *server.Rejection
		if !errors.As(err, &rej) {
			t.Fatalf("Admit: %v, want a *server.Rejection", err)
		}
		o.Status, o.Challenges, o.Nonce = rej.Status, rej.Header.Values("WWW-Authenticate"), rej.Header.Get("DPoP-Nonce")
	}
	if _, after, ok := strings.Cut(r.log.String(), "reason="); ok {
		o.Reason, _, _ = strings.Cut(after, "\n")
	}
	return o
}

const (
	prm   = `resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"`
	algs  = `algs="ES256 ES384 ES512 PS256 RS256 EdDSA"`
	offer = `DPoP ` + prm + `, ` + algs
)

func badProof(reason string) dpopOutcome {
	return dpopOutcome{http.StatusUnauthorized, []string{`DPoP error="invalid_dpop_proof", ` + prm + `, ` + algs, `Bearer ` + prm}, reason, ""}
}

func badDPoPToken(reason string) dpopOutcome {
	return dpopOutcome{http.StatusUnauthorized, []string{`DPoP error="invalid_token", ` + prm + `, ` + algs, `Bearer ` + prm}, reason, ""}
}

// TestDPoPProofs checks the proof checks of RFC 9449 §4.3 and §7.1, and
// the binding of the token to the proof's key, where DPoP is allowed.
func TestDPoPProofs(t *testing.T) {
	r := newRig(t, nil)
	now := r.clock.Now()
	alice, mallory := newHolder(t), newHolder(t)
	bound := func(jkt string) string {
		c := r.iss.Claims("alice", resource, now)
		c["cnf"] = map[string]any{"jkt": jkt}
		return r.iss.Token(t, c)
	}
	tok := bound(alice.jkt)
	unbound := r.iss.Token(t, r.iss.Claims("alice", resource, now))
	proof := func(mutate map[string]any) string {
		return alice.proof(t, "POST", resource, tok, now, mutate, nil)
	}
	withHeader := func(header map[string]any) string {
		return alice.proof(t, "POST", resource, tok, now, nil, header)
	}
	replayed := proof(nil)
	ok := dpopOutcome{Status: http.StatusOK}
	// A proof signed by mallory's key but carrying alice's.
	forged := func() string {
		p := mallory.proof(t, "POST", resource, tok, now, nil, map[string]any{"jwk": alice.jwk})
		return p
	}()
	for _, tc := range []struct {
		name   string
		auth   string
		proofs []string
		want   dpopOutcome
	}{
		{"valid", "DPoP " + tok, []string{replayed}, ok},
		{"replayed", "DPoP " + tok, []string{replayed}, badProof("dpop_replay")},
		{"scheme in lower case, htu with query, default-port and case variations",
			"dpop " + tok, []string{proof(map[string]any{"htu": "HTTP://127.0.0.1:1/mcp?x=1#f"})}, ok},
		{"another URL", "DPoP " + tok, []string{proof(map[string]any{"htu": "http://127.0.0.1:1/other"})}, badProof("dpop_wrong_target")},
		{"another host", "DPoP " + tok, []string{proof(map[string]any{"htu": "http://127.0.0.2:1/mcp"})}, badProof("dpop_wrong_target")},
		{"another scheme", "DPoP " + tok, []string{proof(map[string]any{"htu": "https://127.0.0.1:1/mcp"})}, badProof("dpop_wrong_target")},
		{"another method", "DPoP " + tok, []string{proof(map[string]any{"htm": "GET"})}, badProof("dpop_wrong_target")},
		{"no htu", "DPoP " + tok, []string{proof(map[string]any{"htu": nil})}, badProof("dpop_wrong_target")},
		{"stale iat", "DPoP " + tok, []string{proof(map[string]any{"iat": now.Add(-oauth.DefaultDPoPMaxProofAge - time.Second).Unix()})}, badProof("dpop_stale")},
		{"iat ahead beyond the leeway", "DPoP " + tok, []string{proof(map[string]any{"iat": now.Add(time.Minute).Unix()})}, badProof("dpop_stale")},
		{"iat ahead within the leeway", "DPoP " + tok, []string{proof(map[string]any{"iat": now.Add(20 * time.Second).Unix()})}, ok},
		{"no iat", "DPoP " + tok, []string{proof(map[string]any{"iat": nil})}, badProof("dpop_malformed")},
		{"no jti", "DPoP " + tok, []string{proof(map[string]any{"jti": nil})}, badProof("dpop_malformed")},
		{"jti too long", "DPoP " + tok, []string{proof(map[string]any{"jti": strings.Repeat("j", 257)})}, badProof("dpop_malformed")},
		{"ath of another token", "DPoP " + tok, []string{proof(map[string]any{"ath": "AAAA"})}, badProof("dpop_bad_ath")},
		{"no ath", "DPoP " + tok, []string{proof(map[string]any{"ath": nil})}, badProof("dpop_bad_ath")},
		{"typ JWT", "DPoP " + tok, []string{withHeader(map[string]any{"typ": "JWT"})}, badProof("dpop_malformed")},
		{"no jwk", "DPoP " + tok, []string{withHeader(map[string]any{"jwk": nil})}, badProof("dpop_malformed")},
		{"private key in the jwk", "DPoP " + tok, []string{withHeader(map[string]any{"jwk": withMember(alice.jwk, "d", "AAAA")})}, badProof("dpop_malformed")},
		{"crit", "DPoP " + tok, []string{withHeader(map[string]any{"crit": []string{"x"}})}, badProof("dpop_malformed")},
		{"signed by another key", "DPoP " + tok, []string{forged}, badProof("dpop_bad_signature")},
		{"alg none", "DPoP " + tok, []string{unsignedProof(t, alice)}, badProof("dpop_malformed")},
		{"not a JWT", "DPoP " + tok, []string{"a.b"}, badProof("dpop_malformed")},
		{"oversized proof", "DPoP " + tok, []string{strings.Repeat("A", oauth.DefaultDPoPMaxProofBytes+1)}, badProof("dpop_oversized")},
		{"no proof", "DPoP " + tok, nil, badProof("dpop_missing")},
		{"two proofs", "DPoP " + tok, []string{proof(nil), proof(nil)}, badProof("dpop_missing")},
		{"token bound to another key", "DPoP " + bound(mallory.jkt), []string{alice.proof(t, "POST", resource, bound(mallory.jkt), now, nil, nil)}, badDPoPToken("dpop_key_mismatch")},
		{"unbound token with a proof", "DPoP " + unbound, []string{alice.proof(t, "POST", resource, unbound, now, nil, nil)}, badDPoPToken("dpop_unbound")},
		{"invalid token with a good proof", "DPoP " + tok + "x", []string{alice.proof(t, "POST", resource, tok+"x", now, nil, nil)}, badDPoPToken("malformed")},
		{"bound token as a bearer token", "Bearer " + tok, nil,
			dpopOutcome{http.StatusUnauthorized, []string{`Bearer error="invalid_token", ` + prm, offer}, "dpop_unproven", ""}},
		{"bound token as a bearer token, with a proof", "Bearer " + tok, []string{proof(nil)},
			dpopOutcome{http.StatusUnauthorized, []string{`Bearer error="invalid_token", ` + prm, offer}, "dpop_unproven", ""}},
		{"unbound bearer token", "Bearer " + unbound, nil, ok},
		{"no token", "", nil, dpopOutcome{http.StatusUnauthorized, []string{`Bearer ` + prm, offer}, "missing", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := r.admitHTTP(t, tc.auth, tc.proofs...)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nlog: %s", diff, r.log)
			}
			if strings.Contains(r.log.String(), tok[len(tok)-8:]) || strings.Contains(r.log.String(), "alice") {
				t.Errorf("the log holds the token or the subject: %s", r.log)
			}
		})
	}
}

func withMember(m map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for k, v := range m {
		out[k] = v
	}
	return out
}

func unsignedProof(t *testing.T, h *holder) string {
	tok := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"jti": "x", "htm": "POST", "htu": resource, "iat": time.Now().Unix()})
	tok.Header["typ"] = "dpop+jwt"
	tok.Header["jwk"] = h.jwk
	s, err := tok.SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDPoPModes checks DPoPRequired, which refuses bearer tokens, and
// DPoPOff, which refuses the DPoP scheme and still refuses a bound token
// presented as a bearer token.
func TestDPoPModes(t *testing.T) {
	alice := newHolder(t)
	for _, tc := range []struct {
		mode            oauth.DPoPMode
		bearer, dpop    dpopOutcome
		bound, noToken  dpopOutcome
		metadataDPoPAlg bool
	}{
		{
			mode:    oauth.DPoPRequired,
			bearer:  dpopOutcome{http.StatusUnauthorized, []string{`DPoP error="invalid_token", ` + prm + `, ` + algs}, "dpop_required", ""},
			dpop:    dpopOutcome{Status: http.StatusOK},
			bound:   dpopOutcome{http.StatusUnauthorized, []string{`DPoP error="invalid_token", ` + prm + `, ` + algs}, "dpop_required", ""},
			noToken: dpopOutcome{http.StatusUnauthorized, []string{offer}, "missing", ""},
		},
		{
			mode:    oauth.DPoPOff,
			bearer:  dpopOutcome{Status: http.StatusOK},
			dpop:    dpopOutcome{http.StatusUnauthorized, []string{`Bearer error="invalid_token", ` + prm}, "dpop_off", ""},
			bound:   dpopOutcome{http.StatusUnauthorized, []string{`Bearer error="invalid_token", ` + prm}, "dpop_unproven", ""},
			noToken: dpopOutcome{http.StatusUnauthorized, []string{`Bearer ` + prm}, "missing", ""},
		},
	} {
		t.Run(string(tc.mode), func(t *testing.T) {
			r := newRig(t, func(o *oauth.Options) { o.DPoP.Mode = tc.mode })
			now := r.clock.Now()
			c := r.iss.Claims("alice", resource, now)
			unbound := r.iss.Token(t, c)
			c["cnf"] = map[string]any{"jkt": alice.jkt}
			tok := r.iss.Token(t, c)
			for _, step := range []struct {
				name   string
				auth   string
				proofs []string
				want   dpopOutcome
			}{
				{"bearer", "Bearer " + unbound, nil, tc.bearer},
				{"dpop", "DPoP " + tok, []string{alice.proof(t, "POST", resource, tok, now, nil, nil)}, tc.dpop},
				{"bound as bearer", "Bearer " + tok, nil, tc.bound},
				{"no token", "", nil, tc.noToken},
			} {
				if diff := cmp.Diff(step.want, r.admitHTTP(t, step.auth, step.proofs...)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", step.name, diff)
				}
			}
		})
	}
}

// TestDPoPNonce checks server-provided nonces: a proof without one is
// answered with use_dpop_nonce and a nonce, which the next proof carries;
// a nonce two lifetimes old is refused again with a new one.
func TestDPoPNonce(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) { o.DPoP.RequireNonce = true; o.DPoP.NonceLifetime = time.Minute })
	alice := newHolder(t)
	now := r.clock.Now()
	c := r.iss.Claims("alice", resource, now.Add(time.Hour))
	c["cnf"] = map[string]any{"jkt": alice.jkt}
	tok := r.iss.Token(t, c)
	proof := func(nonce any) string {
		return alice.proof(t, "POST", resource, tok, r.clock.Now(), map[string]any{"nonce": nonce}, nil)
	}
	useNonce := []string{`DPoP error="use_dpop_nonce", ` + prm + `, ` + algs, `Bearer ` + prm}

	first := r.admitHTTP(t, "DPoP "+tok, proof(nil))
	if diff := cmp.Diff(dpopOutcome{http.StatusUnauthorized, useNonce, "dpop_nonce", first.Nonce}, first); diff != "" || first.Nonce == "" {
		t.Fatalf("without a nonce (-want +got):\n%s", diff)
	}
	if got := r.admitHTTP(t, "DPoP "+tok, proof("made-up")); got.Reason != "dpop_nonce" || got.Nonce != first.Nonce {
		t.Errorf("with a made-up nonce: %+v", got)
	}
	if got := r.admitHTTP(t, "DPoP "+tok, proof(first.Nonce)); got.Status != http.StatusOK {
		t.Errorf("with the nonce: %+v", got)
	}
	r.clock.Advance(time.Minute) // the next period: the nonce before is still good
	if got := r.admitHTTP(t, "DPoP "+tok, proof(first.Nonce)); got.Status != http.StatusOK {
		t.Errorf("with the nonce a period later: %+v", got)
	}
	r.clock.Advance(time.Minute)
	stale := r.admitHTTP(t, "DPoP "+tok, proof(first.Nonce))
	if stale.Reason != "dpop_nonce" || stale.Nonce == "" || stale.Nonce == first.Nonce {
		t.Errorf("with a nonce two periods old: %+v, first nonce %q", stale, first.Nonce)
	}
	if got := r.admitHTTP(t, "DPoP "+tok, proof(stale.Nonce)); got.Status != http.StatusOK {
		t.Errorf("with the new nonce: %+v", got)
	}
}

// TestDPoPReplayCacheBounds checks that the replay cache never forgets a
// proof while it could be accepted: full, it refuses new proofs with 503,
// and it takes new ones again once the old ones are too old anyway.
func TestDPoPReplayCacheBounds(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) { o.DPoP.ReplayCacheSize = 2 })
	alice := newHolder(t)
	c := r.iss.Claims("alice", resource, r.clock.Now().Add(time.Hour))
	c["cnf"] = map[string]any{"jkt": alice.jkt}
	tok := r.iss.Token(t, c)
	proof := func() string { return alice.proof(t, "POST", resource, tok, r.clock.Now(), nil, nil) }
	first := proof()
	for i, p := range []string{first, proof()} {
		if got := r.admitHTTP(t, "DPoP "+tok, p); got.Status != http.StatusOK {
			t.Fatalf("proof %d: %+v", i, got)
		}
	}
	if got := r.admitHTTP(t, "DPoP "+tok, proof()); got.Status != http.StatusServiceUnavailable || got.Reason != "dpop_busy" {
		t.Errorf("a third proof in a full cache: %+v", got)
	}
	if got := r.admitHTTP(t, "DPoP "+tok, first); got.Reason != "dpop_replay" {
		t.Errorf("the first proof again: %+v", got)
	}
	r.clock.Advance(oauth.DefaultDPoPMaxProofAge + oauth.DefaultLeeway)
	if got := r.admitHTTP(t, "DPoP "+tok, first); got.Reason != "dpop_stale" {
		t.Errorf("the first proof once it is too old: %+v", got)
	}
	if got := r.admitHTTP(t, "DPoP "+tok, proof()); got.Status != http.StatusOK {
		t.Errorf("a new proof once the old ones expired: %+v", got)
	}
}

// TestDPoPIntrospection checks a DPoP-bound opaque token: the binding is
// the introspection answer's cnf.jkt, and it holds for a cached answer.
func TestDPoPIntrospection(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) {
		o.JWKSURL = ""
		o.Introspection = &oauth.Introspection{URL: o.Issuer + "/introspect", ClientID: "resource", ClientSecret: "resource-secret"}
	})
	alice, mallory := newHolder(t), newHolder(t)
	now := r.clock.Now()
	tok := r.iss.Opaque(map[string]any{"sub": "alice", "aud": resource, "iss": r.iss.URL, "exp": now.Add(time.Hour).Unix(),
		"cnf": map[string]any{"jkt": alice.jkt}})
	for i, tc := range []struct {
		auth   string
		proofs []string
		want   dpopOutcome
	}{
		{"DPoP " + tok, []string{alice.proof(t, "POST", resource, tok, now, nil, nil)}, dpopOutcome{Status: http.StatusOK}},
		{"DPoP " + tok, []string{mallory.proof(t, "POST", resource, tok, now, nil, nil)}, badDPoPToken("dpop_key_mismatch")},
		{"Bearer " + tok, nil, dpopOutcome{http.StatusUnauthorized, []string{`Bearer error="invalid_token", ` + prm, offer}, "dpop_unproven", ""}},
	} {
		if diff := cmp.Diff(tc.want, r.admitHTTP(t, tc.auth, tc.proofs...)); diff != "" {
			t.Errorf("step %d (-want +got):\n%s", i, diff)
		}
	}
}

// TestDPoPOverHTTP checks DPoP through the server's whole pipeline, which
// hands the request's method, host and path to the resource server: the
// nonce challenge, the nonce on a success, and a scope refusal in the
// DPoP scheme.
func TestDPoPOverHTTP(t *testing.T) {
	iss := testissuer.New(t)
	base, _ := serveProtectedWith(t, iss, func(o *oauth.Options) { o.DPoP.RequireNonce = true })
	hc := &http.Client{Timeout: 10 * time.Second}
	alice := newHolder(t)
	c := iss.Claims("alice", base+"/mcp", time.Now())
	c["cnf"] = map[string]any{"jkt": alice.jkt}
	tok := iss.Token(t, c)
	call := func(tool, nonce string) *mcptest.Response {
		t.Helper()
		mc := mcptest.NewClient(mcptest.Remote(base, hc), "/mcp")
		mutate := map[string]any{"nonce": nonce}
		if nonce == "" {
			mutate = nil
		}
		mc.Header = http.Header{"Authorization": {"DPoP " + tok}, "Dpop": {alice.proof(t, "POST", base+"/mcp", tok, time.Now(), mutate, nil)}}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		res, err := mc.CallTool(ctx, tool, map[string]any{"text": "hi"})
		if err != nil {
			t.Fatalf("tools/call %s: %v", tool, err)
		}
		return res
	}
	prm := base + "/.well-known/oauth-protected-resource/mcp"
	first := call("echo", "")
	nonce := first.Header.Get("DPoP-Nonce")
	if want := `DPoP error="use_dpop_nonce", resource_metadata="` + prm + `", ` + algs; first.Status != http.StatusUnauthorized ||
		first.Header.Get("WWW-Authenticate") != want || nonce == "" {
		t.Fatalf("without a nonce: HTTP %d %q nonce %q, want 401 %q", first.Status, first.Header.Get("WWW-Authenticate"), nonce, want)
	}
	if res := call("echo", nonce); res.Status != http.StatusOK || res.Error != nil || res.Header.Get("DPoP-Nonce") != nonce {
		t.Errorf("with the nonce: HTTP %d nonce %q %s", res.Status, res.Header.Get("DPoP-Nonce"), res.Body)
	}
	want := `DPoP error="insufficient_scope", scope="secret", resource_metadata="` + prm + `", ` + algs
	if res := call("secret", nonce); res.Status != http.StatusForbidden || res.Header.Get("WWW-Authenticate") != want {
		t.Errorf("without the scope: HTTP %d %q, want 403 %q", res.Status, res.Header.Get("WWW-Authenticate"), want)
	}
}
