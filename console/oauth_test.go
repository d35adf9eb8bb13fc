package console_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/console"
	"github.com/taskwire/taskwire/internal/testissuer"
	"github.com/taskwire/taskwire/oauth"
)

// resource is the MCP URI the test access tokens are for.
const resource = "http://127.0.0.1:1/mcp"

// newResourceServer returns a test issuer and a resource server that
// verifies its tokens for resource.
func newResourceServer(t *testing.T) (*testissuer.Issuer, *oauth.ResourceServer) {
	t.Helper()
	iss := testissuer.New(t)
	rs, err := oauth.New(oauth.Options{Resource: resource, Issuer: iss.URL, JWKSURL: iss.JWKSURL(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rs.Close() })
	return iss, rs
}

// TestOAuthUnavailable checks that an access token the resource server
// cannot check now (its issuer's keys cannot be fetched) gets 503 with
// Retry-After, not 401, and is not a failed sign-in.
func TestOAuthUnavailable(t *testing.T) {
	iss, rs := newResourceServer(t)
	iss.FailJWKS(http.StatusInternalServerError)
	f := newFixture(t, fixtureOpts{oauth: rs, signIn: console.SignInLimit{Burst: 1, Every: time.Hour}})
	h := map[string]string{"Authorization": "Bearer " + iss.Token(t, iss.Claims("alice", resource, time.Now()))}
	for i := range 3 {
		if r := f.do(http.MethodGet, "/console/tasks", nil, h); r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" {
			t.Errorf("request %d while the issuer is down: %d, Retry-After %q; want 503, 1", i, r.status, r.header.Get("Retry-After"))
		}
	}
	// The address's one failed sign-in is left: the refusals did not count.
	if r := f.do(http.MethodGet, "/console/", nil, map[string]string{"Authorization": "Bearer wrong"}); r.status != http.StatusUnauthorized {
		t.Errorf("a wrong token after the outage's refusals: %d, want 401 (they are not failed sign-ins)", r.status)
	}
}

func TestOAuthOperators(t *testing.T) {
	iss, rs := newResourceServer(t)
	f := newFixture(t, fixtureOpts{oauth: rs})
	now := time.Now()
	withScope := func(sub, scope string) string {
		c := iss.Claims(sub, resource, now)
		if scope != "" {
			c["scope"] = scope
		}
		return iss.Token(t, c)
	}
	expired := iss.Claims("alice", resource, now.Add(-2*time.Hour))
	for _, tc := range []struct {
		name, token string
		want        int
	}{
		{"operator scope", withScope("alice", "read "+console.DefaultOperatorScope), http.StatusOK},
		{"no scope", withScope("bob", ""), http.StatusForbidden},
		{"other scope", withScope("bob", "taskwire:operators"), http.StatusForbidden},
		{"expired", iss.Token(t, expired), http.StatusUnauthorized},
		{"other audience", iss.Token(t, iss.Claims("alice", "http://127.0.0.1:2/mcp", now)), http.StatusUnauthorized},
		{"static token", token, http.StatusOK},
	} {
		h := map[string]string{"Authorization": "Bearer " + tc.token}
		r := f.do(http.MethodGet, "/console/tasks", nil, h)
		if r.status != tc.want {
			t.Errorf("%s: GET: %d, want %d\n%s", tc.name, r.status, tc.want, r.body)
		}
		if tc.want == http.StatusForbidden {
			mustContain(t, tc.name+" challenge", r.header.Get("WWW-Authenticate"), `error="insufficient_scope"`,
				`scope="`+console.DefaultOperatorScope+`"`)
		}
		if tc.want != http.StatusOK {
			mustNotContain(t, tc.name, r.body, "report", "tenant-a")
		}
	}
	// An action by an access token is audited under a hash of its
	// principal, never the principal.
	h := map[string]string{"Authorization": "Bearer " + withScope("alice", console.DefaultOperatorScope)}
	if r := f.do(http.MethodPost, "/console/tasks/"+f.working+"/cancel", nil, h); r.status != http.StatusSeeOther {
		t.Fatalf("cancel: %d\n%s", r.status, r.body)
	}
	logged := f.log.String()
	mustContain(t, "the audit log", logged, "operator=oauth:"+console.PrincipalRef(iss.URL+"#alice")+" action=cancel")
	mustNotContain(t, "the log", logged, "alice", "bob", iss.URL)
	if strings.Count(logged, "reason=insufficient_scope") != 2 {
		t.Errorf("want 2 insufficient_scope lines:\n%s", logged)
	}
}

func TestOperatorScopeOption(t *testing.T) {
	iss, rs := newResourceServer(t)
	f := newFixture(t, fixtureOpts{})
	c, err := console.New(console.Options{Store: f.st.Operator(), Token: []byte(token), OAuth: rs, OperatorScope: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, tc := range []struct {
		scope string
		want  int
	}{{"ops", http.StatusOK}, {console.DefaultOperatorScope, http.StatusForbidden}} {
		claims := iss.Claims("alice", resource, time.Now())
		claims["scope"] = tc.scope
		req, _ := http.NewRequest(http.MethodGet, "/console/", nil)
		req.Header.Set("Authorization", "Bearer "+iss.Token(t, claims))
		req.RemoteAddr = "127.0.0.1:5"
		w := httptest.NewRecorder()
		c.ServeHTTP(w, req)
		if w.Code != tc.want {
			t.Errorf("scope %q: %d, want %d", tc.scope, w.Code, tc.want)
		}
	}
}
