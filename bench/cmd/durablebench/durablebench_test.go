package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// asMainEnv makes the test binary behave as durablebench itself, so that
// the e2e phases can re-execute it as "durablebench e2e-serve".
const asMainEnv = "DURABLEBENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	c, err := parseFlags(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Phases, ",") != strings.Join(allPhases, ",") || c.N != 50000 || c.ClaimBatch > c.Concurrency {
		t.Errorf("defaults %+v", c)
	}
	for _, bad := range [][]string{
		{"-phases", "nope"},
		{"-phases", "river,river"},
		{"-phases", ""},
		{"-claim-batch", "2000"},
		{"-n", "0"},
		{"-phase-timeout", "1h"},
		{"extra"},
	} {
		if _, err := parseFlags(bad, io.Discard); err == nil {
			t.Errorf("parseFlags(%q) succeeded", bad)
		}
	}
}

func TestLoopbackURL(t *testing.T) {
	for _, ok := range []string{"postgres://postgres@127.0.0.1:5432/test", "postgres://localhost/x", "postgres://[::1]:5432/x"} {
		if err := checkLoopbackURL(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"postgres://db.example.com/x", "postgres://10.0.0.1/x"} {
		if err := checkLoopbackURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestPGURL(t *testing.T) {
	c := config{PGURL: "postgres://u@127.0.0.1/db", SyncCommit: "off"}
	if got, want := c.pgURL(), "postgres://u@127.0.0.1/db?synchronous_commit=off&application_name=durablebench"; got != want {
		t.Errorf("pgURL = %s, want %s", got, want)
	}
	c = config{PGURL: "postgres://u@127.0.0.1/db?sslmode=disable&application_name=x"}
	if got, want := c.pgURL(), "postgres://u@127.0.0.1/db?sslmode=disable&application_name=x"; got != want {
		t.Errorf("pgURL = %s, want %s", got, want)
	}
}

func TestMeasureRateAndMedian(t *testing.T) {
	res, err := measureRate(context.Background(), 2, 50*time.Millisecond, func(context.Context) error {
		time.Sleep(time.Millisecond)
		return nil
	})
	if err != nil || res.Ops == 0 || res.P99 < res.P50 || res.Rate() <= 0 {
		t.Fatalf("measureRate = %+v, %v", res, err)
	}
	rs := []rateResult{{Ops: 3, Elapsed: time.Second}, {Ops: 1, Elapsed: time.Second}, {Ops: 2, Elapsed: time.Second}}
	if got := medianRate(rs).Ops; got != 2 {
		t.Errorf("median ops %d, want 2", got)
	}
}

func TestClaimTrend(t *testing.T) {
	var s storeStats
	for i := range 10 {
		s.claims = append(s.claims, claimCall{jobs: 10, d: time.Duration(10-i) * time.Millisecond})
	}
	got := s.claimTrend(100)
	for _, want := range []string{"first 2 claims (queue 100 → 80) mean 9.50ms", "last 2 claims (queue 20 → 0) mean 1.50ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("claimTrend = %q, want it to contain %q", got, want)
		}
	}
}

func TestPhaseName(t *testing.T) {
	if phaseName("postgres", "worker") != "pg-worker" || phaseName("sqlite", "e2e") != "sqlite-e2e" {
		t.Error("phaseName")
	}
}

// TestSQLitePhases runs the SQLite phases on tiny sizes, the gateway's too.
func TestSQLitePhases(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the SQLite phases")
	}
	t.Setenv(asMainEnv, "1")
	var out lockedBuffer
	err := run(context.Background(), []string{"-phases", "sqlite-insert,sqlite-worker,sqlite-e2e,sqlite-gateway-e2e", "-sqlite-n", "300",
		"-insert-duration", "200ms", "-insert-rounds", "1", "-e2e-tasks", "50", "-e2e-clients", "4",
		"-concurrency", "50", "-claim-batch", "20", "-tmp", t.TempDir()}, &out, &out)
	t.Logf("%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verified in the database: completed=300", "sqlite-e2e", "sqlite-gateway-e2e", "Enqueue/raw"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// lockedBuffer is the standard output and error of a test's run: the e2e
// phases copy their server's standard error into it from a goroutine of
// os/exec while the phase writes its report.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p under the lock.
func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testPGURL is the database of the PostgreSQL test, as for the root
// module's store tests.
func testPGURL() string {
	if u := os.Getenv("TASKWIRE_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return "postgres://postgres@127.0.0.1:5432/test"
}

// TestPostgresPhases runs the PostgreSQL phases, River included, on tiny
// sizes and checks that they leave no schema behind.
func TestPostgresPhases(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the PostgreSQL phases")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn, err := pgx.Connect(ctx, testPGURL())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PostgreSQL unreachable at %s: %v", testPGURL(), err)
		}
		t.Skipf("PostgreSQL unreachable at %s: %v", testPGURL(), err)
	}
	defer conn.Close(ctx)
	schemas := func() int {
		var n int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'twbench\_%' OR nspname LIKE 'riverbench\_%'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := schemas()
	t.Setenv(asMainEnv, "1")
	var out lockedBuffer
	err = run(ctx, []string{"-pg-url", testPGURL(), "-phases", "pg-insert,pg-worker,river,pg-e2e,pg-gateway-e2e", "-n", "300",
		"-insert-duration", "200ms", "-insert-rounds", "1", "-e2e-tasks", "50", "-e2e-clients", "4",
		"-concurrency", "50", "-claim-batch", "20", "-river-workers", "50"}, &out, &out)
	t.Logf("%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"verified in the database: completed=300", "300 of 300 jobs completed", "same run:", "pg-gateway-e2e"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if after := schemas(); after != before {
		t.Errorf("benchmark schemas: %d before, %d after; the run left some behind", before, after)
	}
}
