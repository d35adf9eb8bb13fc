package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/console"
)

// TestSignInLimitPerAddress checks the per-address and per-credential
// limits together: an address's wrong tokens get 429 beyond its burst, a
// wrong token used again and again is refused without being checked once
// its class's bucket is empty too, and the right token from the same
// address (an operator behind the proxy the wrong tokens come through)
// still gets in.
func TestSignInLimitPerAddress(t *testing.T) {
	f := newFixture(t, fixtureOpts{signIn: console.SignInLimit{Burst: 3, Every: time.Minute},
		credSignIn: console.SignInLimit{Burst: 5, Every: 5 * time.Minute}})
	cookie := f.login()
	wrong := map[string]string{"Authorization": "Bearer wrong-token-marker"}
	form := func(tok string) response {
		return f.do(http.MethodPost, "/console/login", url.Values{"token": {tok}},
			map[string]string{"Origin": f.srv.URL, "Sec-Fetch-Site": "same-origin"})
	}
	wrongBearer := func() response { return f.do(http.MethodGet, "/console/", nil, wrong) }
	type step struct {
		name       string
		send       func() response
		want       int
		retryAfter string
	}
	steps := []step{
		{"wrong 1", wrongBearer, http.StatusUnauthorized, ""},
		{"wrong form 2", func() response { return form("wrong-token-marker") }, http.StatusUnauthorized, ""},
		{"wrong 3", wrongBearer, http.StatusUnauthorized, ""},
		{"wrong 4: over the address's limit", wrongBearer, http.StatusTooManyRequests, "60"},
		{"right token from the same address", func() response { return f.get("/console/") }, http.StatusOK, ""},
		{"right form from the same address", func() response { return form(token) }, http.StatusSeeOther, ""},
		{"session unaffected", func() response { return f.do(http.MethodGet, "/console/", nil, map[string]string{"Cookie": cookie}) }, http.StatusOK, ""},
		{"wrong 5: its class's last", wrongBearer, http.StatusTooManyRequests, "60"},
		{"wrong 6: refused unchecked", wrongBearer, http.StatusTooManyRequests, "60"},
		{"right token still", func() response { return f.get("/console/") }, http.StatusOK, ""},
		{"after a minute, the class is still empty", func() response { f.clock.Advance(time.Minute); return wrongBearer() },
			http.StatusTooManyRequests, "240"},
	}
	for _, s := range steps {
		r := s.send()
		if r.status != s.want || r.header.Get("Retry-After") != s.retryAfter {
			t.Errorf("%s: %d, Retry-After %q; want %d, %q", s.name, r.status, r.header.Get("Retry-After"), s.want, s.retryAfter)
		}
		if r.status == http.StatusTooManyRequests {
			mustNotContain(t, s.name, r.body, "report", "tenant-a")
		}
	}
	logged := f.log.String()
	if n := strings.Count(logged, "reason=rate_limited"); n != 4 {
		t.Errorf("%d rate_limited audit lines, want 4:\n%s", n, logged)
	}
	mustNotContain(t, "the log", logged, "wrong-token-marker", token, "127.0.0.1")
}

func TestSignInLimitGlobal(t *testing.T) {
	f := newFixture(t, fixtureOpts{globalSignIn: console.SignInLimit{Burst: 2, Every: time.Second}})
	wrong := map[string]string{"Authorization": "Bearer wrong"}
	for i, want := range []int{http.StatusUnauthorized, http.StatusUnauthorized, http.StatusTooManyRequests} {
		if r := f.do(http.MethodGet, "/console/", nil, wrong); r.status != want || (want == 429) != (r.header.Get("Retry-After") == "1") {
			t.Errorf("wrong %d: %d, Retry-After %q; want %d", i+1, r.status, r.header.Get("Retry-After"), want)
		}
	}
	// Over the global limit failures get 429, but a right token is still
	// checked: an attack from elsewhere does not lock the operators out.
	if r := f.get("/console/"); r.status != http.StatusOK {
		t.Errorf("right token over the global limit: %d, want 200", r.status)
	}
	f.clock.Advance(time.Second)
	if r := f.do(http.MethodGet, "/console/", nil, wrong); r.status != http.StatusUnauthorized {
		t.Errorf("wrong after a second: %d, want 401", r.status)
	}
}

func TestSignInLimitOptions(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	for _, tc := range []struct {
		name string
		opts console.Options
	}{
		{"zero burst", console.Options{SignInPerAddress: console.SignInLimit{Every: time.Second}}},
		{"zero interval", console.Options{SignInGlobal: console.SignInLimit{Burst: 1}}},
		{"negative addresses", console.Options{SignInAddresses: -1}},
		{"zero credential burst", console.Options{SignInPerCredential: console.SignInLimit{Every: time.Second}}},
		{"two scopes", console.Options{OperatorScope: "a b"}},
		{"control character in scope", console.Options{OperatorScope: "ops\x00"}},
		{"non-ASCII scope", console.Options{OperatorScope: "opérateur"}},
	} {
		tc.opts.Store, tc.opts.Token = f.st.Operator(), []byte(token)
		if _, err := console.New(tc.opts); err == nil {
			t.Errorf("%s: New succeeded", tc.name)
		}
	}
}
