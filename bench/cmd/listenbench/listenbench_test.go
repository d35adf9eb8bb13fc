package main

import (
	"bytes"
	"context"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// asMainEnv makes the test binary behave as listenbench itself, so that the
// harness can re-execute it as "listenbench serve".
const asMainEnv = "LISTENBENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestParseFlags(t *testing.T) {
	if _, err := parseFlags("run", nil, &bytes.Buffer{}); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, args := range [][]string{
		{"-rate", "501"},         // 5,010 completions for 5,000 tasks
		{"-churn-rate", "401"},   // 2,005 completions for 2,000 streams
		{"-fanout-tasks", "257"}, // beyond the listen filter bound
		{"-create-rate", "-1"},
		{"-tasks-per-client", "257"}, // beyond the listen filter bound
		{"-clients", "0"},
		{"-duration", "0s"},
		{"-streams", "-1"},
		{"-reader", "bogus"},
		{"extra"},
	} {
		if _, err := parseFlags("run", args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q accepted", args)
		} else if exitCode(err) != 2 {
			t.Errorf("%q: exit code %d", args, exitCode(err))
		}
	}
}

func TestQuantile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	if q := quantile(d, 0.5); q != 50*time.Millisecond {
		t.Errorf("p50 = %v", q)
	}
	if q := quantile(d, 0.99); q != 99*time.Millisecond {
		t.Errorf("p99 = %v", q)
	}
	if q := quantile(d[:1], 0.99); q != time.Millisecond {
		t.Errorf("p99 of one = %v", q)
	}
}

func TestLoopbackOnly(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "localhost:0", "example.com:80", "nonsense"} {
		if ln, err := loopbackListen(addr); err == nil {
			ln.Close()
			t.Errorf("%s accepted", addr)
		}
	}
	ln, err := loopbackListen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

// TestRun runs every benchmark at a small scale through the real
// subprocess and checks that every notification and final result arrived.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server subprocesses")
	}
	t.Setenv(asMainEnv, "1")
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := run(ctx, []string{"-clients", "40", "-tasks-per-client", "3", "-rate", "60", "-duration", "2s", "-streams", "100",
		"-listeners", "30", "-fanout-tasks", "4", "-fanout-rate", "8", "-distinct-rate", "100",
		"-churn-streams", "50", "-churn-rate", "20", "-churn-duration", "1s", "-create-rate", "50",
		"-max-lifetime", "2m"}, &out, &errOut)
	if err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{
		// latency
		"listens opened             40 in",
		"notifications expected     120",
		"notifications arrived      120 (missing 0;",
		"graceful ends on Close     40 of 40",
		// fanout: 30 listens × 4 tasks
		"notifications expected     120 (one completed snapshot per completed task and listener)",
		"completions committed      4\n",
		// distinct: 30 listens, 30 tasks
		"notifications arrived      30 (missing 0;",
		// churn: 50 listens, 20 completions, creations alongside
		"listens opened             50 in",
		"notifications arrived      20 (missing 0;",
		", 0 failed",
		"graceful ends on Close     50 of 50",
		// rss
		"listens opened             100 in",
		"100 open listens",
		"graceful ends on Close     100 of 100",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestRSSClose runs rss with -rss-close at a small scale: the streams
// close from the client side, the server counts none open, and both
// after-close readings are printed with no goroutine of a stream left.
func TestRSSClose(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server subprocess")
	}
	t.Setenv(asMainEnv, "1")
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, []string{"rss", "-streams", "50", "-rss-close", "-max-lifetime", "2m"}, &out, &errOut); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	for _, want := range []string{
		"listens opened             50 in",
		"after close, GC  ",
		"after close, GC + FreeOSMemory",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestEpollReader runs fanout and distinct at a small scale with the
// epoll reader: every notification and final result arrives, parsed from
// the raw chunked bodies, and each completion's last arrival is printed.
func TestEpollReader(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server subprocesses")
	}
	if runtime.GOOS != "linux" {
		t.Skip("-reader epoll needs Linux")
	}
	t.Setenv(asMainEnv, "1")
	for _, cmd := range []string{"fanout", "distinct"} {
		var out, errOut bytes.Buffer
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		err := run(ctx, []string{cmd, "-reader", "epoll", "-each", "-listeners", "30", "-fanout-tasks", "4", "-fanout-rate", "8",
			"-distinct-rate", "100", "-max-lifetime", "2m"}, &out, &errOut)
		cancel()
		if err != nil {
			t.Fatalf("%s: %v\n%s\n%s", cmd, err, out.String(), errOut.String())
		}
		want := map[string][]string{
			"fanout":   {"notifications arrived      120 (missing 0;", "graceful ends on Close     30 of 30", "last arrival, in commit order: "},
			"distinct": {"notifications arrived      30 (missing 0;", "graceful ends on Close     30 of 30"},
		}[cmd]
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%s: output lacks %q:\n%s", cmd, w, out.String())
			}
		}
	}
	if _, err := parseFlags("fanout", []string{"-reader", "epoll", "-h2c"}, &bytes.Buffer{}); err == nil {
		t.Error("-reader epoll -h2c accepted")
	}
}
