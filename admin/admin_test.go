package admin_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/admin"
)

// serve starts h on a real loopback listener and returns its base URL.
func serve(t *testing.T, h http.Handler) string {
	t.Helper()
	s, err := admin.Listen("127.0.0.1:0", h, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return "http://" + s.Addr()
}

func get(t *testing.T, method, url string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func newHandler(t *testing.T, opts admin.Options) *admin.Handler {
	t.Helper()
	h, err := admin.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// TestRoutes checks the routes, methods and bodies of the admin handler.
func TestRoutes(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "up 1\n") })
	base := serve(t, newHandler(t, admin.Options{Metrics: metrics}))
	bare := serve(t, newHandler(t, admin.Options{}))
	tests := []struct {
		method, url string
		status      int
		body        string
	}{
		{"GET", base + "/healthz", 200, "ok\n"},
		{"HEAD", base + "/healthz", 200, ""},
		{"GET", base + "/readyz", 200, "ready\n"},
		{"GET", base + "/metrics", 200, "up 1\n"},
		{"POST", base + "/healthz", 405, ""},
		{"GET", base + "/", 404, ""},
		{"GET", base + "/debug/pprof/", 404, ""},
		{"GET", bare + "/metrics", 404, ""},
	}
	for _, tt := range tests {
		status, body := get(t, tt.method, tt.url)
		if status != tt.status || (tt.body != "" && body != tt.body) {
			t.Errorf("%s %s: %d %q, want %d %q", tt.method, tt.url, status, body, tt.status, tt.body)
		}
	}
}

// TestReadyz checks the answers of /readyz: 503 with a one-line category
// that never carries the check's error text, and the timeout.
func TestReadyz(t *testing.T) {
	leak := errors.New("dial tcp db.internal.example:5432: user=admin password=hunter2: connection refused")
	tests := []struct {
		name  string
		check admin.CheckFunc
		body  string
	}{
		{"ready", func(context.Context) error { return nil }, "ready\n"},
		{"reason", func(context.Context) error { return admin.NotReady("store unreachable", leak) }, "not ready: store unreachable\n"},
		{"multi-line reason", func(context.Context) error { return admin.NotReady("store\nunreachable", nil) }, "not ready: store\n"},
		{"plain error", func(context.Context) error { return leak }, "not ready: check failed\n"},
		{"ignores its deadline", func(ctx context.Context) error { <-ctx.Done(); return nil }, "not ready: timed out\n"},
		{"blocks until its deadline", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }, "not ready: timed out\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := serve(t, newHandler(t, admin.Options{Ready: tt.check, ReadyTimeout: 100 * time.Millisecond}))
			start := time.Now()
			status, body := get(t, "GET", base+"/readyz")
			if took := time.Since(start); took > 2*time.Second {
				t.Errorf("/readyz took %v with a 100 ms timeout", took)
			}
			want := http.StatusOK
			if tt.body != "ready\n" {
				want = http.StatusServiceUnavailable
			}
			if status != want || body != tt.body {
				t.Errorf("/readyz = %d %q, want %d %q", status, body, want, tt.body)
			}
			for _, secret := range []string{"db.internal", "hunter2", "admin"} {
				if strings.Contains(body, secret) {
					t.Errorf("/readyz shows %q: %q", secret, body)
				}
			}
		})
	}
}

// lockedBuffer is a log destination safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestReadyzLogsChanges checks that a failing check is logged with its
// cause when readiness changes, not at every probe.
func TestReadyzLogsChanges(t *testing.T) {
	var down sync.Mutex
	failing := true
	logs := &lockedBuffer{}
	h := newHandler(t, admin.Options{
		Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Ready: func(context.Context) error {
			down.Lock()
			defer down.Unlock()
			if failing {
				return admin.NotReady("store unreachable", errors.New("connection refused"))
			}
			return nil
		},
	})
	base := serve(t, h)
	for range 3 {
		get(t, "GET", base+"/readyz")
	}
	down.Lock()
	failing = false
	down.Unlock()
	get(t, "GET", base+"/readyz")
	get(t, "GET", base+"/readyz")
	out := logs.String()
	if n := strings.Count(out, "not ready"); n != 1 {
		t.Errorf("%d lines of not ready, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "connection refused") || strings.Count(out, "ready again") != 1 {
		t.Errorf("logs lack the cause or the recovery:\n%s", out)
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := admin.New(admin.Options{ReadyTimeout: -time.Second}); err == nil {
		t.Error("a negative ReadyTimeout was accepted")
	}
}

// TestListenShutdown checks that Shutdown stops the listener: the port
// refuses connections afterwards.
func TestListenShutdown(t *testing.T) {
	s, err := admin.Listen("127.0.0.1:0", newHandler(t, admin.Options{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if status, _ := get(t, "GET", "http://"+s.Addr()+"/healthz"); status != 200 {
		t.Fatalf("/healthz = %d", status)
	}
	http.DefaultClient.CloseIdleConnections()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get("http://" + s.Addr() + "/healthz"); err == nil {
		t.Error("the listener still answers after Shutdown")
	}
	if _, err := admin.Listen(s.Addr()+"x", nil, nil); err == nil {
		t.Error("Listen accepted a bad address")
	}
}

// TestConsoleMount checks that Options.Console receives every method on
// /console and below, and nothing else.
func TestConsoleMount(t *testing.T) {
	var got []string
	h, err := admin.New(admin.Options{Console: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path)
	})})
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range []struct{ method, path string }{
		{"GET", "/console"}, {"POST", "/console/tasks/x/cancel"}, {"GET", "/consoles"}, {"POST", "/healthz"},
	} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(req.method, "http://127.0.0.1:9090"+req.path, nil))
	}
	if want := []string{"GET /console", "POST /console/tasks/x/cancel"}; !slices.Equal(got, want) {
		t.Errorf("the console got %q, want %q", got, want)
	}
}

// TestHostCheck checks that the admin endpoints answer only requests whose
// Host names the listener, so that a DNS-rebinding page (whose Host is its
// own domain) cannot read /metrics: loopback names and IP addresses always,
// other names only from Options.AllowedHosts.
func TestHostCheck(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "metric 1\n") })
	for _, tc := range []struct {
		name    string
		allowed []string
		host    string
		want    int
	}{
		{"the listener's address", nil, "", http.StatusOK},
		{"localhost", nil, "localhost:9090", http.StatusOK},
		{"localhost without port", nil, "LOCALHOST", http.StatusOK},
		{"IPv6 loopback", nil, "[::1]:9090", http.StatusOK},
		{"another IP address", nil, "10.0.0.5:9090", http.StatusOK},
		{"a rebinding domain", nil, "evil.example:9090", http.StatusForbidden},
		{"a name ending in localhost", nil, "localhost.evil.example", http.StatusForbidden},
		{"an allowed name", []string{"Metrics.Internal"}, "metrics.internal:9090", http.StatusOK},
		{"a name not allowed", []string{"metrics.internal"}, "evil.example", http.StatusForbidden},
		{"any with *", []string{"*"}, "evil.example", http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := serve(t, newHandler(t, admin.Options{Metrics: metrics, AllowedHosts: tc.allowed}))
			for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
				req, err := http.NewRequest(http.MethodGet, base+path, nil)
				if err != nil {
					t.Fatal(err)
				}
				if tc.host != "" {
					req.Host = tc.host
				}
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != tc.want {
					t.Errorf("GET %s with Host %q: %d, want %d", path, tc.host, res.StatusCode, tc.want)
				}
			}
		})
	}
	for _, bad := range []string{"", "host:9090", "a/b", "a b"} {
		if _, err := admin.New(admin.Options{AllowedHosts: []string{bad}}); err == nil {
			t.Errorf("New accepted AllowedHosts entry %q", bad)
		}
	}
}
