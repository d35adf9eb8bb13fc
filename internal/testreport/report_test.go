package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestReport(t *testing.T) {
	tests := []struct {
		name, in, out string
		summary       []string
	}{{
		name: "a passing package prints its ok line only",
		in: `{"Action":"run","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"    a_test.go:3: chatter\n"}
{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}
{"Action":"pass","Package":"p","Test":"TestA"}
{"Action":"output","Package":"p","Output":"PASS\n"}
{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}
{"Action":"pass","Package":"p"}
`,
		out: "ok  \tp\t0.01s\n",
	}, {
		name: "a failed test prints its output without go test's chatter",
		in: `{"Action":"output","Package":"p","Test":"TestB","Output":"=== RUN   TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== PAUSE TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"=== CONT  TestB\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"    b_test.go:9: want 2\n"}
{"Action":"output","Package":"p","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}
{"Action":"fail","Package":"p","Test":"TestB"}
{"Action":"output","Package":"p","Output":"FAIL\n"}
{"Action":"output","Package":"p","Output":"FAIL\tp\t0.01s\n"}
{"Action":"fail","Package":"p"}
`,
		out: "    b_test.go:9: want 2\n--- FAIL: TestB (0.00s)\nFAIL\nFAIL\tp\t0.01s\n",
	}, {
		name: "skips for want of PostgreSQL and Chromium are counted, others not",
		in: `{"Action":"output","Package":"p","Test":"TestPG","Output":"    h.go:77: PostgreSQL at postgres://x unreachable (set TASKWIRE_TEST_POSTGRES_URL): refused\n"}
{"Action":"output","Package":"p","Test":"TestPG","Output":"--- SKIP: TestPG (0.00s)\n"}
{"Action":"skip","Package":"p","Test":"TestPG"}
{"Action":"output","Package":"q","Test":"TestPG2","Output":"    h.go:7: PostgreSQL unreachable (set TASKWIRE_TEST_POSTGRES_URL)\n"}
{"Action":"skip","Package":"q","Test":"TestPG2"}
{"Action":"output","Package":"q","Test":"TestPG3","Output":"    h.go:7: PostgreSQL unreachable (set TASKWIRE_TEST_POSTGRES_URL)\n"}
{"Action":"skip","Package":"q","Test":"TestPG3"}
{"Action":"output","Package":"c","Test":"TestBrowser","Output":"    b.go:37: no Chromium on PATH (chromium, chromium-browser or google-chrome)\n"}
{"Action":"skip","Package":"c","Test":"TestBrowser"}
{"Action":"output","Package":"e","Test":"TestFleet","Output":"    p.go:94: no PostgreSQL server binaries (initdb, postgres) found; set TASKWIRE_TEST_PG_BINDIR\n"}
{"Action":"skip","Package":"e","Test":"TestFleet"}
{"Action":"output","Package":"c","Test":"TestSlow","Output":"    s.go:3: takes about 45 s\n"}
{"Action":"skip","Package":"c","Test":"TestSlow"}
`,
		summary: []string{
			"skipped in main: PostgreSQL tests (TASKWIRE_TEST_POSTGRES_URL unreachable): 3 tests in p, q",
			"skipped in main: PostgreSQL tests that start a private server (no server binaries, or no postgres user): 1 tests in e",
			"skipped in main: browser tests (no Chromium on PATH): 1 tests in c",
		},
	}, {
		name: "lines that are not events, and build output, are copied",
		in: `go: downloading example.com/m v1.0.0
{"ImportPath":"p","Action":"build-output","Output":"# p\n"}
{"ImportPath":"p","Action":"build-output","Output":"p/a.go:3:1: syntax error\n"}
{"ImportPath":"p","Action":"build-fail"}
{"Action":"output","Package":"p","Output":"FAIL\tp [build failed]\n"}
`,
		out: "go: downloading example.com/m v1.0.0\n# p\np/a.go:3:1: syntax error\nFAIL\tp [build failed]\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out strings.Builder
			r := newReport(&out)
			if err := r.read(strings.NewReader(tt.in)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.out, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.summary, r.summary("main")); diff != "" {
				t.Errorf("summary (-want +got):\n%s", diff)
			}
		})
	}
}
