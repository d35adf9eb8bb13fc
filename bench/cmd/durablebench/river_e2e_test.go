package main

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
)

// connectTestPG connects to the test database, skipping the test when it
// is unreachable except under CI=true, where it fails.
func connectTestPG(ctx context.Context, t *testing.T) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, testPGURL())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL unreachable at %s: %v", testPGURL(), err)
		}
		t.Skipf("PostgreSQL unreachable at %s: %v", testPGURL(), err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

func TestPrintComparisonE2E(t *testing.T) {
	const prefix = "taskwire e2e / net/http+River e2e, same run: "
	e2e := func(rate float64) figure {
		return figure{Phase: "pg-e2e", What: "taskwire postgres: HTTP create → tasks/get completed", Rate: rate, Unit: "tasks/s"}
	}
	peer := func(rate float64) figure {
		return figure{Phase: "river-e2e", What: riverE2EWhat + riverVersion + ": HTTP create → poll completed", Rate: rate, Unit: "tasks/s"}
	}
	for _, tc := range []struct {
		name    string
		figures []figure
		want    string // the summary line, or "" for none
	}{
		{"met", []figure{e2e(300), peer(200)}, prefix + "300 / 200 tasks/s = 1.50x (target >= 1x: MET)"},
		{"equal", []figure{e2e(200), peer(200)}, prefix + "200 / 200 tasks/s = 1.00x (target >= 1x: MET)"},
		{"not met", []figure{e2e(100), peer(200)}, prefix + "100 / 200 tasks/s = 0.50x (target >= 1x: NOT MET)"},
		{"no peer", []figure{e2e(100)}, ""},
		{"no pg-e2e", []figure{peer(100)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			printComparison(&b, tc.figures)
			got := ""
			for line := range strings.Lines(b.String()) {
				if strings.HasPrefix(line, prefix) {
					got = strings.TrimSuffix(line, "\n")
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("summary line (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRiverService checks the river-e2e service's answers over real HTTP
// on a fresh schema; its River client is not started, so jobs stay
// available.
func TestRiverService(t *testing.T) {
	if testing.Short() {
		t.Skip("uses PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	connectTestPG(ctx, t)
	schema := randomName("riverbench_")
	t.Cleanup(func() {
		if err := dropSchema(testPGURL(), schema); err != nil {
			t.Error(err)
		}
	})
	pool, err := pgxpool.New(ctx, testPGURL())
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	if err := migrateRiver(ctx, pool, schema); err != nil {
		t.Fatal(err)
	}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	svc := &riverService{pool: pool, client: client, log: slog.New(slog.DiscardHandler)}
	hs := httptest.NewServer(svc.handler())
	defer hs.Close()

	type answer struct {
		Status int
		Body   string
	}
	// In order: the first create makes job 1 of the fresh schema.
	for _, tc := range []struct {
		method, path, body string
		want               answer
	}{
		{"POST", "/jobs", `{"n":7}`, answer{200, `{"id":1,"state":"available"}`}},
		{"GET", "/jobs/1", "", answer{200, `{"id":1,"state":"available","args":{"n":7}}`}},
		{"POST", "/jobs", `{"n":"seven"}`, answer{400, "body: want {\"n\":<int>}\n"}},
		{"POST", "/jobs", `{"n":1,"m":2}`, answer{400, "body: want {\"n\":<int>}\n"}},
		{"POST", "/jobs", `{"n":1` + strings.Repeat(" ", 2000) + `}`, answer{400, "body: want {\"n\":<int>}\n"}},
		{"GET", "/jobs/abc", "", answer{400, "bad job ID\n"}},
		{"GET", "/jobs/0", "", answer{400, "bad job ID\n"}},
		{"GET", "/jobs/99", "", answer{404, "no such job\n"}},
		{"PUT", "/jobs", "", answer{405, "Method Not Allowed\n"}},
	} {
		req, err := http.NewRequestWithContext(ctx, tc.method, hs.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, answer{resp.StatusCode, string(b)}); diff != "" {
			t.Errorf("%s %s %s (-want +got):\n%s", tc.method, tc.path, tc.body, diff)
		}
	}

	// The load generator's client reads the same answers.
	c := &riverE2EClient{http: hs.Client(), base: hs.URL}
	if done, err := c.get(ctx, "1", 7); done || err != nil {
		t.Errorf("get(1, 7) = %v, %v; want false, nil (available)", done, err)
	}
	if _, err := c.get(ctx, "1", 8); err == nil || !strings.Contains(err.Error(), `want {"n":8}`) {
		t.Errorf("get(1, 8) = %v; want the wrong arguments reported", err)
	}
	if id, done, err := c.create(ctx, 3); id != "2" || done || err != nil {
		t.Errorf("create(3) = %q, %v, %v; want job 2, not completed", id, done, err)
	}
}

// TestRiverE2EPhase runs pg-e2e and river-e2e on tiny sizes, checks that
// "durablebench compare" reads both phases' figures from the report, that
// the summary line is there, and that river-e2e drops its schema.
func TestRiverE2EPhase(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the e2e phases on PostgreSQL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connectTestPG(ctx, t)
	t.Setenv(asMainEnv, "1")
	var out lockedBuffer
	err := run(ctx, []string{"-pg-url", testPGURL(), "-phases", "pg-e2e,river-e2e",
		"-e2e-tasks", "50", "-e2e-clients", "4", "-river-workers", "50"}, &out, &out)
	report := out.String()
	t.Logf("%s", report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verified in the database: 51 of 51 jobs completed", "taskwire e2e / net/http+River e2e, same run: "} {
		if !strings.Contains(report, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	ms, err := parseReport(strings.NewReader(report))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range ms {
		names = append(names, m.Name+" ["+m.Unit+"]")
	}
	want := []string{
		"pg-e2e taskwire postgres: HTTP create → tasks/get completed [tasks/s]",
		"pg-e2e taskwire postgres: HTTP create → tasks/get completed: p99 [ms]",
		"river-e2e net/http + River " + riverVersion + ": HTTP create → poll completed [tasks/s]",
		"river-e2e net/http + River " + riverVersion + ": HTTP create → poll completed: p99 [ms]",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("measures (-want +got):\n%s", diff)
	}
	schema := regexp.MustCompile(`schema (riverbench_[0-9a-f]{12})`).FindStringSubmatch(report)
	if schema == nil {
		t.Fatal("the report names no riverbench_ schema")
	}
	var left bool
	if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT FROM pg_namespace WHERE nspname = $1)", schema[1]).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left {
		t.Errorf("schema %s left behind", schema[1])
	}
}
