package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/internal/stalledmcp"
	"github.com/taskwire/taskwire/mcp"
)

// --timeout and Ctrl-C end a command soon although the server stopped
// answering, also the DELETE that ends its session; after the first
// Ctrl-C, SIGINT is given back so that a second one kills the process.
func TestStalledServerDoesNotHoldTheCommand(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		srv := stalledmcp.New(t)
		start := time.Now()
		r := runCLI(t, cliOpts{env: map[string]string{urlEnv: srv.URL}}, "tools", "--timeout", "200ms")
		took := time.Since(start)
		if r.Code != exitTimeout || !strings.Contains(r.Stderr, "--timeout 200ms passed") {
			t.Errorf("exit %d, want %d\n%s", r.Code, exitTimeout, r.Stderr)
		}
		if srv.Deletes() != 1 {
			t.Errorf("%d DELETEs, want the session ended with one", srv.Deletes())
		}
		// 200 ms, then at most cliCloseTimeout for the DELETE; the bound
		// leaves room for a loaded machine, far below the client's
		// one-minute RequestTimeout.
		if bound := 10 * time.Second; took > bound {
			t.Errorf("the command took %v, want under %v", took, bound)
		}
		t.Logf("tools --timeout 200ms against a stalled server ended after %v", took.Round(time.Millisecond))
	})

	t.Run("interrupt", func(t *testing.T) {
		srv := stalledmcp.New(t)
		interrupts := make(chan os.Signal, 1)
		released := make(chan struct{})
		done := make(chan cliRun, 1)
		go func() {
			done <- runCLI(t, cliOpts{env: map[string]string{urlEnv: srv.URL}, interrupts: interrupts,
				released: sync.OnceFunc(func() { close(released) })}, "tools")
		}()
		<-srv.Listed
		interrupts <- os.Interrupt
		<-srv.Deleting
		select {
		case <-released:
		default:
			t.Error("SIGINT is still caught while the command ends its session")
		}
		select {
		case r := <-done:
			if r.Code != exitInterrupted {
				t.Errorf("exit %d, want %d\n%s", r.Code, exitInterrupted, r.Stderr)
			}
		case <-time.After(2 * waitFor): // runCLI fails the test after waitFor
			t.Fatal("the interrupted command did not end")
		}
	})
}

func TestRedactedURL(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{defaultURL, defaultURL},
		{"http://127.0.0.1:9/mcp?a=b c", "http://127.0.0.1:9/mcp?a=b c"},
		{"https://u:s3cret@mcp.example.com/mcp", "https://xxxxx@mcp.example.com/mcp"},
		{"https://s3cret@mcp.example.com/mcp", "https://xxxxx@mcp.example.com/mcp"},
		{"https://mcp.example.com/mcp?access_token=s3cret&region=eu", "https://mcp.example.com/mcp?access_token=xxxxx&region=eu"},
		{"https://mcp.example.com/mcp?API_KEY=s3cret&X-Amz-Signature=s3cret&flag", "https://mcp.example.com/mcp?API_KEY=xxxxx&X-Amz-Signature=xxxxx&flag"},
		{"https://mcp.example.com/mcp?%74oken=s3cret", "https://mcp.example.com/mcp?%74oken=xxxxx"},
		{"https://mcp.example.com/mcp?%zz=s3cret", "https://mcp.example.com/mcp?%zz=xxxxx"},
	} {
		if got := redactedURL(tc.in); got != tc.want {
			t.Errorf("redactedURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// The URL's credentials (userinfo, a token in the query) are never
// printed: not in errors, not in the commands printed to copy.
func TestURLCredentialsAreNotPrinted(t *testing.T) {
	forbidden := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	t.Cleanup(forbidden.Close)
	node := cliNode(t)[urlEnv]
	for _, tc := range []struct {
		name, url string
		args      []string
		code      int
		want      string
	}{
		{"userinfo", "http://u:s3cret@127.0.0.1:1/mcp", []string{"tools"}, exitUsage,
			"url must not carry credentials"},
		{"unreachable", "http://127.0.0.1:1/mcp?access_token=s3cret", []string{"tools"}, exitUnreachable,
			"cannot reach http://127.0.0.1:1/mcp?access_token=xxxxx: "},
		{"forbidden", forbidden.URL + "/mcp?access_token=s3cret", []string{"tools"}, exitAuth,
			"(HTTP 403): " + forbidden.URL + "/mcp?access_token=xxxxx"},
		{"resume command", node + "?access_token=s3cret", []string{"call", "--detach", "reports.generate", "accountId=a", "rows=1", "seconds=0"}, exitOK,
			"taskwire task wait --url '" + node + "?access_token=xxxxx' "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, cliOpts{env: map[string]string{urlEnv: tc.url}}, tc.args...)
			if r.Code != tc.code || !strings.Contains(r.Stderr, tc.want) {
				t.Errorf("exit %d, want %d and %q in\n%s", r.Code, tc.code, tc.want, r.Stderr)
			}
			if strings.Contains(r.Stdout+r.Stderr, "s3cret") {
				t.Errorf("the output holds the URL's credential:\n%s%s", r.Stdout, r.Stderr)
			}
		})
	}
}

// printTask passes the server's timestamps, like its other strings,
// through oneLine: no escape sequence reaches the terminal, no fake line.
func TestPrintTaskSanitisesTimestamps(t *testing.T) {
	d := &mcp.DetailedTask{TaskInfo: mcp.TaskInfo{
		TaskID: "t-1", Status: mcp.TaskWorking,
		CreatedAt:     "2026-07-28T10:00:00Z\x1b]0;pwn\x07",
		LastUpdatedAt: "2026-07-28T10:00:01Z\nstatus   completed",
	}}
	var b strings.Builder
	if err := printTask(&b, d); err != nil {
		t.Fatal(err)
	}
	want := "task     t-1\nstatus   working\n" +
		"created  2026-07-28T10:00:00Z ]0;pwn \n" +
		"updated  2026-07-28T10:00:01Z status   completed\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("printTask (-want +got):\n%s", diff)
	}
}
