package oauth_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

func TestIntrospection(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) {
		// The rig's issuer is o.Issuer; its endpoint and client are fixed.
		o.Introspection = &oauth.Introspection{
			URL: o.Issuer + "/introspect", ClientID: "resource", ClientSecret: "resource-secret",
			CacheTTL: time.Minute, CacheSize: 2,
		}
	})
	if r.iss.IntrospectionURL() != r.iss.URL+"/introspect" || r.iss.ClientID != "resource" {
		t.Fatal("the test issuer's introspection endpoint moved")
	}
	now := r.clock.Now()
	active := func(extra map[string]any) string {
		c := map[string]any{"sub": "svc", "aud": resource, "iss": r.iss.URL, "scope": "a b", "exp": now.Add(time.Hour).Unix()}
		for k, v := range extra {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return r.iss.Opaque(c)
	}
	reason := func(tok string) string {
		t.Helper()
		r.log.Reset()
		id, err := r.admit(mcp.MethodToolsList, "", "Bearer "+tok)
		o := r.outcome(t, id, err)
		if o.Status == http.StatusOK {
			if want := r.iss.URL + "#svc"; id.Principal != want {
				t.Errorf("principal %q, want %q", id.Principal, want)
			}
			return "admitted"
		}
		return o.Reason
	}
	for _, tc := range []struct {
		name  string
		token string
		want  string
	}{
		{"active", active(nil), "admitted"},
		{"unknown", "opaque-unknown", "introspection_inactive"},
		{"wrong audience", active(map[string]any{"aud": "http://127.0.0.1:1/other"}), "bad_audience"},
		{"no audience", active(map[string]any{"aud": nil}), "bad_audience"},
		{"wrong issuer", active(map[string]any{"iss": "https://elsewhere.example"}), "bad_issuer"},
		{"expired", active(map[string]any{"exp": now.Add(-time.Hour).Unix()}), "expired"},
		{"no subject", active(map[string]any{"sub": nil}), "bad_subject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reason(tc.token); got != tc.want {
				t.Errorf("reason %q, want %q; log: %s", got, tc.want, r.log)
			}
		})
	}

	// An active answer is reused until CacheTTL, and never past exp.
	tok := active(nil)
	short := active(map[string]any{"exp": now.Add(20 * time.Second).Unix()})
	for _, tk := range []string{tok, short} {
		if got := reason(tk); got != "admitted" {
			t.Fatalf("first use: %s", got)
		}
		r.iss.Revoke(tk)
		if got := reason(tk); got != "admitted" {
			t.Errorf("revoked token within the cache TTL: %s, want the cached answer", got)
		}
	}
	r.clock.Advance(21 * time.Second) // past short's exp, within the leeway
	if got := reason(short); got != "introspection_inactive" {
		t.Errorf("cached past exp: %s", got)
	}
	if got := reason(tok); got != "admitted" {
		t.Errorf("within CacheTTL: %s", got)
	}
	r.clock.Advance(time.Minute)
	if got := reason(tok); got != "introspection_inactive" {
		t.Errorf("past CacheTTL: %s, want a fresh answer", got)
	}

	// JWTs are still verified locally.
	if got := reason(r.iss.Token(t, r.iss.Claims("svc", resource, r.clock.Now()))); got != "admitted" {
		t.Errorf("JWT next to introspection: %s", got)
	}
}

func TestIntrospectionUnreachable(t *testing.T) {
	r := newRig(t, func(o *oauth.Options) {
		o.Introspection = &oauth.Introspection{URL: "http://127.0.0.1:1/introspect", ClientID: "x"}
	})
	id, err := r.admit(mcp.MethodToolsList, "", "Bearer opaque")
	want := outcome{Status: http.StatusServiceUnavailable, Reason: "introspection_failed", RetryAfter: "1"}
	if diff := cmp.Diff(want, r.outcome(t, id, err)); diff != "" {
		t.Errorf("outcome (-want +got):\n%s", diff)
	}
}

// endpoint is an introspection endpoint on loopback that counts the
// requests it gets and answers with answer; while hold is open, requests
// wait for it, after a send on arrived.
type endpoint struct {
	URL     string
	calls   atomic.Int64
	arrived chan struct{}
	hold    chan struct{}
}

func newEndpoint(t *testing.T, held bool, answer func(tok string) (int, map[string]any)) *endpoint {
	e := &endpoint{arrived: make(chan struct{}, 16), hold: make(chan struct{})}
	if !held {
		close(e.hold)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		e.calls.Add(1)
		select {
		case e.arrived <- struct{}{}:
		default:
		}
		select {
		case <-e.hold:
		case <-r.Context().Done():
			return
		}
		status, body := answer(r.PostFormValue("token"))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(e.release) // before srv.Close, which waits for held requests
	e.URL = srv.URL + "/introspect"
	return e
}

func (e *endpoint) release() {
	select {
	case <-e.hold:
	default:
		close(e.hold)
	}
}

// TestIntrospectionNegativeCache checks that a token the endpoint does not
// admit is refused again without asking until NegativeCacheTTL has passed.
func TestIntrospectionNegativeCache(t *testing.T) {
	e := newEndpoint(t, false, func(tok string) (int, map[string]any) {
		return http.StatusOK, map[string]any{"active": false}
	})
	r := newRig(t, func(o *oauth.Options) {
		o.Introspection = &oauth.Introspection{URL: e.URL, ClientID: "x", NegativeCacheTTL: 30 * time.Second}
	})
	for _, tc := range []struct{ token, reason string }{
		{"inactive", "introspection_inactive"},
	} {
		t.Run(tc.token, func(t *testing.T) {
			before := e.calls.Load()
			check := func(wantCalls int64) {
				t.Helper()
				r.log.Reset()
				id, err := r.admit(mcp.MethodToolsList, "", "Bearer "+tc.token)
				if got := r.outcome(t, id, err); got.Status != http.StatusUnauthorized || got.Reason != tc.reason {
					t.Errorf("outcome %+v, want 401 %s", got, tc.reason)
				}
				if got := e.calls.Load() - before; got != wantCalls {
					t.Errorf("%d introspections, want %d", got, wantCalls)
				}
			}
			check(1)
			check(1) // from the negative cache
			r.clock.Advance(29 * time.Second)
			check(1)
			r.clock.Advance(2 * time.Second)
			check(2) // past NegativeCacheTTL
		})
	}
}

// TestIntrospectionOutage checks that an introspection endpoint that
// fails, then hangs, does not get tokens refused as invalid: they get 503
// with Retry-After, the failure is not cached per token, no token makes
// the endpoint be asked again within the backoff (1 s, then 2 s, 4 s),
// and once it answers again the next request is admitted.
func TestIntrospectionOutage(t *testing.T) {
	var failing atomic.Bool
	failing.Store(true)
	e := newEndpoint(t, false, func(string) (int, map[string]any) {
		if failing.Load() {
			return http.StatusInternalServerError, nil
		}
		return http.StatusOK, map[string]any{"active": true, "sub": "svc", "aud": resource}
	})
	r := newRig(t, func(o *oauth.Options) {
		o.Introspection = &oauth.Introspection{URL: e.URL, ClientID: "x"}
		o.FetchTimeout = 200 * time.Millisecond // how long the hung introspection takes to fail
	})
	step := func(name, tok string, want outcome, calls int64) {
		t.Helper()
		r.log.Reset()
		id, err := r.admit(mcp.MethodToolsList, "", "Bearer "+tok)
		got := r.outcome(t, id, err)
		if want.Status == http.StatusOK {
			got.Reason = ""
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: outcome (-want +got):\n%s\nlog: %s", name, diff, r.log)
		}
		if got := e.calls.Load(); got != calls {
			t.Errorf("%s: %d introspections, want %d", name, got, calls)
		}
	}
	down := func(retry string) outcome {
		return outcome{Status: http.StatusServiceUnavailable, Reason: "introspection_failed", RetryAfter: retry}
	}
	step("the endpoint fails", "tok-a", down("1"), 1)
	step("the same token within the backoff", "tok-a", down("1"), 1)
	step("another token within the backoff", "tok-b", down("1"), 1)
	r.clock.Advance(time.Second)
	step("it fails again", "tok-b", down("2"), 2)

	e.hold = make(chan struct{}) // the next introspection hangs
	r.clock.Advance(2 * time.Second)
	step("it hangs until FetchTimeout", "tok-a", down("4"), 3)
	failing.Store(false)
	e.release()

	r.clock.Advance(4 * time.Second)
	step("the endpoint is back", "tok-a", outcome{Status: http.StatusOK}, 4)
	step("from the cache", "tok-a", outcome{Status: http.StatusOK}, 4)
}

// TestIntrospectionFlights checks that concurrent requests with one token
// share one introspection, and that a token that would need more than
// MaxConcurrent introspections at once is refused without asking.
func TestIntrospectionFlights(t *testing.T) {
	e := newEndpoint(t, true, func(string) (int, map[string]any) {
		return http.StatusOK, map[string]any{"active": true, "sub": "svc", "aud": resource}
	})
	r := newRig(t, func(o *oauth.Options) {
		o.Introspection = &oauth.Introspection{URL: e.URL, ClientID: "x", MaxConcurrent: 1}
	})
	admit := func(ctx context.Context, tok string) outcome {
		h := http.Header{"Authorization": {"Bearer " + tok}}
		r.log.Reset()
		id, err := r.rs.Admit(ctx, &server.AdmissionRequest{Method: mcp.MethodToolsList, Header: h})
		return r.outcome(t, id, err)
	}
	first := make(chan error, 1)
	go func() {
		h := http.Header{"Authorization": {"Bearer token-a"}}
		_, err := r.rs.Admit(context.Background(), &server.AdmissionRequest{Method: mcp.MethodToolsList, Header: h})
		first <- err
	}()
	<-e.arrived // token-a's introspection is in flight, and held

	if got := admit(context.Background(), "token-b"); got.Reason != "introspection_busy" {
		t.Errorf("a second token beyond MaxConcurrent: %+v, want introspection_busy", got)
	}
	// The same token joins the introspection in flight (it is not busy),
	// and waits for it until its context ends.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if got := admit(ctx, "token-a"); got.Reason != "introspection_failed" {
		t.Errorf("token-a again while in flight: %+v, want introspection_failed (it waited)", got)
	}
	e.release()
	if err := <-first; err != nil {
		t.Errorf("the first request: %v", err)
	}
	if got := admit(context.Background(), "token-a"); got.Status != http.StatusOK {
		t.Errorf("token-a from the cache: %+v", got)
	}
	if got := e.calls.Load(); got != 1 {
		t.Errorf("%d introspections, want 1", got)
	}
	if got := admit(context.Background(), "token-b"); got.Status != http.StatusOK {
		t.Errorf("token-b once a slot is free: %+v", got)
	}
	if got := e.calls.Load(); got != 2 {
		t.Errorf("%d introspections, want 2", got)
	}
}

// TestWhichTokensAreIntrospected checks the rule docs/authorization.md
// states: a JWT is verified locally when JWKSURL or HMACSecret is set, and
// introspected only when neither is.
func TestWhichTokensAreIntrospected(t *testing.T) {
	secret := []byte(strings.Repeat("s", 32))
	for _, tc := range []struct {
		name      string
		jwks      bool
		hmac      bool
		wantCalls int64
	}{
		{"JWKS", true, false, 0},
		{"HMAC secret only", false, true, 0},
		{"neither", false, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEndpoint(t, false, func(string) (int, map[string]any) {
				return http.StatusOK, map[string]any{"active": true, "sub": "svc", "aud": resource}
			})
			r := newRig(t, func(o *oauth.Options) {
				if !tc.jwks {
					o.JWKSURL = ""
				}
				if tc.hmac {
					o.HMACSecret = secret
				}
				o.Introspection = &oauth.Introspection{URL: e.URL, ClientID: "x"}
			})
			c := r.iss.Claims("svc", resource, r.clock.Now())
			tok := r.iss.Token(t, c)
			if tc.hmac {
				tok = testissuer.SignHMAC(t, secret, "", c)
			}
			if _, err := r.admit(mcp.MethodToolsList, "", "Bearer "+tok); err != nil {
				t.Errorf("Admit: %v; log: %s", err, r.log)
			}
			if got := e.calls.Load(); got != tc.wantCalls {
				t.Errorf("%d introspections, want %d", got, tc.wantCalls)
			}
		})
	}
}
