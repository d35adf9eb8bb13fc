package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/taskwire/taskwire/conformance/fixture"
)

// TestTasksGetSetupAndTargets creates the scenario's task on the taskwire
// fixture, then checks that both targets answer tasks/get of it with the
// completed task, in the same shape and size.
func TestTasksGetSetupAndTargets(t *testing.T) {
	fx, err := fixture.New(fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer fx.Close()
	tw := httptest.NewServer(fx)
	defer tw.Close()
	id, err := createCompletedTask(context.Background(), tw.Client(), tw.URL)
	if err != nil {
		t.Fatal(err)
	}
	bareHandler, _ := newBareHandler()
	bare := httptest.NewServer(bareHandler)
	defer bare.Close()

	exp := tasksGetExpectation(id)
	var bodies [][]byte
	for _, ts := range []*httptest.Server{tw, bare} {
		body, err := verifyExpect(context.Background(), ts.Client(), ts.URL, tasksGetRequest(id), exp)
		if err != nil {
			t.Fatalf("%s: %v", ts.URL, err)
		}
		for _, want := range exp.Contains {
			if !bytes.Contains(body, []byte(want)) {
				t.Errorf("body %s lacks %s", body, want)
			}
		}
		bodies = append(bodies, body)
	}
	if err := sameShape(bodies[0], bodies[1]); err != nil {
		t.Errorf("taskwire and bare answers differ: %v\n%s\n%s", err, bodies[0], bodies[1])
	}
	// Another task's ID is not the benchmark's task.
	if _, err := verifyExpect(context.Background(), bare.Client(), bare.URL, tasksGetRequest(id), tasksGetExpectation(randomTaskID())); err == nil {
		t.Error("verification accepted a response for another task")
	}
}

func TestCheckTasksGetResponse(t *testing.T) {
	const id = "t-1"
	good := `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","taskId":"t-1","status":"completed","result":{"content":[{"type":"text","text":"Computed \"\" in 0s."}]}}}`
	if err := checkTasksGetResponse(200, "application/json", []byte(good), id); err != nil {
		t.Fatalf("good response rejected: %v", err)
	}
	for name, body := range map[string]string{
		"working":   strings.Replace(good, `"completed"`, `"working"`, 1),
		"other id":  strings.Replace(good, `"t-1"`, `"t-2"`, 1),
		"isError":   strings.Replace(good, `"content"`, `"isError":true,"content"`, 1),
		"text":      strings.Replace(good, `in 0s.`, `in 1s.`, 1),
		"error":     `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"Invalid params"}}`,
		"task type": strings.Replace(good, `"resultType":"complete","taskId"`, `"resultType":"task","taskId"`, 1),
	} {
		if err := checkTasksGetResponse(200, "application/json", []byte(body), id); err == nil {
			t.Errorf("%s: accepted %s", name, body)
		}
	}
	if err := checkTasksGetResponse(500, "application/json", []byte(good), id); err == nil {
		t.Error("accepted HTTP 500")
	}
}

func TestSameShape(t *testing.T) {
	a := `{"a":1,"b":[{"c":"xy"}]}`
	if err := sameShape([]byte(a), []byte(`{"b":[{"c":"zz"}],"a":2}`)); err != nil {
		t.Errorf("same shape rejected: %v", err)
	}
	for _, b := range []string{
		`{"a":1,"b":[{"c":"xyz"}]}`,  // size
		`{"a":1,"b":[{"d":"xy"}]}`,   // member
		`{"a":"1","b":[{"c":"x"}]}`,  // kind
		`{"a":1,"b":[{"c":"xy"},1]}`, // length
	} {
		if err := sameShape([]byte(a), []byte(b)); err == nil {
			t.Errorf("sameShape(%s, %s) = nil", a, b)
		}
	}
}

func TestBareTasksGetEchoesIDs(t *testing.T) {
	h, _ := newBareHandler()
	rec := httptest.NewRecorder()
	body := strings.Replace(tasksGetRequest("abc").Body, `"id":1`, `"id":"x"`, 1)
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, endpointPath, strings.NewReader(body)))
	want := bareTaskPrefix + `"x"` + bareTaskMiddle + `"abc"` + bareTaskSuffix
	if got := rec.Body.String(); got != want {
		t.Fatalf("body %s, want %s", got, want)
	}
	if cc := rec.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	rec = httptest.NewRecorder()
	body = `{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":7}}`
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, endpointPath, strings.NewReader(body)))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("non-string taskId: status %d, want 400", rec.Code)
	}
}

func TestWrkScriptChecksTheTask(t *testing.T) {
	script := wrkScriptExpect("taskwire", tasksGetRequest("t-1"), tasksGetExpectation("t-1"))
	for _, want := range []string{
		`wrk.headers["Mcp-Method"] = "tasks/get"`,
		`wrk.headers["Mcp-Name"] = "t-1"`,
		`local expected = {"\"taskId\":\"t-1\"", "\"status\":\"completed\"", "Computed \\\"\\\" in 0s."}`,
	} {
		if !strings.Contains(script, want) {
			t.Errorf("script lacks %s:\n%s", want, script)
		}
	}
}

func TestScenarioTargets(t *testing.T) {
	var stderr bytes.Buffer
	if _, err := parseBenchFlags([]string{"-scenario", "tasks-get", "-targets", "taskwire,gosdk"}, &stderr); err == nil {
		t.Error("tasks-get accepted the gosdk target")
	}
	cfg, err := parseBenchFlags([]string{"-scenario", "tasks-get"}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Targets) != 2 || cfg.Targets[0].Name != "taskwire" || cfg.Targets[1].Name != "bare" {
		t.Errorf("default tasks-get targets %v", cfg.Targets)
	}
	if _, err := parseBenchFlags([]string{"-scenario", "nope"}, &stderr); err == nil {
		t.Error("unknown scenario accepted")
	}
}

func TestRunTasksGetBenchmark(t *testing.T) {
	requireWrk(t)
	for _, mode := range []string{"inprocess", "subprocess"} {
		t.Run(mode, func(t *testing.T) {
			if mode == "subprocess" {
				t.Setenv(asMainEnv, "1")
			}
			var stdout, stderr bytes.Buffer
			// bare first: taskwire must still be prepared first.
			err := run(context.Background(), []string{
				"run", "-scenario", "tasks-get", "-mode", mode, "-targets", "bare,taskwire",
				"-duration", "1s", "-warmup", "0s", "-connections", "8",
			}, &stdout, &stderr)
			t.Logf("stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"same shape and size", "created task "} {
				if !strings.Contains(stdout.String(), want) {
					t.Errorf("report lacks %q", want)
				}
			}
			if !regexp.MustCompile(`taskwire/bare +[0-9.]+x`).MatchString(stdout.String()) {
				t.Errorf("report lacks the taskwire/bare ratio")
			}
			if !strings.Contains(stdout.String(), "taskwire tasks/get >= 70% of bare") {
				t.Errorf("report lacks the tasks/get goal")
			}
		})
	}
}
