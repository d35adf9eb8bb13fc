package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestGatewayUsageErrors: a mistake in the gateway's own flags is one line
// naming the flag, a hint at gateway -h, and exit 2, before anything is
// opened or connected.
func TestGatewayUsageErrors(t *testing.T) {
	db := "sqlite:" + filepath.Join(t.TempDir(), "x.db")
	typo := writeFile(t, `{"tools":[{"match":"a","tmeout":"1s"}]}`)
	soon := writeFile(t, `{"tools":[{"match":"a","timeout":"soon"}]}`)
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"gateway", "--store", db}, "gateway: --upstream or --upstream-cmd is required"},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--upstream-cmd", "node s.js"},
			"gateway: --upstream and --upstream-cmd exclude each other: give one"},
		{[]string{"gateway", "--store", db, "--upstream-cmd", "node 's.js"}, "gateway: --upstream-cmd: an unterminated single quote"},
		{[]string{"gateway", "--store", db, "--upstream-cmd", "node s.js | tee"},
			`gateway: --upstream-cmd: '|' is shell syntax, and no shell runs the command: quote it, or run a shell explicitly (sh -c '...')`},
		{[]string{"gateway", "--store", db, "--upstream-cmd", "  "}, "gateway: --upstream-cmd: no command in it"},
		{[]string{"gateway", "--store", db, "--upstream-cmd", "node s.js", "--upstream-header", "X-Key: 1"},
			"gateway: --upstream-header applies to --upstream, not to --upstream-cmd"},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--upstream-cmd-serial"},
			"gateway: --upstream-cmd-serial applies to --upstream-cmd, not to --upstream"},
		{[]string{"gateway", "--store", db, "--upstream-cmd", "node s.js", "--upstream-versions", "2025-11-25,2025-03-26"},
			`gateway: --upstream-versions: "2025-03-26" is not a revision a stdio upstream speaks (2026-07-28, 2025-11-25, 2025-06-18)`},
		{[]string{"gateway", "worker", "--store", db}, "gateway worker: --upstream or --upstream-cmd is required"},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--config", typo},
			`gateway: --config ` + typo + `: json: unknown field "tmeout"`},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--config", soon},
			`gateway: --config ` + soon + `: tools[0]: timeout: time: invalid duration "soon"`},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--config", writeFile(t, `{"tools":[{"match":""},{"match":"b","task":false,"retry":true}]}`)},
			"gateway: --config tools[0]: match is empty; --config tools[1]: retry true needs a task tool, and task is false"},
		{[]string{"gateway", "--store", db, "--upstream", "ftp://h/mcp"}, `gateway: --upstream: scheme "ftp" is not http or https`},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--task-tools", "slow.*,["},
			`gateway: --task-tools: pattern "[": syntax error in pattern`},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--retry-tools", "a,,b"},
			"gateway: --retry-tools: an empty pattern"},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--upstream-header", "no colon"},
			`gateway: --upstream-header "no colon": want 'Name: value'`},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--upstream-header", "Mcp-Session-Id: 1"},
			"gateway: --upstream-header: Mcp-Session-Id is set by the gateway's client and cannot be configured"},
		{[]string{"gateway", "--store", db, "--upstream", "http://127.0.0.1:1/mcp", "--call-timeout", "0s"},
			"gateway: --call-timeout must be positive"},
		{[]string{"gateway", "--frobnicate"}, "gateway: flag provided but not defined: -frobnicate"},
		{[]string{"gateway", "extra"}, `gateway: unexpected arguments ["extra"]`},
	} {
		t.Run(tc.msg, func(t *testing.T) {
			code, stdout, stderr := runMainOut(t, tc.args...)
			want := "taskwire: " + tc.msg + "\nRun 'taskwire gateway -h' for usage.\n"
			if code != 2 || stdout != "" || stderr != want {
				t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and:\n%s", code, stdout, stderr, want)
			}
		})
	}
}

// TestGatewayUnreachableUpstream: an upstream that does not answer fails
// the command (exit 1), saying what it tried.
func TestGatewayUnreachableUpstream(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	url := hs.URL + "/mcp"
	hs.Close()
	code, _, stderr := runMainOut(t, "gateway", "--store", "sqlite:"+filepath.Join(t.TempDir(), "x.db"), "--upstream", url)
	if code != 1 || !strings.Contains(stderr, "gateway: listing the upstream's tools") {
		t.Errorf("exit %d, stderr %q; want 1 and the listing failure", code, stderr)
	}
}

// serveUpstream serves ep over HTTP on loopback until the test ends and
// returns its MCP URL.
func serveUpstream(t *testing.T, ep *server.Endpoint) string {
	t.Helper()
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	t.Cleanup(func() {
		hs.Close()
		srv.Close()
	})
	return hs.URL + "/mcp"
}

// TestGatewayServesUpstream runs `taskwire gateway` as main does in front
// of a taskwire endpoint on httptest: slow.build becomes a durable task
// that completes with the upstream's result, text.echo answers inline.
func TestGatewayServesUpstream(t *testing.T) {
	type buildIn struct {
		Steps int `json:"steps"`
	}
	type buildOut struct {
		Built int `json:"built"`
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	server.AddTool(ep, &mcp.Tool{Name: "slow.build"}, func(ctx context.Context, req *server.Request, in buildIn) (*mcp.CallToolResult, buildOut, error) {
		for i := 1; i <= in.Steps; i++ {
			_ = req.ReportProgress(ctx, float64(i), float64(in.Steps), fmt.Sprintf("step %d of %d", i, in.Steps))
		}
		return nil, buildOut{Built: in.Steps}, nil
	})
	server.AddTool(ep, &mcp.Tool{Name: "text.echo"}, func(_ context.Context, _ *server.Request, in buildIn) (*mcp.CallToolResult, buildIn, error) {
		return nil, in, nil
	})
	upstream := serveUpstream(t, ep)

	url := runGateway(t, "--upstream", upstream, "--task-tools", "slow.*")
	c := newClient(t, url)
	id := createTask(t, c, "slow.build", map[string]any{"steps": 3})
	if diff := cmp.Diff(buildOut{Built: 3}, structured[buildOut](t, waitStatus(t, c, id, mcp.TaskCompleted))); diff != "" {
		t.Errorf("slow.build (-want +got):\n%s", diff)
	}
	r := callTool(t, c, "text.echo", map[string]any{"steps": 7})
	var res struct {
		StructuredContent buildIn `json:"structuredContent"`
	}
	if err := r.DecodeResult(&res); err != nil || res.StructuredContent.Steps != 7 {
		t.Errorf("text.echo = %+v, %v", res, err)
	}
}

// runGateway runs `taskwire gateway` with args, on a new SQLite file with
// one worker, until the test ends, and returns its MCP URL.
func runGateway(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	out := &syncBuffer{}
	done := make(chan error, 1)
	args = append([]string{"gateway"}, args...)
	args = append(args, "--addr", "127.0.0.1:0", "--store", "sqlite:"+filepath.Join(t.TempDir(), "gw.db"), "--workers", "1",
		"--shutdown-grace", "1s", "--log-level", "warn")
	go func() { done <- run(ctx, args, out, out, noEnv) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("gateway: %v\n%s", err, out)
		}
	})
	deadline := time.After(waitFor)
	for {
		if m := servingLine.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("gateway ended early: %v\n%s", err, out)
		case <-deadline:
			t.Fatalf("gateway printed no address:\n%s", out)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestGatewayUpstreamCmd runs `taskwire gateway --upstream-cmd` in front
// of `taskwire serve --stdio` (this test binary as main, started through
// env): a mirrored inline tool becomes a durable task, another passes
// through.
func TestGatewayUpstreamCmd(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := "env " + asMainEnv + "=1 '" + strings.ReplaceAll(exe, "'", `'\''`) + "' serve --stdio --store memory: --log-level warn"
	url := runGateway(t, "--upstream-cmd", cmd, "--task-tools", "hash.*")
	c := newClient(t, url)
	id := createTask(t, c, "hash.sha256", map[string]any{"text": "abc"})
	digest := structured[map[string]any](t, waitStatus(t, c, id, mcp.TaskCompleted))
	if !strings.Contains(fmt.Sprint(digest), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad") {
		t.Errorf("hash.sha256 through the gateway = %v, want the digest of abc", digest)
	}
	r := callTool(t, c, "text.stats", map[string]any{"text": "two words"})
	var stats struct {
		StructuredContent struct {
			Words int `json:"words"`
		} `json:"structuredContent"`
	}
	if err := r.DecodeResult(&stats); err != nil || stats.StructuredContent.Words != 2 {
		t.Errorf("text.stats = %+v, %v", stats, err)
	}
}

// writeFile writes content to a new file and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gateway.json")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGatewayConfig: --config makes text.echo a durable task tool beside
// the --task-tools; a file contradicting the flags for a listed tool
// fails the command, naming the flag's pattern and the file's entry.
func TestGatewayConfig(t *testing.T) {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "upstream", Version: "1.0.0"})
	type echo struct {
		Text string `json:"text"`
	}
	for _, name := range []string{"slow.build", "text.echo"} {
		server.AddTool(ep, &mcp.Tool{Name: name}, func(_ context.Context, _ *server.Request, in echo) (*mcp.CallToolResult, echo, error) {
			return nil, in, nil
		})
	}
	upstream := serveUpstream(t, ep)

	url := runGateway(t, "--upstream", upstream, "--task-tools", "slow.*",
		"--config", writeFile(t, `{"tools":[{"match":"text.echo","task":true,"retry":true,"timeout":"1m","maxAttempts":2}]}`))
	c := newClient(t, url)
	id := createTask(t, c, "text.echo", map[string]any{"text": "hi"})
	if diff := cmp.Diff(echo{Text: "hi"}, structured[echo](t, waitStatus(t, c, id, mcp.TaskCompleted))); diff != "" {
		t.Errorf("text.echo as a task (-want +got):\n%s", diff)
	}

	code, _, stderr := runMainOut(t, "gateway", "--store", "sqlite:"+filepath.Join(t.TempDir(), "x.db"), "--upstream", upstream,
		"--task-tools", "slow.*", "--config", writeFile(t, `{"tools":[{"match":"slow.build","task":false}]}`))
	want := `tool "slow.build": --task-tools pattern "slow.*" makes it a task tool, but --config tools[0] (match "slow.build") says task false`
	if code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, want)
	}
}
