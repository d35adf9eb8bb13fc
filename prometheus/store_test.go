package prometheus_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/pgtest"
	"github.com/taskwire/taskwire/internal/promscrape"
	twprom "github.com/taskwire/taskwire/prometheus"
	"github.com/taskwire/taskwire/store/postgres"
	"github.com/taskwire/taskwire/store/sqlite"
	"github.com/taskwire/taskwire/task"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Options{Path: filepath.Join(t.TempDir(), "tasks.db"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func creation(t *testing.T, tool, tenant string) *task.CreationContext {
	t.Helper()
	o, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "2026-07-28", Endpoint: "ep", Operation: "tools/call",
		Tool: tool, Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	return &task.CreationContext{Request: task.RequestContext{Endpoint: "ep", Tenant: tenant, Principal: tenant}, Origin: o}
}

// scrape serves reg's metrics over loopback HTTP and scrapes them once.
func scrape(t testing.TB, h http.Handler) promscrape.Families {
	t.Helper()
	hs := httptest.NewServer(h)
	defer hs.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f, err := promscrape.Get(ctx, hs.Client(), hs.URL)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestStoreGauges scrapes the gauges of a real SQLite store: every task
// status and every state of the configured kinds has a series from the
// start, kinds found in the store are added, and nothing names a tenant.
func TestStoreGauges(t *testing.T) {
	st := openSQLite(t)
	reg := twprom.NewRegistry()
	if err := twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: []string{"reports", "approvals"}, MinInterval: -1}); err != nil {
		t.Fatal(err)
	}
	f := scrape(t, twprom.Handler(reg))
	if got := len(f.Series("taskwire_store_jobs")); got != 2*len(backend.JobStates) {
		t.Errorf("empty store: %d job series, want %d", got, 2*len(backend.JobStates))
	}
	if v, _ := f.Value("taskwire_store_up"); v != 1 {
		t.Errorf("taskwire_store_up = %v, want 1", v)
	}

	ctx := context.Background()
	for _, tool := range []string{"reports", "reports", "unlisted"} {
		if _, err := st.Enqueue(ctx, creation(t, tool, "tenant-secret-1"), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	f = scrape(t, twprom.Handler(reg))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"taskwire_store_jobs", []string{"kind", "reports", "state", "available"}, 2},
		{"taskwire_store_jobs", []string{"kind", "unlisted", "state", "available"}, 1},
		{"taskwire_store_jobs", []string{"kind", "approvals", "state", "running"}, 0},
		{"taskwire_store_tasks", []string{"status", "working"}, 3},
		{"taskwire_store_tasks", []string{"status", "cancelled"}, 0},
		{"taskwire_store_sessions", nil, 0},
		{"taskwire_store_read_errors_total", nil, 0},
	} {
		if got, ok := f.Value(c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if got := len(f.Series("taskwire_store_jobs")); got != 3*len(backend.JobStates) {
		t.Errorf("%d job series, want %d", got, 3*len(backend.JobStates))
	}
	wantLabels := map[string][][]string{
		"taskwire_store_jobs":  {{"kind", "state"}},
		"taskwire_store_tasks": {{"status"}},
		"taskwire_store_up":    {nil},
	}
	for name, want := range wantLabels {
		if d := cmp.Diff(want, f.LabelNames(name)); d != "" {
			t.Errorf("%s label names (-want +got):\n%s", name, d)
		}
	}
}

// TestStoreGaugesMaxKinds checks that kinds beyond MaxKinds add up under
// "other", configured kinds first.
func TestStoreGaugesMaxKinds(t *testing.T) {
	st := openSQLite(t)
	ctx := context.Background()
	for _, tool := range []string{"a", "b", "c", "d"} {
		if _, err := st.Enqueue(ctx, creation(t, tool, "t"), backend.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reg := twprom.NewRegistry()
	if err := twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: []string{"d"}, MaxKinds: 2}); err != nil {
		t.Fatal(err)
	}
	f := scrape(t, twprom.Handler(reg))
	for kind, want := range map[string]float64{"d": 1, "a": 1, "other": 2} {
		if got, _ := f.Value("taskwire_store_jobs", "kind", kind, "state", "available"); got != want {
			t.Errorf("kind %q: %v available, want %v", kind, got, want)
		}
	}
	if _, ok := f.Value("taskwire_store_jobs", "kind", "b"); ok {
		t.Error(`kind "b" has series of its own beyond MaxKinds`)
	}
}

// TestStoreGaugesMinInterval checks that scrapes within MinInterval of a
// read reuse it.
func TestStoreGaugesMinInterval(t *testing.T) {
	st := openSQLite(t)
	reg := twprom.NewRegistry()
	if err := twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{MinInterval: time.Hour}); err != nil {
		t.Fatal(err)
	}
	scrape(t, twprom.Handler(reg))
	if _, err := st.Enqueue(context.Background(), creation(t, "reports", "t"), backend.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if v, _ := scrape(t, twprom.Handler(reg)).Value("taskwire_store_tasks", "status", "working"); v != 0 {
		t.Errorf("a scrape within MinInterval read the store again: %v working tasks", v)
	}
}

// TestStoreGaugesFailure checks that a store that cannot be read costs
// its own series only: the scrape succeeds, with taskwire_store_up 0 and
// the error counted.
func TestStoreGaugesFailure(t *testing.T) {
	st := openSQLite(t)
	reg := twprom.NewRegistry()
	if err := twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{MinInterval: -1}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	for i := 1; i <= 2; i++ {
		f := scrape(t, twprom.Handler(reg))
		if v, ok := f.Value("taskwire_store_up"); !ok || v != 0 {
			t.Errorf("taskwire_store_up = %v (found %v), want 0", v, ok)
		}
		if v, _ := f.Value("taskwire_store_read_errors_total"); v != float64(i) {
			t.Errorf("scrape %d: read errors %v, want %d", i, v, i)
		}
		if s := f.Series("taskwire_store_tasks"); s != nil {
			t.Errorf("series of a store that failed: %v", s)
		}
		if _, ok := f.Value("go_goroutines"); !ok {
			t.Error("the scrape lost the other collectors")
		}
	}
}

// TestStoreGaugesTimeout checks that a scrape of a PostgreSQL store whose
// connections stopped moving bytes returns within the gauges' Timeout.
func TestStoreGaugesTimeout(t *testing.T) {
	raw := pgtest.URL(t)
	proxied, p := pgtest.Proxied(t, raw)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := postgres.Open(ctx, postgres.Options{URL: proxied, Schema: pgtest.Schema(t, raw, "twprom_"), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	reg := twprom.NewRegistry()
	if err := twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Timeout: 500 * time.Millisecond, MinInterval: -1}); err != nil {
		t.Fatal(err)
	}
	if v, _ := scrape(t, twprom.Handler(reg)).Value("taskwire_store_up"); v != 1 {
		t.Fatalf("taskwire_store_up = %v before the freeze, want 1", v)
	}
	p.Freeze()
	start := time.Now()
	f := scrape(t, twprom.Handler(reg))
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("scrape took %v with the database frozen, want about the 500 ms timeout", took)
	}
	if v, _ := f.Value("taskwire_store_up"); v != 0 {
		t.Errorf("taskwire_store_up = %v with the database frozen, want 0", v)
	}
	p.Unfreeze()
	if v, _ := scrape(t, twprom.Handler(reg)).Value("taskwire_store_up"); v != 1 {
		t.Errorf("taskwire_store_up = %v after the freeze, want 1", v)
	}
}

// manyKinds returns n distinct kind names.
func manyKinds(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("kind%d", i)
	}
	return out
}

// TestRegisterValidates checks the registration errors: nil arguments,
// options out of range, and a second registration of the same metrics.
func TestRegisterValidates(t *testing.T) {
	st := openSQLite(t)
	reg := twprom.NewRegistry()
	for name, err := range map[string]error{
		"nil source":     twprom.RegisterStoreGauges(reg, nil, twprom.StoreOptions{}),
		"nil registerer": twprom.RegisterStoreGauges(nil, st, twprom.StoreOptions{}),
		"negative":       twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{MaxKinds: -1, Timeout: -1}),
		"kinds":          twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: []string{"a", "b"}, MaxKinds: 1}),
		// Kinds that would get no series of their own.
		"beyond the default MaxKinds": twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: manyKinds(twprom.DefaultMaxKinds + 1)}),
		"empty kind":                  twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: []string{""}}),
		"invalid UTF-8 kind":          twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: []string{"a\xff"}}),
		"kind other":                  twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: []string{"other"}}),
		"kind twice":                  twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{Kinds: []string{"a", "a"}}),
	} {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := twprom.NewServerMetrics(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := twprom.NewServerMetrics(reg); err == nil {
		t.Error("registering the server metrics twice succeeded")
	}
	if err := twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{}); err != nil {
		t.Fatalf("registering after failed attempts: %v", err)
	}
}

// TestStoreQueueGauges: the jobs are counted by queue and state too, the
// same kind in two queues apart, summed over the queues by kind, and the
// queues beyond MaxQueueSeries add up under "other".
func TestStoreQueueGauges(t *testing.T) {
	st := openSQLite(t)
	ctx := context.Background()
	for _, q := range []string{"", "mail", "mail"} {
		if _, err := st.Enqueue(ctx, creation(t, "send", "t"), backend.EnqueueOptions{Queue: q}); err != nil {
			t.Fatal(err)
		}
	}
	reg := twprom.NewRegistry()
	if err := twprom.RegisterStoreGauges(reg, st, twprom.StoreOptions{MinInterval: -1}); err != nil {
		t.Fatal(err)
	}
	f := scrape(t, twprom.Handler(reg))
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"taskwire_store_queue_jobs", []string{"queue", "mail", "state", "available"}, 2},
		{"taskwire_store_queue_jobs", []string{"queue", "default", "state", "available"}, 1},
		{"taskwire_store_queue_jobs", []string{"queue", "mail", "state", "running"}, 0},
		{"taskwire_store_jobs", []string{"kind", "send", "state", "available"}, 3},
	} {
		if got, ok := f.Value(c.name, c.labels...); !ok || got != c.want {
			t.Errorf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	if got := len(f.Series("taskwire_store_queue_jobs")); got != 2*len(backend.JobStates) {
		t.Errorf("%d queue series, want %d", got, 2*len(backend.JobStates))
	}

	for i := range twprom.MaxQueueSeries {
		if _, err := st.Enqueue(ctx, creation(t, "send", "t"), backend.EnqueueOptions{Queue: fmt.Sprintf("z%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	f = scrape(t, twprom.Handler(reg))
	if got := len(f.Series("taskwire_store_queue_jobs")); got != (twprom.MaxQueueSeries+1)*len(backend.JobStates) {
		t.Errorf("%d queue series, want %d", got, (twprom.MaxQueueSeries+1)*len(backend.JobStates))
	}
	// The 34 queues in name order: default, mail, z00..z29 own series;
	// z30 and z31 count under other.
	if got, _ := f.Value("taskwire_store_queue_jobs", "queue", "other", "state", "available"); got != 2 {
		t.Errorf("other queues: %v available jobs, want 2", got)
	}
}
