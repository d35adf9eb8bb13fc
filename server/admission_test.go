package server_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

func TestDevAdmission(t *testing.T) {
	long := strings.Repeat("a", server.MaxDevPrincipalBytes)
	for _, tc := range []struct {
		name   string
		values []string // Authorization header values
		want   string   // principal, "anonymous" or "401"
	}{
		{"none", nil, "anonymous"},
		{"bearer", []string{"Bearer alice"}, "alice"},
		{"lower-case scheme", []string{"bearer alice"}, "alice"},
		{"upper-case scheme", []string{"BEARER alice"}, "alice"},
		{"extra spaces", []string{"Bearer   alice  "}, "alice"},
		{"UTF-8 name", []string{"Bearer zoë"}, "zoë"},
		{"longest name", []string{"Bearer " + long}, long},
		{"too long", []string{"Bearer " + long + "a"}, "401"},
		{"another scheme", []string{"Basic Zm9vOmJhcg=="}, "401"},
		{"no name", []string{"Bearer"}, "401"},
		{"blank name", []string{"Bearer   "}, "401"},
		{"prefix of the scheme", []string{"Bear alice"}, "401"},
		{"invalid UTF-8", []string{"Bearer bad\xff"}, "401"},
		{"NUL", []string{"Bearer bad\x00name"}, "401"},
		{"control character", []string{"Bearer bad\x1bname"}, "401"},
		{"tab inside", []string{"Bearer bad\tname"}, "401"},
		{"C1 control", []string{"Bearer bad\u0085name"}, "401"},
		{"DEL", []string{"Bearer bad\x7fname"}, "401"},
		{"two headers", []string{"Bearer alice", "Bearer bob"}, "401"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for _, v := range tc.values {
				h.Add("Authorization", v)
			}
			id, err := server.DevAdmission().Admit(context.Background(), &server.AdmissionRequest{Header: h})
			got := id.Principal
			if id.Tenant == server.AnonymousTenant && id.Principal == "" {
				got = "anonymous"
			}
			var rej *server.Rejection
			if errors.As(err, &rej) {
				got = "401"
				if rej.Status != http.StatusUnauthorized || rej.Header.Get("WWW-Authenticate") != `Bearer realm="mcp"` {
					t.Errorf("rejection: HTTP %d, challenge %q", rej.Status, rej.Header.Get("WWW-Authenticate"))
				}
			} else if err != nil {
				t.Fatalf("Admit: %v", err)
			}
			if got != tc.want {
				t.Errorf("Admit(%q) = %q, want %q", tc.values, got, tc.want)
			}
			if got != "401" && got != "anonymous" && id.Tenant != got {
				t.Errorf("tenant %q, want the principal %q", id.Tenant, got)
			}
		})
	}
}

// TestDevAdmissionOverHTTP: a lower-case scheme is admitted; a name that is
// not valid UTF-8 gets the same 401 as any other bad credential.
func TestDevAdmissionOverHTTP(t *testing.T) {
	hs, _ := tlServer(t, server.TaskLimits{})
	echo := `{"name":"echo","arguments":{"text":"hi"},"_meta":` + tlMeta + `}`
	post := func(auth string) (int, string, string) {
		t.Helper()
		res := tlPostAuth(t, hs, auth, mcp.MethodToolsCall, "echo", echo)
		return res.Status, res.Header.Get("WWW-Authenticate"), string(res.Body)
	}
	if status, _, body := post("bearer alice"); status != http.StatusOK || !strings.Contains(body, `"echo":"hi"`) {
		t.Fatalf("lower-case bearer: HTTP %d %s", status, body)
	}
	s1, c1, b1 := post("Basic Zm9vOmJhcg==")
	s2, c2, b2 := post("Bearer bad\xff")
	if s1 != http.StatusUnauthorized || c1 == "" {
		t.Fatalf("Basic: HTTP %d, challenge %q", s1, c1)
	}
	if diff := cmp.Diff([]any{s1, c1, b1}, []any{s2, c2, b2}); diff != "" {
		t.Errorf("invalid UTF-8 name differs from another bad credential (-basic +utf8):\n%s", diff)
	}
}

func TestRejectionErrorWithoutErr(t *testing.T) {
	for _, tc := range []struct {
		rej  *server.Rejection
		want string
	}{
		{&server.Rejection{}, "server: request rejected with HTTP 403"},
		{&server.Rejection{Status: http.StatusUnauthorized}, "server: request rejected with HTTP 401"},
		{&server.Rejection{Err: mcp.NewError(mcp.CodeInvalidRequest, "Unauthorized")}, "server: request rejected: Unauthorized"},
	} {
		if got := tc.rej.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

// TestAdmissionSeesTheTool checks that the controller is told which tool a
// tools/call calls, in both eras, and no tool for other methods, so that an
// authorization policy can require scopes per tool.
func TestAdmissionSeesTheTool(t *testing.T) {
	type seen struct{ Method, Tool string }
	var got []seen
	record := server.AdmissionFunc(func(ctx context.Context, req *server.AdmissionRequest) (server.Identity, error) {
		got = append(got, seen{req.Method, req.Tool})
		return server.DevAdmission().Admit(ctx, req)
	})

	srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) { o.Admission = record })
	if res := do(t, srv, rawPost(callBody("echo", `{"text":"hi"}`), mcp.MethodToolsCall, map[string]string{"Mcp-Name": "echo"})); res.Status != http.StatusOK {
		t.Fatalf("tools/call: HTTP %d %s", res.Status, res.Body)
	}
	list := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":` + metaJSON + `}}`
	if res := do(t, srv, rawPost(list, mcp.MethodToolsList, nil)); res.Status != http.StatusOK {
		t.Fatalf("tools/list: HTTP %d %s", res.Status, res.Body)
	}
	want := []seen{{mcp.MethodToolsCall, "echo"}, {mcp.MethodToolsList, ""}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("2026 era: admission saw (-want +got):\n%s", diff)
	}

	got = nil
	c := newLegacyRig(t, newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) { o.Admission = record }))
	c.mustInitialize("2025-06-18", `{}`)
	if rep := c.request(mcp.MethodToolsCall, `{"name":"echo","arguments":{"text":"hi"}}`); rep.status != http.StatusOK {
		t.Fatalf("legacy tools/call: HTTP %d %s", rep.status, rep.body)
	}
	want = []seen{{mcp.MethodInitialize, ""}, {"notifications/initialized", ""}, {mcp.MethodToolsCall, "echo"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("2025 era: admission saw (-want +got):\n%s", diff)
	}
}
