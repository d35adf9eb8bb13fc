package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// asMainEnv makes the test binary behave as mcpbench itself, so that the
// subprocess mode can re-execute it as "mcpbench serve".
const asMainEnv = "MCPBENCH_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// availableTargets returns the targets compiled into this binary.
func availableTargets(t *testing.T) []target {
	t.Helper()
	var out []target
	for _, tg := range allTargets() {
		if tg.Unavailable == "" {
			out = append(out, tg)
		} else {
			t.Logf("target %s unavailable: %s", tg.Name, tg.Unavailable)
		}
	}
	return out
}

// requireWrk skips the test unless wrk is installed and -short is off.
func requireWrk(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs wrk; skipped in -short mode")
	}
	path, err := findWrk("wrk")
	if err != nil {
		t.Skip(err)
	}
	return path
}

// targetRequest returns the request replayed against tg served at
// baseURL: for a session-bound target, inside a session opened first.
func targetRequest(t *testing.T, tg target, client *http.Client, baseURL string) request {
	t.Helper()
	if !tg.Session {
		return tg.Request
	}
	id, err := openLegacySession(context.Background(), client, baseURL)
	if err != nil {
		t.Fatalf("open session: %v", err)
	}
	return legacySessionToolsCallRequest(id)
}

func TestTargetsAnswerTheBenchmarkRequest(t *testing.T) {
	for _, tg := range availableTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			h, err := tg.NewHandler()
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(h)
			defer ts.Close()
			body, err := verifyExpect(context.Background(), ts.Client(), ts.URL, targetRequest(t, tg, ts.Client(), ts.URL), tg.Expect)
			if err != nil {
				t.Fatalf("verify: %v", err)
			}
			t.Logf("response: %s", body)
		})
	}
}

func TestTargetsRejectOtherPaths(t *testing.T) {
	for _, tg := range availableTargets(t) {
		t.Run(tg.Name, func(t *testing.T) {
			h, err := tg.NewHandler()
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(h)
			defer ts.Close()
			req := targetRequest(t, tg, ts.Client(), ts.URL)
			req.Path = "/elsewhere"
			if _, err := verifyExpect(context.Background(), ts.Client(), ts.URL, req, tg.Expect); err == nil {
				t.Fatal("verify succeeded on a path other than /mcp")
			}
		})
	}
}

func TestBareHandlerRejectsBadRequests(t *testing.T) {
	h, err := newBareHandler()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, body string
		want               int
	}{
		{"GET", http.MethodGet, "", http.StatusMethodNotAllowed},
		{"bad JSON", http.MethodPost, "{", http.StatusBadRequest},
		{"wrong method", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, http.StatusBadRequest},
		{"wrong tool", http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"other"}}`, http.StatusBadRequest},
		{"no id", http.MethodPost, `{"jsonrpc":"2.0","method":"tools/call","params":{"name":"test_simple_text"}}`, http.StatusBadRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(tt.method, endpointPath, strings.NewReader(tt.body)))
			if rec.Code != tt.want {
				t.Fatalf("status %d, want %d; body %s", rec.Code, tt.want, rec.Body)
			}
		})
	}
}

func TestBareHandlerEchoesID(t *testing.T) {
	h, err := newBareHandler()
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	body := strings.Replace(toolsCallRequest().Body, `"id":1`, `"id":"abc"`, 1)
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, endpointPath, strings.NewReader(body)))
	want := bareResultPrefix + `"abc"` + bareResultSuffix
	if got := rec.Body.String(); got != want {
		t.Fatalf("body %s, want %s", got, want)
	}
}

func TestCheckToolsCallResponse(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + expectedText + `"}]}}`
	tests := []struct {
		name        string
		status      int
		contentType string
		body        string
		wantErr     string
	}{
		{"ok", 200, "application/json", ok, ""},
		{"ok with charset and resultType", 200, "application/json; charset=utf-8",
			strings.Replace(ok, `"content"`, `"resultType":"complete","content"`, 1), ""},
		{"status", 202, "application/json", ok, "HTTP status 202"},
		{"SSE", 200, "text/event-stream", "data: " + ok + "\n\n", "Content-Type"},
		{"JSON-RPC error", 200, "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`, "JSON-RPC error"},
		{"tool error", 200, "application/json", strings.Replace(ok, `"content"`, `"isError":true,"content"`, 1), "isError"},
		{"wrong text", 200, "application/json", strings.Replace(ok, expectedText, "nope", 1), "want one text block"},
		{"wrong id", 200, "application/json", strings.Replace(ok, `"id":1`, `"id":2`, 1), "id 2"},
		{"incomplete", 200, "application/json", strings.Replace(ok, `"content"`, `"resultType":"input_required","content"`, 1), "resultType"},
		{"not JSON", 200, "application/json", "<html>", "decode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkToolsCallResponse(tt.status, tt.contentType, []byte(tt.body))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestLuaString(t *testing.T) {
	tests := map[string]string{
		`plain`:        `"plain"`,
		`{"a":"b\c"}`:  `"{\"a\":\"b\\c\"}"`,
		"tab\tnl\n":    `"tab\009nl\010"`,
		"caf\u00e9":    `"caf\195\169"`,
		"bracket]]==]": `"bracket]]==]"`,
	}
	for in, want := range tests {
		if got := luaString(in); got != want {
			t.Errorf("luaString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestWrkScriptReplaysTheRequest(t *testing.T) {
	req := toolsCallRequest()
	script := wrkScript("bare", req)
	for _, want := range []string{
		`wrk.method = "POST"`,
		`wrk.path = "/mcp"`,
		`wrk.headers["Mcp-Protocol-Version"] = "2026-07-28"`,
		`wrk.headers["Mcp-Name"] = "test_simple_text"`,
		`wrk.body = ` + luaString(req.Body),
		resultMarker,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %s:\n%s", want, script)
		}
	}
}

func TestParseWrkOutput(t *testing.T) {
	out := "Running 1s test @ http://127.0.0.1:1\n" + resultMarker +
		`{"requests":2000,"duration_us":2000000,"bytes":1,"connect_errors":0,"read_errors":1,"write_errors":0,` +
		`"status_errors":0,"timeouts":2,"non2xx":3,"bad_body":4,"mean_us":1.5,"p50_us":100,"p90_us":200,"p99_us":300,"max_us":400}` + "\n"
	res, err := parseWrkOutput([]byte(out))
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ReqPerSec(); got != 1000 {
		t.Errorf("ReqPerSec = %v, want 1000", got)
	}
	if res.P99US != 300 || res.SocketErrors() != 3 || res.Non2xx != 3 || res.BadBody != 4 {
		t.Errorf("parsed %+v", res)
	}
	p := res.Problem()
	for _, want := range []string{"3 non-2xx", "4 2xx responses without", "3 socket errors"} {
		if !strings.Contains(p, want) {
			t.Errorf("Problem() = %q, want it to mention %q", p, want)
		}
	}
	if _, err := parseWrkOutput([]byte("no marker\n")); err == nil {
		t.Error("parseWrkOutput accepted output without a result line")
	}
}

func TestMedianRound(t *testing.T) {
	rounds := []loadResult{
		{Requests: 30, DurationUS: 1e6},
		{Requests: 10, DurationUS: 1e6},
		{Requests: 20, DurationUS: 1e6},
		{Requests: 40, DurationUS: 1e6},
	}
	if got := medianRound(rounds).Requests; got != 20 {
		t.Errorf("median of 4 = %d, want 20 (lower middle)", got)
	}
	if got := medianRound(rounds[:3]).Requests; got != 20 {
		t.Errorf("median of 3 = %d, want 20", got)
	}
}

func TestSelectTargets(t *testing.T) {
	got, err := selectTargets(" bare, gosdk ")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "bare" || got[1].Name != "gosdk" {
		t.Fatalf("got %v", got)
	}
	for _, bad := range []string{"", "bare,bare", "nginx"} {
		if _, err := selectTargets(bad); err == nil {
			t.Errorf("selectTargets(%q) succeeded", bad)
		}
	}
}

func TestLoopbackListenRejectsOtherAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "10.1.2.3:0", "example.com:80", "[::]:0"} {
		ln, err := loopbackListen(addr)
		if err == nil {
			ln.Close()
			t.Errorf("loopbackListen(%q) succeeded", addr)
		}
	}
	ln, err := loopbackListen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}

func TestRatiosAndGoals(t *testing.T) {
	rate := func(name string, rps int64, err error) targetResult {
		return targetResult{Target: target{Name: name}, Result: loadResult{Requests: rps, DurationUS: 1e6}, Err: err}
	}
	results := []targetResult{
		rate("taskwire", 15000, nil),
		rate("gosdk", 1500, nil),
		rate("gosdk-legacy", 2000, nil),
		rate("bare", 20000, errors.New("x")),
	}
	if got, ok := ratio(results, "taskwire", "gosdk"); !ok || got != 10 {
		t.Errorf("taskwire/gosdk = %v, %v; want 10", got, ok)
	}
	if _, ok := ratio(results, "taskwire", "bare"); ok {
		t.Error("taskwire/bare evaluated although bare failed")
	}
	goals := evalGoals(results)
	if g := goals[0]; !g.Known || !g.Met || !strings.Contains(g.Value, "7.50x vs gosdk-legacy") {
		t.Errorf("go-sdk goal %+v: want met at 7.50x against the faster gosdk-legacy", g)
	}
	if g := goals[1]; g.Known || g.Met {
		t.Errorf("bare goal %+v: want not evaluated", g)
	}
	results[3].Err = nil
	if g := evalGoals(results)[1]; !g.Known || !g.Met || g.Value != "75.0%" {
		t.Errorf("bare goal %+v: want met at 75.0%%", g)
	}
	results[0].Result.Requests = 13000
	if g := evalGoals(results)[0]; !g.Known || g.Met {
		t.Errorf("go-sdk goal %+v: want not met at 6.5x", g)
	}
}

func TestRunWrkCountsNon2xx(t *testing.T) {
	wrk := requireWrk(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "nope", http.StatusServiceUnavailable)
	}))
	defer ts.Close()
	tg, err := lookupTarget("bare")
	if err != nil {
		t.Fatal(err)
	}
	script, err := writeWrkScript(t.TempDir(), tg)
	if err != nil {
		t.Fatal(err)
	}
	res, out, err := runWrk(context.Background(), loadConfig{
		Wrk: wrk, Threads: 1, Connections: 2, Duration: time.Second, Timeout: time.Second,
	}, script, ts.URL)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Requests == 0 || res.Non2xx != res.Requests || res.Problem() == "" {
		t.Fatalf("result %+v: want every request counted as non-2xx", res)
	}
}

func TestRunWrkCountsBadBodies(t *testing.T) {
	wrk := requireWrk(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"`+expectedText+`"}}`)
	}))
	defer ts.Close()
	tg, err := lookupTarget("bare")
	if err != nil {
		t.Fatal(err)
	}
	script, err := writeWrkScript(t.TempDir(), tg)
	if err != nil {
		t.Fatal(err)
	}
	res, out, err := runWrk(context.Background(), loadConfig{
		Wrk: wrk, Threads: 1, Connections: 2, Duration: time.Second, Timeout: time.Second,
	}, script, ts.URL)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if res.Requests == 0 || res.BadBody != res.Requests || res.Non2xx != 0 {
		t.Fatalf("result %+v: want every request counted as a bad body", res)
	}
}

func TestRunBenchmark(t *testing.T) {
	requireWrk(t)
	sc, err := lookupScenario(scenarioToolsCall)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tg := range availableTargets(t) {
		if slices.Contains(sc.Supported, tg.Name) {
			names = append(names, tg.Name)
		}
	}
	for _, mode := range []string{"inprocess", "subprocess"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "subprocess" {
				t.Setenv(asMainEnv, "1")
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), []string{
				"run", "-mode", mode, "-targets", strings.Join(names, ","),
				"-duration", "1s", "-warmup", "1s", "-rounds", "2", "-connections", "8",
			}, &stdout, &stderr)
			t.Logf("stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range names {
				if !strings.Contains(stdout.String(), name+" ") {
					t.Errorf("report lacks a row for %s", name)
				}
			}
			if !regexp.MustCompile(`bare/gosdk +[0-9.]+x`).MatchString(stdout.String()) {
				t.Errorf("report lacks the bare/gosdk ratio")
			}
		})
	}
}

func TestMissingWrkIsAClearError(t *testing.T) {
	err := run(context.Background(), []string{"-wrk", filepath.Join(t.TempDir(), "no-such-wrk")}, io.Discard, io.Discard)
	if !errors.Is(err, errWrkMissing) {
		t.Fatalf("error %v, want errWrkMissing", err)
	}
	if !strings.Contains(err.Error(), "apt-get install -y wrk") {
		t.Fatalf("error %q does not say how to install wrk", err)
	}
}

func TestServeAnnouncesAddressAndStopsOnStdinEOF(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a subprocess")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "serve", "-target", "bare", "-exit-on-stdin-eof")
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), listenPrefix)
	if !ok || !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("first line %q, want %q + a 127.0.0.1 address", line, listenPrefix)
	}
	if _, err := verify(context.Background(), http.DefaultClient, "http://"+addr, toolsCallRequest()); err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve exited with %v", err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Fatal("serve did not exit after stdin closed")
	}
}
