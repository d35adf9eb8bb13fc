package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// cliRun is one run of a client command in this process.
type cliRun struct {
	Stdout, Stderr string
	Code           int
}

// cliOpts configure runCLI.
type cliOpts struct {
	stdin       string
	interactive bool
	env         map[string]string
	interrupts  <-chan os.Signal
	released    func()        // the env's releaseInterrupts
	stderr      *noticeBuffer // to watch stderr while the command runs
}

// runCLI runs `taskwire args...` (a client command) with a bounded context.
func runCLI(t *testing.T, o cliOpts, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	stdout := &syncBuffer{}
	stderr := o.stderr
	if stderr == nil {
		stderr = newNoticeBuffer("")
	}
	env := &cliEnv{
		stdin: strings.NewReader(o.stdin), stdout: stdout, stderr: stderr,
		getenv:      func(k string) string { return o.env[k] },
		interactive: o.interactive, interrupts: o.interrupts, releaseInterrupts: o.released, now: time.Now,
	}
	err := clientCommand(ctx, args[0], args[1:], env)
	if ctx.Err() != nil {
		t.Fatalf("taskwire %q did not end within %v", args, waitFor)
	}
	r := cliRun{Stdout: stdout.String(), Stderr: stderr.String(), Code: exitCode(err)}
	if err != nil && err.Error() != "" {
		r.Stderr += "taskwire: " + err.Error() + "\n"
	}
	return r
}

// noticeBuffer is a syncBuffer that closes seen once its content contains
// want.
type noticeBuffer struct {
	syncBuffer
	want string
	seen chan struct{}
	once sync.Once
}

func newNoticeBuffer(want string) *noticeBuffer {
	return &noticeBuffer{want: want, seen: make(chan struct{})}
}

func (b *noticeBuffer) Write(p []byte) (int, error) {
	n, err := b.syncBuffer.Write(p)
	if b.want != "" && strings.Contains(b.syncBuffer.String(), b.want) {
		b.once.Do(func() { close(b.seen) })
	}
	return n, err
}

// cliNode starts a node with one worker on a fresh SQLite file and returns
// the environment that points the commands at it.
func cliNode(t *testing.T) map[string]string {
	t.Helper()
	n := start(t, testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1))
	return map[string]string{urlEnv: n.URL()}
}

func TestToolsAndInlineCalls(t *testing.T) {
	env := cliNode(t)
	r := runCLI(t, cliOpts{env: env}, "tools")
	if r.Code != 0 || !regexp.MustCompile(`(?m)^  rows\s+integer\s+required\s+rows in the report`).MatchString(r.Stdout) {
		t.Errorf("tools: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = runCLI(t, cliOpts{env: env}, "tools", "--json")
	var tools []struct{ Name string }
	if err := json.Unmarshal([]byte(r.Stdout), &tools); err != nil || len(tools) != 5 {
		t.Errorf("tools --json: %v %+v\n%s", err, tools, r.Stdout)
	}

	r = runCLI(t, cliOpts{env: env}, "call", "text.stats", "text=hello world")
	if diff := cmp.Diff(cliRun{Stdout: `{"characters":11,"bytes":11,"words":2,"lines":1}` + "\n"}, r); diff != "" {
		t.Errorf("call text.stats (-want +got):\n%s", diff)
	}
	r = runCLI(t, cliOpts{env: env}, "call", "--json", "hash.sha256", "text=")
	var res struct {
		StructuredContent map[string]string `json:"structuredContent"`
		IsError           bool              `json:"isError"`
	}
	if err := json.Unmarshal([]byte(r.Stdout), &res); err != nil || r.Code != 0 ||
		res.StructuredContent["sha256"] != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("call --json: exit %d, %v\n%s", r.Code, err, r.Stdout)
	}

	// Required inputs given after "--" and as JSON count.
	r = runCLI(t, cliOpts{env: env}, "call", "reports.generate", "--", "accountId=-acme", "rows:=1", "seconds:=0")
	if r.Code != 0 || !strings.Contains(r.Stdout, `"accountId":"-acme"`) {
		t.Errorf(`call with "--" and key:=JSON: exit %d\n%s%s`, r.Code, r.Stdout, r.Stderr)
	}

	// A tool error is exit 1, with the tool's text on stdout.
	r = runCLI(t, cliOpts{env: env}, "call", "time.convert", "timeZone=Nowhere/Atlantis")
	if r.Code != exitToolError || !strings.Contains(r.Stdout, "unknown time zone") || !strings.Contains(r.Stderr, "isError") {
		t.Errorf("tool error: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	// Usage errors name what is wrong and send nothing to the tool.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"call"}, "a tool name is required"},
		{[]string{"call", "no.such.tool"}, `the server has no tool "no.such.tool"`},
		{[]string{"call", "reports.generate", "rows=many"}, `argument "rows": "many" is not an integer`},
		{[]string{"call", "reports.generate", "accountId=acme"},
			`call: tool "reports.generate" needs the arguments rows, seconds: add rows=VALUE seconds=VALUE`},
		{[]string{"call", "reports.generate", "--", "accountId=-acme", "seconds:=0"}, "needs the argument rows: add rows=VALUE"},
		{[]string{"call", "--header", "nocolon", "text.stats"}, `--header "nocolon": want K:V`},
		{[]string{"call", "--header", "Mcp-Method: x", "text.stats"}, "Header must not set Mcp-Method"},
		{[]string{"tools", "extra"}, "unexpected arguments"},
		{[]string{"task"}, "a subcommand is required"},
		{[]string{"task", "frob", "x"}, `unknown subcommand "frob"`},
		{[]string{"task", "get"}, "want exactly one task ID"},
		{[]string{"task", "answer", "id"}, "at least one KEY=JSON"},
	} {
		r := runCLI(t, cliOpts{env: env}, tc.args...)
		if r.Code != exitUsage || !strings.Contains(r.Stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", tc.args, r.Code, r.Stderr, exitUsage, tc.want)
		}
	}
}

func TestCallWaitsForReport(t *testing.T) {
	env := cliNode(t)
	r := runCLI(t, cliOpts{env: env}, "call", "reports.generate", "accountId=acme", "rows=1000", "seconds=2.5")
	var rep Report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Checksum != reportChecksum("acme", 1000) {
		t.Fatalf("exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.Stderr), "\n")
	if len(lines) < 2 || !strings.HasPrefix(lines[0], "working") || !strings.HasPrefix(lines[len(lines)-1], "completed") ||
		!regexp.MustCompile(`^working: row \d+ of 1000 \(\d`).MatchString(strings.Join(lines[1:], "\n")) {
		t.Errorf("progress lines:\n%s", r.Stderr)
	}
	if strings.Contains(r.Stderr, "\r") {
		t.Errorf("progress redrawn in place although stderr is not a terminal: %q", r.Stderr)
	}
}

// taskIDIn finds the task ID in a hint.
var taskIDIn = regexp.MustCompile(`task ([0-9a-f]+-[0-9a-f]+) `)

func TestApprovalWithoutTerminalThenAnswer(t *testing.T) {
	env := cliNode(t)
	r := runCLI(t, cliOpts{env: env}, "call", "approvals.request", "subject=Quarterly budget")
	m := taskIDIn.FindStringSubmatch(r.Stderr)
	if r.Code != exitInputRequired || m == nil {
		t.Fatalf("exit %d, want %d with the task ID\n%s", r.Code, exitInputRequired, r.Stderr)
	}
	id := m[1]
	wantHint := "taskwire task answer --url " + env[urlEnv] + " " + id +
		` 'approval={"action":"accept","content":{"approve":true,"comment":"..."}}'`
	for _, want := range []string{wantHint, "taskwire task wait --url " + env[urlEnv] + " " + id,
		`approval: elicitation/create "Approve: Quarterly budget"`, "approve (boolean, required) Approve: Approve the request?"} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the hint lacks %q:\n%s", want, r.Stderr)
		}
	}
	r = runCLI(t, cliOpts{env: env}, "task", "get", id)
	if r.Code != 0 || !strings.Contains(r.Stdout, "status   input_required") {
		t.Errorf("task get: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = runCLI(t, cliOpts{env: env}, "task", "answer", id, `approval={"action":"accept","content":{"approve":true,"comment":"fine"}}`)
	if r.Code != 0 || !strings.Contains(r.Stdout, "answered approval") {
		t.Fatalf("task answer: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = runCLI(t, cliOpts{env: env}, "task", "wait", id)
	var a Approval
	if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil || r.Code != 0 || !a.Approved || a.Comment != "fine" {
		t.Errorf("task wait: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
}

// TestApprovalFormFromScriptedInput answers the form from stdin, as on a
// terminal (the e2e tests use a real pseudo-terminal).
func TestApprovalFormFromScriptedInput(t *testing.T) {
	env := cliNode(t)
	r := runCLI(t, cliOpts{env: env, interactive: true, stdin: "accept\nmaybe\ny\nlooks right\n"},
		"call", "approvals.request", "subject=Quarterly budget")
	var a Approval
	if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil || r.Code != 0 || !a.Approved || a.Comment != "looks right" {
		t.Fatalf("exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	for _, want := range []string{"The server asks:\n  Approve: Quarterly budget\n", "Answer? accept, decline or cancel [accept]: ",
		"Approve (boolean, required) Approve the request? y/n: ", "  type y or n\n", "Comment (string) An optional note for the record: "} {
		if !strings.Contains(r.Stderr, want) {
			t.Errorf("the form lacks %q:\n%s", want, r.Stderr)
		}
	}
	// Declining completes the task with the decision.
	r = runCLI(t, cliOpts{env: env, interactive: true, stdin: "decline\n"}, "call", "approvals.request", "subject=Other")
	if err := json.Unmarshal([]byte(r.Stdout), &a); err != nil || r.Code != 0 || a.Approved {
		t.Errorf("declined: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	// The end of the input before an answer fails the command; the task waits.
	r = runCLI(t, cliOpts{env: env, interactive: true, stdin: ""}, "call", "approvals.request", "subject=Third")
	if r.Code != exitToolError || !strings.Contains(r.Stderr, "reading the answer: EOF") {
		t.Errorf("no input: exit %d\n%s", r.Code, r.Stderr)
	}
}

func TestDetachTimeoutAndInterrupt(t *testing.T) {
	env := cliNode(t)
	r := runCLI(t, cliOpts{env: env}, "call", "--detach", "reports.generate", "accountId=a", "rows=10", "seconds=0.5")
	id := strings.TrimSpace(r.Stdout)
	if r.Code != 0 || !regexp.MustCompile(`^[0-9a-f]+-[0-9a-f]+$`).MatchString(id) ||
		!strings.Contains(r.Stderr, "taskwire task wait --url "+env[urlEnv]+" "+id) {
		t.Fatalf("--detach: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r = runCLI(t, cliOpts{env: env}, "task", "wait", "--json", id); r.Code != 0 || !strings.Contains(r.Stdout, `"structuredContent"`) {
		t.Errorf("task wait: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}

	r = runCLI(t, cliOpts{env: env}, "call", "--timeout", "1s", "reports.generate", "accountId=a", "rows=10", "seconds=30")
	m := taskIDIn.FindStringSubmatch(r.Stderr)
	if r.Code != exitTimeout || m == nil || !strings.Contains(r.Stderr, "--timeout 1s passed") {
		t.Fatalf("--timeout: exit %d, want %d\n%s", r.Code, exitTimeout, r.Stderr)
	}
	slow := m[1]

	// Ctrl-C while waiting detaches: the task still runs.
	interrupts := make(chan os.Signal, 1)
	stderr := newNoticeBuffer("working")
	done := make(chan cliRun, 1)
	go func() {
		done <- runCLI(t, cliOpts{env: env, interrupts: interrupts, stderr: stderr}, "task", "wait", slow)
	}()
	select {
	case <-stderr.seen:
	case <-time.After(waitFor):
		t.Fatal("no progress line")
	}
	interrupts <- os.Interrupt
	r = <-done
	if r.Code != exitInterrupted || !strings.Contains(r.Stderr, "resume with: taskwire task wait --url "+env[urlEnv]+" "+slow) {
		t.Errorf("Ctrl-C: exit %d, want %d\n%s", r.Code, exitInterrupted, r.Stderr)
	}
	if r = runCLI(t, cliOpts{env: env}, "task", "get", slow); !strings.Contains(r.Stdout, "status   working") {
		t.Errorf("after Ctrl-C the task is not working:\n%s", r.Stdout)
	}
	if r = runCLI(t, cliOpts{env: env}, "task", "cancel", slow); r.Code != 0 || !strings.Contains(r.Stdout, "cancellation requested") {
		t.Errorf("task cancel: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r = runCLI(t, cliOpts{env: env}, "task", "wait", slow); r.Code != exitTaskCancelled {
		t.Errorf("waiting for a cancelled task: exit %d, want %d\n%s", r.Code, exitTaskCancelled, r.Stderr)
	}
}

func TestTokensAndUnreachableServer(t *testing.T) {
	env := cliNode(t)
	withToken := func(tok string) map[string]string { return map[string]string{urlEnv: env[urlEnv], tokenEnv: tok} }
	r := runCLI(t, cliOpts{env: withToken("alice")}, "call", "--detach", "reports.generate", "accountId=a", "rows=1", "seconds=0")
	id := strings.TrimSpace(r.Stdout)
	if r.Code != 0 || !strings.Contains(r.Stderr, "with the same --token or $TASKWIRE_TOKEN") || strings.Contains(r.Stderr, "alice") {
		t.Fatalf("--detach: exit %d\n%s", r.Code, r.Stderr)
	}
	if r = runCLI(t, cliOpts{env: env}, "task", "wait", "--token", "alice", id); r.Code != 0 {
		t.Errorf("the creator's token: exit %d\n%s", r.Code, r.Stderr)
	}
	for _, args := range [][]string{{"task", "get", id}, {"task", "wait", id}, {"task", "cancel", id}} {
		r = runCLI(t, cliOpts{env: withToken("bob")}, args...)
		if r.Code != exitToolError || !strings.Contains(r.Stderr, "task not found") {
			t.Errorf("%q as another caller: exit %d\n%s", args, r.Code, r.Stderr)
		}
	}

	r = runCLI(t, cliOpts{env: map[string]string{urlEnv: "http://127.0.0.1:1/mcp"}}, "tools")
	if r.Code != exitUnreachable || !strings.Contains(r.Stderr, "cannot reach http://127.0.0.1:1/mcp") {
		t.Errorf("unreachable: exit %d\n%s", r.Code, r.Stderr)
	}
}

func TestAuthenticationRequired(t *testing.T) {
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.Header.Get("Authorization") == "Bearer wrong" {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource"`)
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	env := map[string]string{urlEnv: srv.URL + "/mcp"}
	if r := runCLI(t, cliOpts{env: env}, "tools"); r.Code != exitAuth || !strings.Contains(r.Stderr, "requires authentication") {
		t.Errorf("no token: exit %d\n%s", r.Code, r.Stderr)
	}
	if r := runCLI(t, cliOpts{env: env}, "call", "--token", "wrong", "x"); r.Code != exitAuth || !strings.Contains(r.Stderr, "refused the credentials") {
		t.Errorf("refused token: exit %d\n%s", r.Code, r.Stderr)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 || got[0] != "" || got[len(got)-1] != "Bearer wrong" {
		t.Errorf("Authorization headers sent: %q", got)
	}
}

// TestCallInLegacySessions pins the 2025 revisions: in a 2025-06-18
// session reports.generate waits inline and its progress notifications
// show their numbers; in a 2025-11-25 session it runs as a task (the
// command prefers tasks) that a new command waits for with tasks/result.
func TestCallInLegacySessions(t *testing.T) {
	env := cliNode(t)
	r := runCLI(t, cliOpts{env: env}, "call", "--protocol", "2025-06-18", "reports.generate", "accountId=acme", "rows=1000", "seconds=2.5")
	var rep Report
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Checksum != reportChecksum("acme", 1000) {
		t.Fatalf("2025-06-18: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	if !regexp.MustCompile(`(?m)^working: row \d+ of 1000 \[\d+/1000 \d+%\] \(`).MatchString(r.Stderr) {
		t.Errorf("2025-06-18: no progress numbers:\n%s", r.Stderr)
	}
	r = runCLI(t, cliOpts{env: env}, "call", "--protocol", "2025-11-25", "--detach", "reports.generate", "accountId=acme", "rows=10", "seconds=0.5")
	id := strings.TrimSpace(r.Stdout)
	if r.Code != 0 || id == "" || strings.Contains(id, "{") {
		t.Fatalf("2025-11-25 --detach: exit %d, want a task ID\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	r = runCLI(t, cliOpts{env: env}, "task", "wait", "--protocol", "2025-11-25", id)
	if err := json.Unmarshal([]byte(r.Stdout), &rep); err != nil || r.Code != 0 || rep.Rows != 10 {
		t.Errorf("2025-11-25 task wait: exit %d, %v\n%s%s", r.Code, err, r.Stdout, r.Stderr)
	}
	r = runCLI(t, cliOpts{env: env}, "task", "get", "--protocol", "2025-11-25", id)
	if r.Code != 0 || !strings.Contains(r.Stdout, "status   completed") {
		t.Errorf("2025-11-25 task get: exit %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if r = runCLI(t, cliOpts{env: env}, "tools", "--protocol", "2024-11-05"); r.Code != exitUsage {
		t.Errorf("an unknown revision: exit %d, want %d\n%s", r.Code, exitUsage, r.Stderr)
	}
}

// TestInterruptWithoutTask: Ctrl-C also ends a command that is not
// waiting for a task (here tools, against a server that never answers).
func TestInterruptWithoutTask(t *testing.T) {
	release := make(chan struct{})
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	interrupts := make(chan os.Signal, 1)
	done := make(chan cliRun, 1)
	go func() {
		done <- runCLI(t, cliOpts{env: map[string]string{urlEnv: srv.URL + "/mcp"}, interrupts: interrupts}, "tools")
	}()
	<-arrived
	interrupts <- os.Interrupt
	if r := <-done; r.Code != exitInterrupted || !strings.Contains(r.Stderr, "interrupted") {
		t.Errorf("exit %d, want %d\n%s", r.Code, exitInterrupted, r.Stderr)
	}
	// --timeout bounds it too.
	r := runCLI(t, cliOpts{env: map[string]string{urlEnv: srv.URL + "/mcp"}}, "task", "get", "--timeout", "200ms", "some-id")
	if r.Code != exitTimeout || !strings.Contains(r.Stderr, "--timeout 200ms passed") {
		t.Errorf("--timeout: exit %d, want %d\n%s", r.Code, exitTimeout, r.Stderr)
	}
}

// TestNoEndpointAtURL points the commands at a URL with a wrong path, of a
// real node and of a plain web server that answers 404 to everything: one
// line names the URL and hints at the path, and the exit code is 4.
func TestNoEndpointAtURL(t *testing.T) {
	plain := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(plain.Close)
	node := strings.TrimSuffix(cliNode(t)[urlEnv], "/mcp")
	for _, url := range []string{node + "/", node + "/mcp/v1", plain.URL + "/mcp"} {
		want := cliRun{Code: exitUnreachable,
			Stderr: "taskwire: no MCP endpoint at " + url + " (HTTP 404); is the path right? taskwire serve listens at /mcp\n"}
		for _, args := range [][]string{{"tools"}, {"call", "text.stats", "text=a"}, {"task", "get", "some-id"}} {
			r := runCLI(t, cliOpts{env: map[string]string{urlEnv: url}}, args...)
			if diff := cmp.Diff(want, r); diff != "" {
				t.Errorf("%q at %s (-want +got):\n%s", args, url, diff)
			}
		}
	}
}
