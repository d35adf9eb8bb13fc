package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The testdata reports are the outputs of "durablebench run -n 2000
// -phases ... -e2e-tasks 300" built at 58eaab9 (the reference commit of the
// comparison, before CPU time was read from /proc) and at the commit that
// came just before "compare" (7f1ffd0; with pg-insert, whose rows name
// p99s too); run-river-e2e.txt is "-phases pg-e2e,river-e2e -e2e-tasks 300"
// with the river-e2e phase and the summary line after the table.
func TestParseReport(t *testing.T) {
	worker58 := []measure{
		{"pg-worker CPU per job, this process", 58, "us/job"},
		{"pg-worker CPU per job, the benchmark's PostgreSQL backends", 100, "us/job"},
		{"river CPU per job, this process", 44, "us/job"},
		{"river CPU per job, the benchmark's PostgreSQL backends", 55, "us/job"},
		{"pg-worker taskwire postgres: store.Enqueue (1 task/tx, 16 goroutines) pre-creation", 990, "tasks/s"},
		{"pg-worker taskwire postgres: worker throughput, no-op handler", 2804, "jobs/s"},
		{"pg-worker taskwire postgres: insert + work (pre-creation, then the worker)", 732, "jobs/s"},
		{"river River v0.51.2: InsertMany", 6668, "jobs/s"},
		{"river River v0.51.2: worker throughput, no-op worker", 2987, "jobs/s"},
		{"river River v0.51.2: insert + work (InsertMany, then the worker)", 2063, "jobs/s"},
		{"pg-e2e taskwire postgres: HTTP create → tasks/get completed", 198, "tasks/s"},
		{"pg-e2e taskwire postgres: HTTP create → tasks/get completed: p99", 398.07, "ms"},
	}
	current := []measure{
		{"pg-worker CPU per job, this process", 50, "us/job"},
		{"pg-worker CPU per job, the benchmark's PostgreSQL backends", 220, "us/job"},
		{"river CPU per job, this process", 43, "us/job"},
		{"river CPU per job, the benchmark's PostgreSQL backends", 50, "us/job"},
		{"pg-insert taskwire postgres: store.Enqueue, 1 task/tx", 1538, "tasks/s"},
		{"pg-insert taskwire postgres: store.Enqueue, 1 task/tx: p99", 17.72, "ms"},
		{"pg-insert postgres: raw single-row INSERT, 1 row/tx", 4860, "rows/s"},
		{"pg-insert postgres: raw single-row INSERT, 1 row/tx: p99", 8.21, "ms"},
		{"pg-insert postgres: raw single-row INSERT + pg_notify, 1 row/tx", 659, "rows/s"},
		{"pg-insert postgres: raw single-row INSERT + pg_notify, 1 row/tx: p99", 40.92, "ms"},
		{"pg-worker taskwire postgres: store.Enqueue (1 task/tx, 16 goroutines) pre-creation", 2431, "tasks/s"},
		{"pg-worker taskwire postgres: worker throughput, no-op handler", 4140, "jobs/s"},
		{"pg-worker taskwire postgres: insert + work (pre-creation, then the worker)", 1532, "jobs/s"},
		{"river River v0.51.2: InsertMany", 26117, "jobs/s"},
		{"river River v0.51.2: worker throughput, no-op worker", 8719, "jobs/s"},
		{"river River v0.51.2: insert + work (InsertMany, then the worker)", 6537, "jobs/s"},
		{"pg-e2e taskwire postgres: HTTP create → tasks/get completed", 258, "tasks/s"},
		{"pg-e2e taskwire postgres: HTTP create → tasks/get completed: p99", 318.48, "ms"},
	}
	riverE2E := []measure{
		{"pg-e2e taskwire postgres: HTTP create → tasks/get completed", 143, "tasks/s"},
		{"pg-e2e taskwire postgres: HTTP create → tasks/get completed: p99", 426.42, "ms"},
		{"river-e2e net/http + River v0.51.2: HTTP create → poll completed", 113, "tasks/s"},
		{"river-e2e net/http + River v0.51.2: HTTP create → poll completed: p99", 593.39, "ms"},
	}
	readFile := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	const header = "phase      measurement      rate         settings\n"
	for _, tc := range []struct {
		name    string
		report  string
		want    []measure
		wantErr string
	}{
		{name: "58eaab9", report: readFile("testdata/run-58eaab9.txt"), want: worker58},
		{name: "current", report: readFile("testdata/run-current.txt"), want: current},
		{name: "river-e2e", report: readFile("testdata/run-river-e2e.txt"), want: riverE2E},
		{name: "sqlite, empty settings", report: "== sqlite-worker (load average 1)\n   CPU per job: this process 1.50ms\n\n" + header +
			"sqlite-e2e taskwire sqlite   12 tasks/s   \n",
			want: []measure{{"sqlite-worker CPU per job, this process", 1500, "us/job"}, {"sqlite-e2e taskwire sqlite", 12, "tasks/s"}}},
		{name: "no table", report: "== pg-worker (x)\n   CPU per job: this process 58us\n", wantErr: "no figure table"},
		{name: "failed run", report: "== pg-worker (x)\n   FAILED: boom\n\nload average at the end: 1\n\n" +
			"phase  measurement  rate  settings\n\n", want: nil},
		{name: "bad rate", report: header + "pg-worker  taskwire         many tasks/s \n", wantErr: "unreadable figure row"},
		{name: "bad p99", report: header + "pg-e2e     taskwire         12 tasks/s   p99 soon\n", wantErr: "p99"},
		{name: "CPU outside a phase", report: "CPU per job: this process 58us\n" + header, wantErr: "outside any phase"},
		{name: "bad CPU", report: "== river (x)\n   CPU per job: this process lots\n" + header, wantErr: "duration"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseReport(strings.NewReader(tc.report))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("measures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPrintCompare(t *testing.T) {
	base := &side{runs: [][]measure{
		{{"w", 100, "jobs/s"}, {"only base", 1, "ms"}},
		{{"w", 300, "jobs/s"}, {"only base", 2, "ms"}},
	}}
	head := &side{runs: [][]measure{{{"w", 150, "jobs/s"}}, {{"w", 250, "jobs/s"}}}}
	var b strings.Builder
	printCompare(&b, base, head)
	want := "measure    unit    base median (min–max)  head median (min–max)  head/base\n" +
		"w          jobs/s  200 (100–300)          200 (150–250)          1.00x\n" +
		"only base  ms      1.5 (1–2)              n/a                    n/a\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}

// TestCompareFailsEarly checks that compare refuses what it cannot compare
// before it builds anything.
func TestCompareFailsEarly(t *testing.T) {
	for _, tc := range []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown base", []string{"-base", "no-such-ref-for-durablebench", "--", "-phases", "sqlite-worker"}, `unknown git ref "no-such-ref-for-durablebench"`},
		{"unknown head", []string{"-base", "HEAD", "-head", "no-such-ref-for-durablebench", "--", "-phases", "sqlite-worker"}, "unknown git ref"},
		{"option as ref", []string{"-base", "--all", "--", "-phases", "sqlite-worker"}, "may not start with"},
		{"PostgreSQL unreachable", []string{"-base", "HEAD", "--", "-phases", "pg-worker", "-pg-url", "postgres://postgres@127.0.0.1:1/test"}, "PostgreSQL unreachable"},
		{"remote PostgreSQL", []string{"-base", "HEAD", "--", "-phases", "river", "-pg-url", "postgres://db.example.com/x"}, "not a loopback address"},
		{"bad run flags", []string{"--", "-phases", "nope"}, "unknown phase"},
		{"rounds", []string{"-rounds", "0"}, "-rounds"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), append([]string{"compare"}, tc.args...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
