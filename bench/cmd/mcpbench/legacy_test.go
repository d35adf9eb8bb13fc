package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSessionTargetsNeedTheirSession checks that each session-bound target
// answers the benchmark request inside the session the harness opens, and
// refuses it with a session ID it never issued: the load really exercises
// the session lookup.
func TestSessionTargetsNeedTheirSession(t *testing.T) {
	for _, tg := range availableTargets(t) {
		if !tg.Session {
			continue
		}
		t.Run(tg.Name, func(t *testing.T) {
			h, err := tg.NewHandler()
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(h)
			defer ts.Close()
			if _, err := verifyExpect(context.Background(), ts.Client(), ts.URL, targetRequest(t, tg, ts.Client(), ts.URL), tg.Expect); err != nil {
				t.Fatalf("in the session: %v", err)
			}
			status, _, body, err := send(context.Background(), ts.Client(), ts.URL, legacySessionToolsCallRequest("not-a-session-it-issued"))
			if err != nil {
				t.Fatal(err)
			}
			if status != http.StatusNotFound {
				t.Errorf("unknown session: HTTP %d, want 404; body %s", status, body)
			}
		})
	}
}

func TestJSONRPCMessage(t *testing.T) {
	const msg = `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`
	tests := []struct {
		name, contentType, body, want string
		wantErr                       bool
	}{
		{"json", "application/json", msg, msg, false},
		{"json with charset", "application/json; charset=utf-8", msg, msg, false},
		{"one event", "text/event-stream", "event: message\ndata: " + msg + "\n\n", msg, false},
		{"after a notification", "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{}}\n\n" +
				"id: 7\r\ndata: " + msg + "\r\n\r\n", msg, false},
		{"a server request is not the response", "text/event-stream",
			"data: {\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"elicitation/create\",\"params\":{}}\n\n", "", true},
		{"empty stream", "text/event-stream", ": keep-alive\n\n", "", true},
		{"other type", "text/plain", msg, "", true},
		{"no type", "", msg, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := jsonRPCMessage(tt.contentType, []byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
			if string(got) != tt.want {
				t.Errorf("message %s, want %s", got, tt.want)
			}
		})
	}
}

func TestCheckLegacyToolsCallResponse(t *testing.T) {
	const ok = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + expectedText + `"}]}}`
	tests := []struct {
		name, contentType, body string
		status                  int
		wantErr                 bool
	}{
		{"json", "application/json", ok, 200, false},
		{"sse", "text/event-stream", "data: " + ok + "\n\n", 200, false},
		{"2026 shape", "application/json", strings.Replace(ok, `"result":{`, `"result":{"resultType":"complete",`, 1), 200, true},
		{"error", "application/json", `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}}`, 200, true},
		{"status", "application/json", ok, 404, true},
		{"wrong text", "application/json", strings.Replace(ok, "simple", "other", 1), 200, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkLegacyToolsCallResponse(tt.status, tt.contentType, []byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestLegacyGoals(t *testing.T) {
	rate := func(name string, rps int64, err error) targetResult {
		return targetResult{Target: target{Name: name}, Result: loadResult{Requests: rps, DurationUS: 1e6}, Err: err}
	}
	tests := []struct {
		name    string
		results []targetResult
		want    []goal
	}{
		{"all met", []targetResult{
			rate("taskwire-legacy", 16000, nil), rate("taskwire", 20000, nil),
			rate("gosdk-stateful", 2000, nil), rate("bare", 20000, nil),
		}, []goal{
			{Desc: "taskwire-legacy >= 0.7x taskwire (modern)", Value: "0.80x", Known: true, Met: true},
			{Desc: "taskwire-legacy >= 5x gosdk-stateful", Value: "8.00x", Known: true, Met: true},
			{Desc: "taskwire (modern) >= 70% of bare", Value: "100.0%", Known: true, Met: true},
		}},
		{"missed, and a failed target", []targetResult{
			rate("taskwire-legacy", 9000, nil), rate("taskwire", 20000, nil),
			rate("gosdk-stateful", 2000, nil), rate("bare", 20000, errors.New("x")),
		}, []goal{
			{Desc: "taskwire-legacy >= 0.7x taskwire (modern)", Value: "0.45x", Known: true, Met: false},
			{Desc: "taskwire-legacy >= 5x gosdk-stateful", Value: "4.50x", Known: true, Met: false},
			{Desc: "taskwire (modern) >= 70% of bare", Value: "n/a"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := evalLegacyGoals(tt.results)
			if len(got) != len(tt.want) {
				t.Fatalf("goals %+v, want %+v", got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("goal %d = %+v, want %+v", i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestRequestPrintsTheSessionSetUp(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"request", "-scenario", scenarioLegacyToolsCall}, &stdout, &stdout); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"method":"initialize"`, "notifications/initialized", "Mcp-Session-Id: " + sessionPlaceholder, "# gosdk-stateful"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, &stdout)
		}
	}
}

func TestRunLegacyBenchmark(t *testing.T) {
	requireWrk(t)
	t.Setenv(asMainEnv, "1")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{
		"run", "-scenario", scenarioLegacyToolsCall, "-duration", "1s", "-warmup", "0s", "-connections", "8",
	}, &stdout, &stderr)
	t.Logf("stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`taskwire-legacy/taskwire +[0-9.]+x`, `taskwire-legacy/gosdk-stateful +[0-9.]+x`, `taskwire/bare +[0-9.]+x`,
		`taskwire-legacy >= 5x gosdk-stateful: [0-9.]+x`, `opened a 2025-11-25 session`,
	} {
		if !regexp.MustCompile(re).MatchString(stdout.String()) {
			t.Errorf("report lacks %s", re)
		}
	}
}

// TestWrkScriptNumbersRequests runs wrk with a unique-id script against a
// handler that records every id: no id may repeat, across threads and
// connections, and each body is otherwise the request's.
func TestWrkScriptNumbersRequests(t *testing.T) {
	wrk := requireWrk(t)
	bare, err := newBareHandler()
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := make(map[string]int)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var env struct {
			ID json.RawMessage `json:"id"`
		}
		_ = json.Unmarshal(body, &env)
		mu.Lock()
		seen[string(env.ID)]++
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		bare.ServeHTTP(w, r)
	}))
	defer ts.Close()
	tg, err := lookupTarget("bare")
	if err != nil {
		t.Fatal(err)
	}
	tg.Request.UniqueIDs = true
	script, err := writeWrkScript(t.TempDir(), tg)
	if err != nil {
		t.Fatal(err)
	}
	res, out, err := runWrk(context.Background(), loadConfig{
		Wrk: wrk, Threads: 2, Connections: 4, Duration: time.Second, Timeout: time.Second,
	}, script, ts.URL)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if p := res.Problem(); p != "" {
		t.Fatalf("run: %s\n%s", p, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 2 {
		t.Fatalf("ids seen %v: want many", seen)
	}
	for id, n := range seen {
		if n > 1 || id == "1" || id == "" {
			t.Errorf("id %q sent %d times", id, n)
		}
	}
}

func TestUniqueIDsNeedAnIDMember(t *testing.T) {
	tg := target{Name: "x", Request: request{Body: `{"jsonrpc":"2.0","method":"ping"}`, UniqueIDs: true}}
	if _, err := writeWrkScript(t.TempDir(), tg); err == nil {
		t.Error("a unique-id script was written for a body without an id")
	}
}

func TestRoundRatios(t *testing.T) {
	res := func(name string, rounds []float64, err error) targetResult {
		return targetResult{Target: target{Name: name}, Rounds: rounds, Err: err}
	}
	results := []targetResult{
		res("a", []float64{100, 300, 200}, nil),
		res("b", []float64{200, 300, 100}, nil),
		res("c", []float64{100, 100}, nil),
		res("d", []float64{100, 100, 100}, errors.New("x")),
	}
	if got, want := fmtRatios(roundRatios(results, "a", "b")), "0.50 1.00 2.00 (median 1.00x)"; got != want {
		t.Errorf("a/b: %q, want %q", got, want)
	}
	if got := roundRatios(results, "a", "c"); got != nil {
		t.Errorf("a/c with different round counts: %v, want nil", got)
	}
	if got := roundRatios(results, "a", "d"); got != nil {
		t.Errorf("a/d with a failed target: %v, want nil", got)
	}
}
