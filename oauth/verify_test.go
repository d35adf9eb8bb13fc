package oauth_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/oauth"
)

func TestVerify(t *testing.T) {
	r := newRig(t, nil)
	now := r.clock.Now()
	scoped := r.iss.Claims("alice", resource, now)
	scoped["scope"] = "taskwire:operator read"
	expired := r.iss.Claims("alice", resource, now.Add(-2*time.Hour))
	for _, tc := range []struct {
		name, auth string
		want       oauth.Grant
		reason     string // the logged category, "" when granted
	}{
		{"scoped", "Bearer " + r.iss.Token(t, scoped),
			oauth.Grant{Principal: r.iss.URL + "#alice", Scopes: []string{"taskwire:operator", "read"}}, ""},
		{"no scope", "bearer " + r.iss.Token(t, r.iss.Claims("bob", resource, now)), oauth.Grant{Principal: r.iss.URL + "#bob"}, ""},
		{"missing", "", oauth.Grant{}, "missing"},
		{"not bearer", "Basic YWxpY2U6cHc=", oauth.Grant{}, "malformed"},
		{"expired", "Bearer " + r.iss.Token(t, expired), oauth.Grant{}, "expired"},
		{"garbage", "Bearer not.a.jwt", oauth.Grant{}, "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.log.Reset()
			g, err := r.rs.Verify(context.Background(), tc.auth)
			if (err != nil) != (tc.reason != "") {
				t.Fatalf("Verify: %v, want refusal %q", err, tc.reason)
			}
			if diff := cmp.Diff(tc.want, g); diff != "" {
				t.Errorf("grant (-want +got):\n%s", diff)
			}
			logged := r.log.String()
			if tc.reason != "" && !strings.Contains(logged, "reason="+tc.reason) {
				t.Errorf("log = %q, want reason=%s", logged, tc.reason)
			}
			if tc.auth != "" && strings.Contains(logged, strings.TrimPrefix(tc.auth, "Bearer ")) {
				t.Errorf("the token is in the log: %q", logged)
			}
			if g.HasScope("taskwire:operator") != (tc.name == "scoped") {
				t.Errorf("HasScope = %v", g.HasScope("taskwire:operator"))
			}
		})
	}
}
