package oauth_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/oauth"
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
	if got := r.outcome(t, id, err); got.Status != http.StatusUnauthorized || got.Reason != "introspection_failed" {
		t.Errorf("outcome %+v, want 401 introspection_failed", got)
	}
}
