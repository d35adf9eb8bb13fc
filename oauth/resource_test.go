package oauth_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

// admit runs the resource server for a request with the given
// Authorization values.
func (r *rig) admit(method, tool string, auth ...string) (server.Identity, error) {
	h := http.Header{}
	for _, a := range auth {
		h.Add("Authorization", a)
	}
	return r.rs.Admit(context.Background(), &server.AdmissionRequest{Endpoint: "test", Method: method, Tool: tool, Header: h})
}

// outcome is what a test sees of an admission: the HTTP status (200 for
// admitted), the challenge, the logged reason and the Retry-After.
type outcome struct {
	Status     int
	Challenge  string
	Reason     string
	RetryAfter string
}

func (r *rig) outcome(t *testing.T, id server.Identity, err error) outcome {
	t.Helper()
	o := outcome{Status: http.StatusOK}
	if err != nil {
		var rej *server.Rejection
		if !errors.As(err, &rej) {
			t.Fatalf("Admit: %v, want a *server.Rejection", err)
		}
		o.Status, o.Challenge, o.RetryAfter = rej.Status, rej.Header.Get("WWW-Authenticate"), rej.Header.Get("Retry-After")
		code := int64(mcp.CodeInvalidRequest)
		if rej.Status == http.StatusServiceUnavailable {
			code = mcp.CodeInternalError
		}
		if rej.Err == nil || rej.Err.Code != code {
			t.Errorf("rejection error = %+v", rej.Err)
		}
	} else if id.Principal == "" {
		t.Errorf("admitted without a principal: %+v", id)
	}
	logged := r.log.String()
	if _, after, ok := strings.Cut(logged, "reason="); ok {
		o.Reason, _, _ = strings.Cut(after, "\n")
	}
	return o
}

func TestTokens(t *testing.T) {
	r := newRig(t, nil)
	now := r.clock.Now()
	iss := r.iss
	valid := func() jwt.MapClaims { return iss.Claims("alice", resource, now) }
	with := func(k string, v any) jwt.MapClaims {
		c := valid()
		if v == nil {
			delete(c, k)
		} else {
			c[k] = v
		}
		return c
	}
	rsa := iss.Current("RS256")
	unpublished := iss.NewKey(t, "RS256")
	unsigned, err := jwt.NewWithClaims(jwt.SigningMethodNone, valid()).SignedString(jwt.UnsafeAllowNoneSignatureType)
	if err != nil {
		t.Fatal(err)
	}
	// "alg":"none" with the kid of a published key and an empty signature.
	noneWithKid := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"none","typ":"JWT","kid":"`+rsa.ID+`"}`)) +
		unsigned[strings.Index(unsigned, "."):]
	validTok := iss.Token(t, valid())
	// crit names extensions the recipient must understand; none is.
	withCrit := func(crit any) string {
		h := map[string]any{"crit": crit}
		if crit, ok := crit.([]string); ok && len(crit) == 1 && crit[0] == "exp-ext" {
			h["exp-ext"] = true
		}
		return iss.SignWithHeader(t, rsa, "RS256", h, valid())
	}
	tampered := validTok[:strings.LastIndex(validTok, ".")+1] + strings.Repeat("A", 342)

	const (
		fresh   = `Bearer resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"`
		invalid = `Bearer error="invalid_token", resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"`
	)
	refused := func(reason string) outcome { return outcome{http.StatusUnauthorized, invalid, reason, ""} }
	for _, tc := range []struct {
		name string
		auth []string
		want outcome
	}{
		{"valid RS256", []string{"Bearer " + validTok}, outcome{Status: http.StatusOK}},
		{"valid ES256", []string{"Bearer " + iss.SignWith(t, iss.Current("ES256"), "ES256", valid())}, outcome{Status: http.StatusOK}},
		{"valid EdDSA", []string{"Bearer " + iss.SignWith(t, iss.Current("EdDSA"), "EdDSA", valid())}, outcome{Status: http.StatusOK}},
		{"valid PS256", []string{"Bearer " + iss.SignWith(t, rsa, "PS256", valid())}, outcome{Status: http.StatusOK}},
		{"lower-case scheme", []string{"bearer " + validTok}, outcome{Status: http.StatusOK}},
		{"audience in a list", []string{"Bearer " + iss.Token(t, with("aud", []string{"other", resource}))}, outcome{Status: http.StatusOK}},
		{"expired within the leeway", []string{"Bearer " + iss.Token(t, with("exp", now.Add(-20*time.Second).Unix()))}, outcome{Status: http.StatusOK}},

		{"no header", nil, outcome{http.StatusUnauthorized, fresh, "missing", ""}},
		{"expired", []string{"Bearer " + iss.Token(t, with("exp", now.Add(-time.Minute).Unix()))}, refused("expired")},
		{"no exp", []string{"Bearer " + iss.Token(t, with("exp", nil))}, refused("expired")},
		{"not yet valid", []string{"Bearer " + iss.Token(t, with("nbf", now.Add(time.Minute).Unix()))}, refused("not_yet_valid")},
		{"wrong issuer", []string{"Bearer " + iss.Token(t, with("iss", iss.URL+"/"))}, refused("bad_issuer")},
		{"no issuer", []string{"Bearer " + iss.Token(t, with("iss", nil))}, refused("bad_issuer")},
		{"wrong audience", []string{"Bearer " + iss.Token(t, with("aud", "http://127.0.0.1:1/other"))}, refused("bad_audience")},
		{"no audience", []string{"Bearer " + iss.Token(t, with("aud", nil))}, refused("bad_audience")},
		{"no subject", []string{"Bearer " + iss.Token(t, with("sub", nil))}, refused("bad_subject")},
		{"subject with a control character", []string{"Bearer " + iss.Token(t, with("sub", "a\x00b"))}, refused("bad_subject")},
		{"alg none", []string{"Bearer " + unsigned}, refused("bad_algorithm")},
		{"alg none with a kid", []string{"Bearer " + noneWithKid}, refused("bad_algorithm")},
		{"HS256 keyed with the public key", []string{"Bearer " + testissuer.SignHMAC(t, rsa.PublicPEM(t), rsa.ID, valid())}, refused("bad_algorithm")},
		{"RS256 kid on an EC key", []string{"Bearer " + iss.SignWith(t, rsa.Relabeled(iss.Current("ES256").ID), "RS256", valid())}, refused("bad_algorithm")},
		{"crit names an unknown extension", []string{"Bearer " + withCrit([]string{"exp-ext"})}, refused("bad_header")},
		{"crit is empty", []string{"Bearer " + withCrit([]string{})}, refused("bad_header")},
		{"crit lists a standard header", []string{"Bearer " + withCrit([]string{"alg"})}, refused("bad_header")},
		{"crit is not a list", []string{"Bearer " + withCrit("exp-ext")}, refused("bad_header")},
		{"unknown kid", []string{"Bearer " + iss.SignWith(t, unpublished, "RS256", valid())}, refused("unknown_key")},
		{"bad signature", []string{"Bearer " + tampered}, refused("bad_signature")},
		{"garbage", []string{"Bearer not-a-token"}, refused("malformed")},
		{"garbage JWT shape", []string{"Bearer a.b.c"}, refused("malformed")},
		{"not token68", []string{"Bearer a b"}, refused("malformed")},
		{"other scheme", []string{"Basic YWxpY2U6c2VjcmV0"}, refused("malformed")},
		{"empty token", []string{"Bearer "}, refused("malformed")},
		{"two headers", []string{"Bearer " + validTok, "Bearer " + validTok}, refused("malformed")},
		{"oversized", []string{"Bearer " + strings.Repeat("A", oauth.DefaultMaxTokenBytes+1)}, refused("oversized")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.log.Reset()
			id, err := r.admit(mcp.MethodToolsList, "", tc.auth...)
			got := r.outcome(t, id, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nlog: %s", diff, r.log)
			}
			for _, a := range tc.auth {
				tok := strings.TrimSpace(a[strings.IndexByte(a, ' ')+1:])
				if len(tok) >= 8 && strings.Contains(r.log.String(), tok[len(tok)-8:]) {
					t.Errorf("the log holds token bytes: %s", r.log)
				}
			}
			if strings.Contains(r.log.String(), "alice") {
				t.Errorf("the log holds the subject: %s", r.log)
			}
		})
	}
}

// TestHMACOnlyWithASecret checks that HS256 tokens are accepted only with
// an explicitly configured shared secret, and then only with that secret.
func TestHMACOnlyWithASecret(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	r := newRig(t, func(o *oauth.Options) { o.HMACSecret = secret })
	c := r.iss.Claims("alice", resource, r.clock.Now())
	if _, err := r.admit(mcp.MethodToolsList, "", "Bearer "+testissuer.SignHMAC(t, secret, "", c)); err != nil {
		t.Errorf("HS256 with the secret: %v", err)
	}
	rsa := r.iss.Current("RS256")
	id, err := r.admit(mcp.MethodToolsList, "", "Bearer "+testissuer.SignHMAC(t, rsa.PublicPEM(t), rsa.ID, c))
	if got := r.outcome(t, id, err); got.Status != http.StatusUnauthorized || got.Reason != "bad_signature" {
		t.Errorf("HS256 keyed with the public key: %+v", got)
	}
}

func TestIdentity(t *testing.T) {
	for _, tc := range []struct {
		name        string
		tenantClaim string
		extra       jwt.MapClaims
		want        func(iss string) server.Identity
		reason      string
	}{
		{"principal is issuer#subject", "", nil, func(iss string) server.Identity {
			return server.Identity{Principal: iss + "#alice", Tenant: iss + "#alice", RateKey: iss + "#alice"}
		}, ""},
		{"tenant from a claim", "org", jwt.MapClaims{"org": "acme"}, func(iss string) server.Identity {
			return server.Identity{Principal: iss + "#alice", Tenant: "acme", RateKey: iss + "#alice"}
		}, ""},
		{"tenant claim missing", "org", nil, nil, "bad_tenant"},
		{"tenant claim not a string", "org", jwt.MapClaims{"org": 7}, nil, "bad_tenant"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(o *oauth.Options) { o.TenantClaim = tc.tenantClaim })
			c := r.iss.Claims("alice", resource, r.clock.Now())
			for k, v := range tc.extra {
				c[k] = v
			}
			id, err := r.admit(mcp.MethodToolsList, "", "Bearer "+r.iss.Token(t, c))
			if tc.want == nil {
				if got := r.outcome(t, id, err); got.Status != http.StatusUnauthorized || got.Reason != tc.reason {
					t.Errorf("outcome %+v, want 401 %s", got, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if diff := cmp.Diff(tc.want(r.iss.URL), id); diff != "" {
				t.Errorf("identity (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeyRotation checks that an unknown kid makes the resource server
// fetch the JWKS again, at most once per MinRefreshInterval, so that a
// rotated key is accepted without a restart and random kids cannot make it
// hammer the issuer.
func TestKeyRotation(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) { o.MinRefreshInterval = 30 * time.Second })
	admitted := func(k *testissuer.Key) bool {
		_, err := r.admit(mcp.MethodToolsList, "", "Bearer "+r.iss.SignWith(t, k, "RS256", r.iss.Claims("alice", resource, r.clock.Now())))
		return err == nil
	}
	old := r.iss.Current("RS256")
	if !admitted(old) {
		t.Fatal("the current key is refused")
	}
	if got := r.iss.JWKSFetches(); got != 1 {
		t.Fatalf("JWKS fetched %d times for the first token, want 1", got)
	}
	next := r.iss.Rotate(t, "RS256")
	r.iss.Withdraw(old)
	if admitted(next) {
		t.Error("a new kid was accepted without a fetch")
	}
	for range 5 {
		admitted(r.iss.NewKey(t, "RS256")) // unknown kids within the interval
	}
	if got := r.iss.JWKSFetches(); got != 1 {
		t.Errorf("JWKS fetched %d times within MinRefreshInterval, want 1", got)
	}
	r.clock.Advance(31 * time.Second)
	if !admitted(next) {
		t.Fatalf("the rotated key is refused after the interval; log: %s", r.log)
	}
	if got := r.iss.JWKSFetches(); got != 2 {
		t.Errorf("JWKS fetched %d times, want 2", got)
	}
	if admitted(old) {
		t.Error("a withdrawn key is still accepted after a refresh")
	}
}

// TestKeysUnavailable checks that an unreachable JWKS answers tokens with
// 503 and Retry-After (keys_unavailable), not invalid_token, which would
// tell the client to discard a token that may be good.
func TestKeysUnavailable(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) { o.JWKSURL = "http://127.0.0.1:1/jwks"; o.FetchTimeout = 2 * time.Second })
	id, err := r.admit(mcp.MethodToolsList, "", "Bearer "+r.iss.Token(t, r.iss.Claims("alice", resource, r.clock.Now())))
	want := outcome{Status: http.StatusServiceUnavailable, Reason: "keys_unavailable", RetryAfter: "1"}
	if diff := cmp.Diff(want, r.outcome(t, id, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
	if _, err := r.rs.Verify(context.Background(), "Bearer "+r.iss.Token(t, r.iss.Claims("alice", resource, r.clock.Now()))); !errors.Is(err, oauth.ErrUnavailable) {
		t.Errorf("Verify: %v, want ErrUnavailable", err)
	}
}

// TestKeysRecoverAfterOutage checks that a first JWKS fetch that fails, or
// hangs, does not poison the key set: tokens get 503 with Retry-After
// meanwhile, the next fetch is tried once the short backoff has passed
// (1 s, then 2 s, then 4 s, whatever MinRefreshInterval), requests within
// the backoff do not reach the issuer, and once the issuer answers again
// the next request is admitted.
func TestKeysRecoverAfterOutage(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) {
		o.MinRefreshInterval = 30 * time.Second
		o.FetchTimeout = 200 * time.Millisecond // how long the hung fetch takes to fail
	})
	tok := "Bearer " + r.iss.Token(t, r.iss.Claims("alice", resource, r.clock.Now()))
	step := func(name string, ctx context.Context, want outcome, fetches int64) {
		t.Helper()
		r.log.Reset()
		h := http.Header{"Authorization": {tok}}
		id, err := r.rs.Admit(ctx, &server.AdmissionRequest{Method: mcp.MethodToolsList, Header: h})
		got := r.outcome(t, id, err)
		if want.Status == http.StatusOK {
			got.Reason = "" // an admission logs nothing
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: outcome (-want +got):\n%s\nlog: %s", name, diff, r.log)
		}
		if got := r.iss.JWKSFetches(); got != fetches {
			t.Errorf("%s: %d JWKS fetches, want %d", name, got, fetches)
		}
	}
	down := func(retry string) outcome {
		return outcome{Status: http.StatusServiceUnavailable, Reason: "keys_unavailable", RetryAfter: retry}
	}
	bg := context.Background()

	r.iss.FailJWKS(http.StatusInternalServerError)
	step("first fetch fails", bg, down("1"), 1)
	step("within the backoff", bg, down("1"), 1)
	r.clock.Advance(time.Second)
	step("second fetch fails", bg, down("2"), 2)
	r.clock.Advance(time.Second)
	step("within the longer backoff", bg, down("1"), 2)

	r.iss.FailJWKS(0)
	arrived, release := r.iss.HoldJWKS(t)
	r.clock.Advance(time.Second)
	step("third fetch hangs until FetchTimeout", bg, down("4"), 3)
	select {
	case <-arrived:
	case <-time.After(10 * time.Second): // a failure bound, not synchronisation
		t.Fatal("no fetch reached the JWKS endpoint")
	}
	release()

	r.clock.Advance(4 * time.Second)
	step("the issuer is back", bg, outcome{Status: http.StatusOK}, 4)
	step("keys cached", bg, outcome{Status: http.StatusOK}, 4)
}

func TestScopes(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) {
		o.MethodScopes = map[string][]string{mcp.MethodToolsCall: {"mcp:call"}, mcp.MethodTasksCancel: {"tasks:write"}}
		o.ToolScopes = map[string][]string{"reports": {"reports:write", "mcp:call"}}
	})
	const prm = `resource_metadata="http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp"`
	for _, tc := range []struct {
		name         string
		method, tool string
		scope        any // the token's claim; string: "scope", []any: "scp"
		want         outcome
	}{
		{"no scopes needed", mcp.MethodToolsList, "", nil, outcome{Status: 200}},
		{"method scope", mcp.MethodToolsCall, "echo", "mcp:call", outcome{Status: 200}},
		{"method and tool scopes", mcp.MethodToolsCall, "reports", "mcp:call reports:write", outcome{Status: 200}},
		{"scp array", mcp.MethodToolsCall, "reports", []any{"reports:write", "mcp:call"}, outcome{Status: 200}},
		{"no scope claim", mcp.MethodToolsCall, "echo", nil,
			outcome{403, `Bearer error="insufficient_scope", scope="mcp:call", ` + prm, "insufficient_scope", ""}},
		{"tool scope missing", mcp.MethodToolsCall, "reports", "mcp:call",
			outcome{403, `Bearer error="insufficient_scope", scope="mcp:call reports:write", ` + prm, "insufficient_scope", ""}},
		{"prefix is not a match", mcp.MethodTasksCancel, "", "tasks",
			outcome{403, `Bearer error="insufficient_scope", scope="tasks:write", ` + prm, "insufficient_scope", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.log.Reset()
			c := r.iss.Claims("alice", resource, r.clock.Now())
			switch s := tc.scope.(type) {
			case string:
				c["scope"] = s
			case []any:
				c["scp"] = s
			}
			id, err := r.admit(tc.method, tc.tool, "Bearer "+r.iss.Token(t, c))
			if diff := cmp.Diff(tc.want, r.outcome(t, id, err)); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
	// A request without a token is told the scopes it needs.
	_, err := r.admit(mcp.MethodToolsCall, "reports")
	var rej *server.Rejection
	if !errors.As(err, &rej) || rej.Header.Get("WWW-Authenticate") != `Bearer scope="mcp:call reports:write", `+prm {
		t.Errorf("challenge without a token: %v", err)
	}
	if diff := cmp.Diff([]string{"mcp:call", "reports:write"}, r.rs.RequiredScopes(mcp.MethodToolsCall, "reports")); diff != "" {
		t.Errorf("RequiredScopes (-want +got):\n%s", diff)
	}
}

func TestOptionsValidation(t *testing.T) {
	base := func() oauth.Options {
		return oauth.Options{Resource: "https://mcp.example.com/mcp", Issuer: "https://id.example.com", JWKSURL: "https://id.example.com/jwks"}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*oauth.Options)
		want   string
	}{
		{"no resource", func(o *oauth.Options) { o.Resource = "" }, "Resource: required"},
		{"http resource off loopback", func(o *oauth.Options) { o.Resource = "http://mcp.example.com/mcp" }, "must be https"},
		{"resource with a fragment", func(o *oauth.Options) { o.Resource = "https://mcp.example.com/mcp#x" }, "fragment"},
		{"no issuer", func(o *oauth.Options) { o.Issuer = "" }, "Issuer: required"},
		{"issuer with #", func(o *oauth.Options) { o.Issuer = "https://id.example.com/#a" }, "fragment"},
		{"no keys", func(o *oauth.Options) { o.JWKSURL = "" }, "JWKSURL is required"},
		{"none", func(o *oauth.Options) { o.Algorithms = []string{"none"} }, `"none" is not supported`},
		{"HS256 without a secret", func(o *oauth.Options) { o.Algorithms = []string{"HS256"} }, "HS256 needs HMACSecret"},
		{"short secret", func(o *oauth.Options) { o.HMACSecret = []byte("short") }, "at least 32 bytes"},
		{"leeway too large", func(o *oauth.Options) { o.Leeway = time.Hour }, "Leeway"},
		{"bad scope", func(o *oauth.Options) { o.ToolScopes = map[string][]string{"t": {"a b"}} }, "not a valid scope"},
		{"introspection without client", func(o *oauth.Options) {
			o.Introspection = &oauth.Introspection{URL: "https://id.example.com/introspect"}
		}, "ClientID is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			tc.mutate(&o)
			_, err := oauth.New(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New = %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := oauth.New(base()); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// TestFetchOutlivesTheCaller checks that a JWKS fetch is not aborted by
// the context of the request that started it: that request gives up, but
// the fetch goes on and serves the next request (an aborted fetch would
// block fetches for MinRefreshInterval).
func TestFetchOutlivesTheCaller(t *testing.T) {
	r := newRig(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	h := http.Header{"Authorization": {"Bearer " + r.iss.Token(t, r.iss.Claims("alice", resource, r.clock.Now()))}}
	r.rs.Admit(ctx, &server.AdmissionRequest{Method: mcp.MethodToolsList, Header: h}) // may give up at once
	if _, err := r.rs.Admit(context.Background(), &server.AdmissionRequest{Method: mcp.MethodToolsList, Header: h}); err != nil {
		t.Errorf("Admit after a cancelled caller: %v; log: %s", err, r.log)
	}
	if got := r.iss.JWKSFetches(); got != 1 {
		t.Errorf("JWKS fetched %d times, want 1", got)
	}
}

// TestStaleKeysServeDuringRefresh checks that once the keys are older than
// KeysMaxAge, requests with a known kid are admitted at once with the
// stale keys while one refresh runs in the background (here against a
// JWKS endpoint that hangs), that only a request with an unknown kid
// waits for it, and that Close ends the refresh.
func TestStaleKeysServeDuringRefresh(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) {
		o.KeysMaxAge = time.Minute
		o.FetchTimeout = time.Minute // longer than any bound below
	})
	known := "Bearer " + r.iss.Token(t, r.iss.Claims("alice", resource, r.clock.Now()))
	if _, err := r.admit(mcp.MethodToolsList, "", known); err != nil {
		t.Fatalf("first token: %v", err)
	}
	arrived, release := r.iss.HoldJWKS(t)
	next := r.iss.Rotate(t, "RS256")
	r.clock.Advance(2 * time.Minute) // the keys are stale; a refresh is due

	admitPromptly := func(what string) {
		t.Helper()
		done := make(chan error, 1)
		go func() {
			_, err := r.admit(mcp.MethodToolsList, "", known)
			done <- err
		}()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s: %v; log: %s", what, err, r.log)
			}
		case <-time.After(10 * time.Second): // a failure bound, not synchronisation
			t.Fatalf("%s waited for the hanging refresh", what)
		}
	}
	admitPromptly("the request that starts the refresh")
	select {
	case <-arrived:
	case <-time.After(10 * time.Second):
		t.Fatal("no refresh reached the JWKS endpoint")
	}
	for i := range 3 {
		admitPromptly(fmt.Sprintf("request %d during the refresh", i))
	}
	if got := r.iss.JWKSFetches(); got != 2 {
		t.Errorf("JWKS fetched %d times, want 2 (one refresh)", got)
	}

	// An unknown kid waits for the refresh in flight, until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	r.log.Reset()
	h := http.Header{"Authorization": {"Bearer " + r.iss.SignWith(t, next, "RS256", r.iss.Claims("alice", resource, r.clock.Now()))}}
	id, err := r.rs.Admit(ctx, &server.AdmissionRequest{Method: mcp.MethodToolsList, Header: h})
	if got := r.outcome(t, id, err); got.Reason != "keys_unavailable" {
		t.Errorf("unknown kid during the refresh: %+v, want keys_unavailable (it waited)", got)
	}
	// Once the refresh ends, its keys serve; the waiting request joined it.
	release()
	if _, err := r.rs.Admit(context.Background(), &server.AdmissionRequest{Method: mcp.MethodToolsList, Header: h}); err != nil {
		t.Errorf("the rotated key after the refresh: %v; log: %s", err, r.log)
	}
	if got := r.iss.JWKSFetches(); got != 2 {
		t.Errorf("JWKS fetched %d times, want 2 (one refresh)", got)
	}
}

// TestCloseEndsRefresh checks that Close ends a refresh that hangs and
// waits for it, and that stale keys still serve afterwards.
func TestCloseEndsRefresh(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) { o.KeysMaxAge = time.Minute; o.FetchTimeout = time.Hour })
	known := "Bearer " + r.iss.Token(t, r.iss.Claims("alice", resource, r.clock.Now()))
	if _, err := r.admit(mcp.MethodToolsList, "", known); err != nil {
		t.Fatalf("first token: %v", err)
	}
	arrived, _ := r.iss.HoldJWKS(t)
	r.clock.Advance(2 * time.Minute)
	if _, err := r.admit(mcp.MethodToolsList, "", known); err != nil {
		t.Fatalf("stale key: %v", err)
	}
	<-arrived
	if err := r.rs.Close(); err != nil { // returns only once the refresh has ended
		t.Fatalf("Close: %v", err)
	}
	if _, err := r.admit(mcp.MethodToolsList, "", known); err != nil {
		t.Errorf("stale key after Close: %v", err)
	}
	r.log.Reset()
	id, err := r.admit(mcp.MethodToolsList, "", "Bearer "+r.iss.SignWith(t, r.iss.Rotate(t, "RS256"), "RS256", r.iss.Claims("alice", resource, r.clock.Now())))
	if got := r.outcome(t, id, err); got.Reason != "keys_unavailable" {
		t.Errorf("unknown kid after Close: %+v, want keys_unavailable", got)
	}
}

// TestJWKSRedirectRefused checks that the default client follows no
// redirect to a URL the options would refuse (here one with user
// information; plain http off loopback is refused the same way), so that
// keys cannot be taken from a source the configuration could not name.
func TestJWKSRedirectRefused(t *testing.T) {
	redirect := httptest.NewUnstartedServer(nil)
	t.Cleanup(redirect.Close)
	r := newRig(t, func(o *oauth.Options) { o.JWKSURL = "http://" + redirect.Listener.Addr().String() + "/jwks" })
	target := strings.Replace(r.iss.JWKSURL(), "http://", "http://user:pass@", 1) // the real JWKS
	redirect.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target, http.StatusFound)
	})
	redirect.Start()
	id, err := r.admit(mcp.MethodToolsList, "", "Bearer "+r.iss.Token(t, r.iss.Claims("alice", resource, r.clock.Now())))
	if got := r.outcome(t, id, err); got.Status != http.StatusServiceUnavailable || got.Reason != "keys_unavailable" {
		t.Errorf("outcome %+v, want 503 keys_unavailable", got)
	}
	if !strings.Contains(r.log.String(), "redirect refused") {
		t.Errorf("the key fetch failure is not logged: %s", r.log)
	}
}
