package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/internal/promscrape"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
)

// TestAdminFlagErrors checks that a bad --admin-addr is a usage error of
// serve and worker, before anything starts.
func TestAdminFlagErrors(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"serve", "--store", db, "--admin-addr", "nonsense"}, []string{"invalid value", "admin-addr", "want PORT, :PORT or HOST:PORT"}},
		{[]string{"worker", "--store", db, "--admin-addr", "host:99999"}, []string{"invalid value", "admin-addr", "0 to 65535"}},
		{[]string{"serve", "--stdio", "--store", db, "--admin-addr", "9090"}, []string{"--admin-addr does not apply to --stdio"}},
		{[]string{"worker", "--store", db, "--admin-addr", "9090", "--admin-allowed-hosts", "m.internal:9090"},
			[]string{"invalid value", "admin-allowed-hosts", "without port"}},
		{[]string{"worker", "--store", db, "--admin-allowed-hosts", "m.internal"}, []string{"--admin-allowed-hosts needs --admin-addr"}},
		{[]string{"serve", "--store", db, "--admin-allowed-hosts", "m.internal"}, []string{"--admin-allowed-hosts needs --admin-addr"}},
	}
	for _, tt := range tests {
		var stderr strings.Builder
		err := run(t.Context(), tt.args, io.Discard, &stderr, noEnv)
		if err == nil {
			t.Errorf("run(%q) succeeded", tt.args)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("run(%q) = %v, want it to contain %q", tt.args, err, w)
			}
		}
	}
}

var adminLine = regexp.MustCompile(`admin endpoints at (http://\S+)`)

// scrapeAdmin scrapes /metrics of the admin listener at base.
func scrapeAdmin(t *testing.T, base string) promscrape.Families {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	f, err := promscrape.Get(ctx, http.DefaultClient, base+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// awaitMetric scrapes until the series of name with labels reaches want.
func awaitMetric(t *testing.T, base, name string, want float64, labels ...string) promscrape.Families {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		f := scrapeAdmin(t, base)
		if v, _ := f.Value(name, labels...); v >= want {
			return f
		}
		if time.Now().After(deadline) {
			v, _ := f.Value(name, labels...)
			t.Fatalf("%s%v = %v after %v, want %v", name, labels, v, waitFor, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// wantLabelNames are the label names of every taskwire family.
var wantLabelNames = map[string][]string{
	"taskwire_server_requests_total":                  {"endpoint", "method", "outcome"},
	"taskwire_server_request_duration_seconds":        {"endpoint", "method"},
	"taskwire_server_requests_in_flight":              {"endpoint", "method"},
	"taskwire_server_rejections_total":                {"endpoint", "status"},
	"taskwire_server_tool_calls_total":                {"endpoint", "outcome", "tool"},
	"taskwire_server_tool_call_duration_seconds":      {"endpoint", "tool"},
	"taskwire_server_listen_streams":                  nil,
	"taskwire_server_live_sessions":                   nil,
	"taskwire_worker_job_transitions_total":           {"kind", "transition"},
	"taskwire_worker_job_failures_total":              {"category", "kind"},
	"taskwire_worker_job_duration_seconds":            {"kind"},
	"taskwire_worker_maintenance_total":               {"operation"},
	"taskwire_worker_queue_running_jobs":              {"queue"},
	"taskwire_store_queue_jobs":                       {"queue", "state"},
	"taskwire_store_tasks":                            {"status"},
	"taskwire_store_jobs":                             {"kind", "state"},
	"taskwire_store_oldest_available_job_age_seconds": nil,
	"taskwire_store_sessions":                         nil,
	"taskwire_store_up":                               nil,
	"taskwire_store_read_duration_seconds":            nil,
	"taskwire_store_read_errors_total":                nil,
}

// checkLabelNames fails t for a taskwire family that is unknown or has
// other label names than wantLabelNames.
func checkLabelNames(t *testing.T, f promscrape.Families) {
	t.Helper()
	for name := range f {
		if !strings.HasPrefix(name, "taskwire_") {
			continue
		}
		want, ok := wantLabelNames[name]
		if !ok {
			t.Errorf("undocumented family %s", name)
			continue
		}
		if d := cmp.Diff([][]string{want}, f.LabelNames(name)); d != "" {
			t.Errorf("%s label names (-want +got):\n%s", name, d)
		}
	}
}

// TestServeAdminEndpoints runs `taskwire serve --admin-addr` as main does,
// makes real requests and a real durable task, and checks the admin
// endpoints: the address printed at startup, /healthz, /readyz, and the
// series and label sets of /metrics; the listener ends with the command.
func TestServeAdminEndpoints(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0",
			"--store", "sqlite:" + filepath.Join(dir, "tasks.db"), "--workers", "1",
			"--reports-dir", filepath.Join(dir, "out"), "--shutdown-grace", "1s", "--log-level", "warn"}, out, out, noEnv)
	}()
	var url, base string
	deadline := time.After(waitFor)
	for base == "" {
		if m := adminLine.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
			url = servingLine.FindStringSubmatch(out.String())[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s", err, out)
		case <-deadline:
			t.Fatalf("serve printed no admin address:\n%s", out)
		case <-time.After(10 * time.Millisecond):
		}
	}
	if !strings.HasPrefix(base, "http://127.0.0.1:") {
		t.Errorf("admin address %s is not loopback", base)
	}
	for path, want := range map[string]string{"/healthz": "ok\n", "/readyz": "ready\n"} {
		if status, body := httpGet(t, base+path); status != http.StatusOK || body != want {
			t.Errorf("%s = %d %q, want 200 %q", path, status, body, want)
		}
	}

	c := newClient(t, url)
	callTool(t, c, "text.stats", map[string]any{"text": "one two"})
	if r, err := c.CallTool(t.Context(), "no.such.tool", map[string]any{}); err != nil || r.Error == nil {
		t.Fatalf("unknown tool: %v %v", r, err)
	}
	id := createTask(t, c, toolReports, map[string]any{"accountId": "metrics", "rows": 2, "seconds": 0})
	waitStatus(t, c, id, mcp.TaskCompleted)
	bad, err := http.Post(url, "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	bad.Body.Close()

	f := awaitMetric(t, base, "taskwire_worker_job_transitions_total", 1, "kind", toolReports, "transition", "completed")
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"taskwire_server_tool_calls_total", []string{"tool", "text.stats", "outcome", "complete"}, 1},
		{"taskwire_server_tool_calls_total", []string{"tool", "unknown", "outcome", "protocol_error"}, 1},
		{"taskwire_server_tool_calls_total", []string{"tool", toolReports, "outcome", "task"}, 1},
		{"taskwire_server_requests_total", []string{"endpoint", "taskwire-demo", "method", "tasks/get", "outcome", "complete"}, 1},
		{"taskwire_server_rejections_total", []string{"endpoint", "taskwire-demo"}, 1},
		{"taskwire_worker_job_transitions_total", []string{"kind", toolReports, "transition", "claimed"}, 1},
		{"taskwire_worker_job_duration_seconds", []string{"kind", toolReports}, 1},
		{"taskwire_store_tasks", []string{"status", "completed"}, 1},
		{"taskwire_store_oldest_available_job_age_seconds", nil, 0},
		{"taskwire_store_up", nil, 1},
		{"taskwire_server_listen_streams", nil, 0},
	} {
		got, ok := f.Value(c.name, c.labels...)
		if !ok || (c.want > 0 && got < c.want) || (c.want == 0 && got != 0) {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if _, ok := f.Value("go_goroutines"); !ok {
		t.Error("no Go runtime metrics")
	}
	checkLabelNames(t, f)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve: %v\n%s", err, out)
		}
	case <-time.After(waitFor):
		t.Fatalf("serve did not stop:\n%s", out)
	}
	http.DefaultClient.CloseIdleConnections()
	if _, err := http.Get(base + "/healthz"); err == nil {
		t.Error("the admin listener still answers after serve stopped")
	}
}

// TestMetricsCardinality creates 1,000 tasks for 100 principals (each its
// own tenant) and checks that they add no series: the set after them is
// the set after one principal's few, and no label names a principal.
func TestMetricsCardinality(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 tasks")
	}
	cfg := testConfig(filepath.Join(t.TempDir(), "tasks.db"), 4)
	cfg.Tools = durableTools(t.TempDir())
	cfg.AdminAddr = "127.0.0.1:0"
	cfg.TaskLimits = server.TaskLimits{CreateRate: server.NoLimit, CreateBurst: 1000, MaxActive: server.NoLimit}
	n := start(t, cfg)
	base := "http://" + n.AdminAddr()
	cs := newClients(t, n.URL())

	// The fixed label values: what one principal's calls exercise.
	round := func(principal string, tasks int) {
		c := cs.client()
		c.Header = http.Header{"Authorization": {"Bearer " + principal}}
		for i := range tasks {
			id := createTask(t, c, toolReports, map[string]any{"accountId": "acct", "rows": 1, "seconds": 0})
			if i == 0 {
				getTask(t, c, id)
			}
		}
	}
	round("warm-up", 3)
	awaitMetric(t, base, "taskwire_worker_job_transitions_total", 3, "transition", "completed")
	before := scrapeAdmin(t, base).Series("taskwire_")

	const principals, perPrincipal = 100, 10
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for p := range principals {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			round(fmt.Sprintf("tenant-%03d", p), perPrincipal)
		})
	}
	wg.Wait()
	f := awaitMetric(t, base, "taskwire_worker_job_transitions_total", 3+principals*perPrincipal, "transition", "completed")
	if got, _ := f.Value("taskwire_server_tool_calls_total", "tool", toolReports, "outcome", "task"); got != 3+principals*perPrincipal {
		t.Errorf("%v task-creating calls counted, want %d", got, 3+principals*perPrincipal)
	}
	after := f.Series("taskwire_")
	// The store's job series follow the queue (kinds with unfinished
	// jobs at the last read), never the callers.
	queue := func(s string) bool { return strings.HasPrefix(s, "taskwire_store_jobs{") }
	if d := cmp.Diff(slices.DeleteFunc(slices.Clone(before), queue), slices.DeleteFunc(slices.Clone(after), queue)); d != "" {
		t.Errorf("series changed with 100 more principals (-before +after):\n%s", d)
	}
	for _, s := range after {
		if queue(s) && !strings.HasPrefix(s, `taskwire_store_jobs{kind="`+toolReports+`",`) {
			t.Errorf("job series of another kind: %s", s)
		}
		if strings.Contains(s, "tenant-") || strings.Contains(s, "warm-up") {
			t.Errorf("a principal became a label: %s", s)
		}
	}
}

// TestWorkerAdminEndpoints checks `taskwire worker --admin-addr`'s node:
// worker and store metrics, no server metrics.
func TestWorkerAdminEndpoints(t *testing.T) {
	cfg := testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1)
	cfg.Addr = ""
	cfg.AdminAddr = "127.0.0.1:0"
	n := start(t, cfg)
	base := "http://" + n.AdminAddr()
	if status, body := httpGet(t, base+"/readyz"); status != http.StatusOK {
		t.Errorf("/readyz = %d %q", status, body)
	}
	f := scrapeAdmin(t, base)
	if v, _ := f.Value("taskwire_store_up"); v != 1 {
		t.Errorf("taskwire_store_up = %v, want 1", v)
	}
	if s := f.Series("taskwire_server_"); s != nil {
		t.Errorf("a worker-only node exports server series: %v", s)
	}
	checkLabelNames(t, f)
}

// TestAdminHostCheck checks a node's admin listener against DNS
// rebinding: a Host that is not a loopback name, an IP address or a name
// of --admin-allowed-hosts gets 403; and that a listener beyond loopback
// starts with a warning saying what it exposes.
func TestAdminHostCheck(t *testing.T) {
	for _, tc := range []struct {
		addr    string
		warning bool
	}{{"127.0.0.1:0", false}, {"0.0.0.0:0", true}} {
		t.Run(tc.addr, func(t *testing.T) {
			log := &syncBuffer{}
			cfg := testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1)
			cfg.Addr = ""
			cfg.AdminAddr = tc.addr
			cfg.AdminAllowedHosts = []string{"metrics.internal"}
			cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
			n := start(t, cfg)
			_, port, _ := net.SplitHostPort(n.AdminAddr())
			for _, c := range []struct {
				host string
				want int
			}{
				{"127.0.0.1:" + port, http.StatusOK},
				{"localhost:" + port, http.StatusOK},
				{"metrics.internal:" + port, http.StatusOK},
				{"rebound.example:" + port, http.StatusForbidden},
			} {
				req, err := http.NewRequest(http.MethodGet, "http://127.0.0.1:"+port+"/metrics", nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Host = c.host
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != c.want {
					t.Errorf("GET /metrics with Host %s: %d, want %d", c.host, res.StatusCode, c.want)
				}
			}
			warned := strings.Contains(log.String(), "admin listener beyond loopback")
			if warned != tc.warning {
				t.Errorf("warning logged %v, want %v; log:\n%s", warned, tc.warning, log)
			}
			if warned && !strings.Contains(log.String(), "/metrics, /healthz and /readyz answer without authentication") {
				t.Errorf("the warning does not say what is exposed:\n%s", log)
			}
		})
	}
}

// TestReadyzPostgres checks /readyz of a node on PostgreSQL: 503 within
// its timeout while the database does not answer, 200 again once it
// does, and a reason that names no host.
func TestReadyzPostgres(t *testing.T) {
	spec, proxy := proxiedPostgres(t)
	cfg := node.Config{Addr: "127.0.0.1:0", StoreSpec: spec, ShutdownGrace: 200 * time.Millisecond, AdminAddr: "127.0.0.1:0"}
	n := start(t, cfg)
	base := "http://" + n.AdminAddr()
	if status, body := httpGet(t, base+"/readyz"); status != http.StatusOK {
		t.Fatalf("/readyz = %d %q before the fault", status, body)
	}
	proxy.Freeze()
	start := time.Now()
	status, body := httpGet(t, base+"/readyz")
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("/readyz took %v with the database frozen; the check's timeout is 2 s", took)
	}
	if status != http.StatusServiceUnavailable || body != "not ready: store timed out\n" {
		t.Errorf("/readyz = %d %q with the database frozen", status, body)
	}
	if strings.Contains(body, "127.0.0.1") {
		t.Errorf("/readyz names the host: %q", body)
	}
	proxy.Unfreeze()
	proxy.Drop()
	deadline := time.Now().Add(waitFor)
	for {
		status, body = httpGet(t, base+"/readyz")
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d %q %v after the database came back", status, body, waitFor)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
