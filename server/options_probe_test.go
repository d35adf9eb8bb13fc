package server_test

import (
	"math"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/server"
)

// TestNewTokenBucketRefuses: options that would make the bucket refuse
// every request (or overflow its waits) fail at construction, naming the
// field; NewTokenBucket never panics.
func TestNewTokenBucketRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  server.TokenBucketOptions
		field string // "" means accepted
	}{
		{"defaults", server.TokenBucketOptions{Rate: 1}, ""},
		{"fractional rate, default burst", server.TokenBucketOptions{Rate: 0.5}, ""},
		{"burst of one", server.TokenBucketOptions{Rate: 0.5, Burst: 1}, ""},
		{"zero rate", server.TokenBucketOptions{}, "Rate"},
		{"negative rate", server.TokenBucketOptions{Rate: -1}, "Rate"},
		{"NaN rate", server.TokenBucketOptions{Rate: math.NaN()}, "Rate"},
		{"infinite rate", server.TokenBucketOptions{Rate: math.Inf(1)}, "Rate"},
		{"burst below one token", server.TokenBucketOptions{Rate: 0.5, Burst: 0.5}, "Burst"},
		{"negative burst", server.TokenBucketOptions{Rate: 1, Burst: -2}, "Burst"},
		{"infinite burst", server.TokenBucketOptions{Rate: 1, Burst: math.Inf(1)}, "Burst"},
		{"negative MaxKeys", server.TokenBucketOptions{Rate: 1, MaxKeys: -1}, "MaxKeys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb, err := server.NewTokenBucket(tc.opts)
			if tc.field == "" {
				if err != nil || tb == nil {
					t.Fatalf("NewTokenBucket(%+v) = %v, %v, want a limiter", tc.opts, tb, err)
				}
				if ok, _ := tb.Allow("k"); !ok {
					t.Errorf("a fresh bucket refused its first request")
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "TokenBucketOptions."+tc.field) {
				t.Fatalf("NewTokenBucket(%+v) error = %v, want one naming %s", tc.opts, err, tc.field)
			}
		})
	}
}

// TestTokenBucketTinyRateWait: a rate so low that its wait does not fit a
// time.Duration reports a long positive wait, not an overflowed one.
func TestTokenBucketTinyRateWait(t *testing.T) {
	clock := time.Unix(0, 0)
	tb := newBucket(t, server.TokenBucketOptions{Rate: 1e-300, Burst: 1, Now: func() time.Time { return clock }})
	if ok, _ := tb.Allow("k"); !ok {
		t.Fatal("the first request was refused")
	}
	ok, wait := tb.Allow("k")
	if ok || wait < 24*time.Hour {
		t.Errorf("Allow = %v, %v; want a refusal with a long positive wait", ok, wait)
	}
}

// TestLimitListenerRefuses: a cap below one is an error, not a panic.
func TestLimitListenerRefuses(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var got []string
	for _, n := range []int{0, -1} {
		if _, err := server.LimitListener(ln, n); err != nil {
			got = append(got, "refused")
		} else {
			got = append(got, "accepted")
		}
	}
	if diff := cmp.Diff([]string{"refused", "refused"}, got); diff != "" {
		t.Errorf("LimitListener (-want +got):\n%s", diff)
	}
}

// TestAllowedOriginsNormalised: configured origins compare as browsers
// serialise them (lower-case scheme and host, no default port, no
// trailing slash), so that an entry written by hand admits its browsers.
func TestAllowedOriginsNormalised(t *testing.T) {
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":` + metaJSON + `}}`
	for _, tc := range []struct {
		allowed, origin string
		want            int
	}{
		{"https://App.example.com/", "https://app.example.com", 200},
		{"HTTPS://app.example.com", "https://app.example.com", 200},
		{"https://app.example.com:443", "https://app.example.com", 200},
		{"http://app.example.com:80/", "http://app.example.com", 200},
		{"https://app.example.com:8443", "https://app.example.com:8443", 200},
		{"http://[::1]:3000", "http://[::1]:3000", 200},
		{"https://app.example.com", "https://app.example.com:8443", 403},
		{"https://app.example.com", "http://app.example.com", 403},
		{"https://app.example.com", "null", 403},
	} {
		t.Run(tc.allowed+" "+tc.origin, func(t *testing.T) {
			srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) {
				o.AllowedOrigins = []string{tc.allowed}
			})
			r := rawPost(discover, "server/discover", map[string]string{"Origin": tc.origin})
			if res := do(t, srv, r); res.Status != tc.want {
				t.Fatalf("got HTTP %d, want %d; body %s", res.Status, tc.want, res.Body)
			}
		})
	}
}

// TestHostAndOriginEntriesRefused: entries that can never match a request
// fail New, naming the field and the entry.
func TestHostAndOriginEntriesRefused(t *testing.T) {
	for _, tc := range []struct {
		name           string
		hosts, origins []string
		want           string
	}{
		{"host with port", []string{"mcp.example.com:443"}, nil, "Options.AllowedHosts[0]"},
		{"bracketed IPv6 host", []string{"[::1]"}, nil, "Options.AllowedHosts[0]"},
		{"empty host", []string{"localhost", ""}, nil, "Options.AllowedHosts[1]"},
		{"origin with path", nil, []string{"https://app.example.com/app"}, "Options.AllowedOrigins[0]"},
		{"origin without scheme", nil, []string{"app.example.com"}, "Options.AllowedOrigins[0]"},
		{"origin with query", nil, []string{"https://app.example.com?x=1"}, "Options.AllowedOrigins[0]"},
		{"origin with user", nil, []string{"https://u@app.example.com"}, "Options.AllowedOrigins[0]"},
		{"null origin", nil, []string{"null"}, "Options.AllowedOrigins[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "test", Version: "1.0.0"})
			_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, AllowedHosts: tc.hosts, AllowedOrigins: tc.origins})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New error = %v, want one naming %s", err, tc.want)
			}
		})
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "test", Version: "1.0.0"})
	if _, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, AllowedHosts: []string{"MCP.example.com", "::1", "*"}, AllowedOrigins: []string{"*"}}); err != nil {
		t.Fatalf("New refused valid entries: %v", err)
	}
}

// TestEndpointPathMustMatchSomeRequest: a path no request's decoded path
// can equal fails New instead of answering 404 to everything.
func TestEndpointPathMustMatchSomeRequest(t *testing.T) {
	got := map[string]bool{}
	for _, path := range []string{"/mcp", "/tenants/café/mcp", "/mcp?v=1", "/mcp#x", "/a%20b", "/mcp?", "//host/mcp"} {
		ep := server.NewEndpoint(server.EndpointOptions{Path: path, Name: "test", Version: "1.0.0"})
		_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
		got[path] = err == nil
	}
	want := map[string]bool{"/mcp": true, "/tenants/café/mcp": true, "/mcp?v=1": false, "/mcp#x": false, "/a%20b": false, "/mcp?": false, "//host/mcp": true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accepted (-want +got):\n%s", diff)
	}
}

// TestEndpointNameIsALabel: an endpoint name that metrics cannot carry as
// a label (Prometheus panics on a label that is not UTF-8) fails New.
func TestEndpointNameIsALabel(t *testing.T) {
	got := map[string]bool{}
	for _, name := range []string{"inventory", "entrepôt", "a\xff", "a\nb"} {
		ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: name, Version: "1.0.0"})
		_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
		got[name] = err == nil
	}
	want := map[string]bool{"inventory": true, "entrepôt": true, "a\xff": false, "a\nb": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("accepted (-want +got):\n%s", diff)
	}
}
