package nodecmd

import (
	"flag"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
)

func TestParseAdminAddr(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"", "", ""},
		{"9090", "127.0.0.1:9090", ""},
		{":9090", "127.0.0.1:9090", ""},
		{"0", "127.0.0.1:0", ""},
		{"127.0.0.1:9090", "127.0.0.1:9090", ""},
		{"[::1]:9090", "[::1]:9090", ""},
		{"0.0.0.0:9090", "0.0.0.0:9090", ""},
		{"monitoring.internal:9090", "monitoring.internal:9090", ""},
		{"localhost", "", "want PORT, :PORT or HOST:PORT"},
		{"10.0.0.1", "", "want PORT, :PORT or HOST:PORT"},
		{":http", "", "must be a number from 0 to 65535"},
		{"99999", "", "must be a number from 0 to 65535"},
		{"host:", "", "must be a number from 0 to 65535"},
		{":-1", "", "must be a number from 0 to 65535"},
	}
	for _, tt := range tests {
		got, err := parseAdminAddr(tt.in)
		switch {
		case tt.err == "" && (err != nil || got != tt.want):
			t.Errorf("parseAdminAddr(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("parseAdminAddr(%q) = %q, %v; want an error containing %q", tt.in, got, err, tt.err)
		}
	}
}

func TestParseScopes(t *testing.T) {
	methods, tools, err := parseScopes("reports.generate=reports, tasks/cancel=tasks:write,reports.generate=audit")
	if err != nil {
		t.Fatal(err)
	}
	got := []map[string][]string{methods, tools}
	want := []map[string][]string{
		{"tasks/cancel": {"tasks:write"}},
		{"reports.generate": {"reports", "audit"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("parseScopes (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"reports", "=x", "a=", "a=b,,c=d"} {
		if _, _, err := parseScopes(bad); err == nil {
			t.Errorf("parseScopes(%q) accepted", bad)
		}
	}
}

func TestAllowedHosts(t *testing.T) {
	for _, tc := range []struct {
		list, audience string
		want           []string
		err            string
	}{
		{"", "", nil, ""},
		{"", "https://mcp.example.com:8443/mcp", []string{"127.0.0.1", "::1", "localhost", "mcp.example.com"}, ""},
		{"a.example, B.example,*", "", []string{"*", "127.0.0.1", "::1", "a.example", "b.example", "localhost"}, ""},
		{"::1,localhost", "", []string{"127.0.0.1", "::1", "localhost"}, ""},
		{"a.example:8080", "", nil, "not a host name"},
		{"a.example,,b", "", nil, "not a host name"},
		{"http://a.example", "", nil, "not a host name"},
	} {
		got, err := allowedHosts(tc.list, tc.audience)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("allowedHosts(%q, %q) = %v, %v; want an error containing %q", tc.list, tc.audience, got, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("allowedHosts(%q, %q): %v", tc.list, tc.audience, err)
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("allowedHosts(%q, %q) (-want +got):\n%s", tc.list, tc.audience, diff)
		}
	}
}

func TestSessionFlags(t *testing.T) {
	for _, tc := range []struct {
		idle, life time.Duration
		per, max   int
		ok         bool
	}{
		{30 * time.Minute, 24 * time.Hour, 100, 100_000, true},
		{0, time.Hour, 1, 10, false},
		{time.Minute, 0, 1, 10, false},
		{2 * time.Hour, time.Hour, 1, 10, false},
		{time.Minute, time.Hour, 0, 10, false},
		{time.Minute, time.Hour, 10, 9, false},
		{time.Minute, time.Hour, 10, 10, true},
	} {
		got, err := sessionFlags(tc.idle, tc.life, tc.per, tc.max)
		if (err == nil) != tc.ok {
			t.Errorf("sessionFlags(%v, %v, %d): err = %v, want ok %v", tc.idle, tc.life, tc.per, err, tc.ok)
		}
		if tc.ok && got != (server.SessionOptions{IdleTimeout: tc.idle, MaxLifetime: tc.life, MaxPerPrincipal: tc.per, MaxStored: tc.max}) {
			t.Errorf("sessionFlags = %+v", got)
		}
	}
}

func TestTaskLimitFlags(t *testing.T) {
	for _, tc := range []struct {
		rate      float64
		burst     int
		maxActive int
		want      server.TaskLimits
		err       string
	}{
		{rate: 20, burst: 100, maxActive: 1000, want: server.TaskLimits{CreateRate: 20, CreateBurst: 100, MaxActive: 1000}},
		{rate: -1, burst: 1, maxActive: -1, want: server.TaskLimits{CreateRate: server.NoLimit, CreateBurst: 1, MaxActive: server.NoLimit}},
		{rate: 0.5, burst: 3, maxActive: 7, want: server.TaskLimits{CreateRate: 0.5, CreateBurst: 3, MaxActive: 7}},
		{rate: 0, burst: 100, maxActive: 1000, err: "--task-rate"},
		{rate: -2, burst: 100, maxActive: 1000, err: "--task-rate"},
		{rate: 20, burst: 0, maxActive: 1000, err: "--task-burst"},
		{rate: 20, burst: 100, maxActive: 0, err: "--max-active-tasks"},
		{rate: 20, burst: 100, maxActive: -5, err: "--max-active-tasks"},
	} {
		got, err := taskLimitFlags(tc.rate, tc.burst, tc.maxActive)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("taskLimitFlags(%v, %d, %d) = %v, want an error naming %s", tc.rate, tc.burst, tc.maxActive, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("taskLimitFlags(%v, %d, %d): %v", tc.rate, tc.burst, tc.maxActive, err)
			continue
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("taskLimitFlags(%v, %d, %d) (-want +got):\n%s", tc.rate, tc.burst, tc.maxActive, d)
		}
	}
}

func TestUserDataDir(t *testing.T) {
	tests := []struct {
		name, goos string
		env        map[string]string
		want       string
		wantErr    bool
	}{
		{"xdg wins", "linux", map[string]string{"XDG_DATA_HOME": "/data", "HOME": "/home/u"}, "/data", false},
		{"relative xdg ignored", "linux", map[string]string{"XDG_DATA_HOME": "rel", "HOME": "/home/u"}, "/home/u/.local/share", false},
		{"linux default", "linux", map[string]string{"HOME": "/home/u"}, "/home/u/.local/share", false},
		{"macOS", "darwin", map[string]string{"HOME": "/Users/u"}, "/Users/u/Library/Application Support", false},
		{"windows", "windows", map[string]string{"LocalAppData": `C:\Users\u\AppData\Local`}, `C:\Users\u\AppData\Local`, false},
		{"no home", "linux", map[string]string{}, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := userDataDir(func(k string) string { return tt.env[k] }, tt.goos)
			if (err != nil) != tt.wantErr || got != filepath.FromSlash(tt.want) && got != tt.want {
				t.Fatalf("userDataDir = %q, %v; want %q (error %v)", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestResolveStore(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == storeEnv {
				return v
			}
			return ""
		}
	}
	tests := []struct{ flag, env, want string }{
		{"", "", defaultStore("taskwire")},
		{"", "sqlite:/data/env.db", "sqlite:/data/env.db"},
		{"sqlite:flag.db", "sqlite:/data/env.db", "sqlite:flag.db"},
	}
	for _, tt := range tests {
		if got := resolveStore("taskwire", tt.flag, env(tt.env)); got != tt.want {
			t.Errorf("resolveStore(%q, env %q) = %q, want %q", tt.flag, tt.env, got, tt.want)
		}
	}
	// The default is a file in the working directory.
	s, err := store.ParseSpec(defaultStore("taskwire"))
	if err != nil || s.Kind != store.SQLite || s.Path != "taskwire.db" {
		t.Errorf("default store = %+v, %v", s, err)
	}
}

func TestSchemaFlagOnlyForPostgres(t *testing.T) {
	s := node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: "x.db"}}
	if err := withSchema(&s, "x"); err == nil {
		t.Error("--schema accepted for SQLite")
	}
	p := node.StoreSpec{Spec: store.Spec{Kind: store.Postgres, URL: "postgres://db/x"}}
	if err := withSchema(&p, "tw"); err != nil || p.Schema != "tw" {
		t.Errorf("withSchema: %v, %q", err, p.Schema)
	}
}

// TestServeFlagDefaults: the defaults serve's flags print and use are the
// library's, so that leaving a flag out means what leaving the option out
// of server.Options means.
func TestServeFlagDefaults(t *testing.T) {
	p := &Program{Name: "taskwire"}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	p.addServeFlags(fs)
	got := map[string]string{}
	want := map[string]string{
		"body-timeout":        server.DefaultBodyReadTimeout.String(),
		"session-idle":        server.DefaultSessionIdleTimeout.String(),
		"session-lifetime":    server.DefaultSessionLifetime.String(),
		"sessions-per-caller": strconv.Itoa(server.DefaultSessionsPerPrincipal),
		"sessions-max":        strconv.Itoa(server.DefaultMaxStoredSessions),
		"task-rate":           strconv.Itoa(server.DefaultTaskCreateRate),
		"task-burst":          strconv.Itoa(server.DefaultTaskCreateBurst),
		"max-active-tasks":    strconv.Itoa(server.DefaultMaxActiveTasks),
	}
	for name := range want {
		if f := fs.Lookup(name); f != nil {
			got[name] = f.DefValue
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("serve flag defaults (-library +flags):\n%s", diff)
	}
}
