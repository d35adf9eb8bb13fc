package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// cliResult is one finished run of a client command of the binary.
type cliResult struct {
	stdout, stderr string
	code           int
}

// cliTimeout bounds one run of a client command.
const cliTimeout = 60 * time.Second

// runCLI runs the taskwire binary with args, with stdin empty (not a
// terminal) and no TASKWIRE_* variables but those in env, and returns its
// output and exit code.
func runCLI(t *testing.T, env []string, args ...string) cliResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), cliTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, taskwireBinary(t), args...)
	cmd.Env = append(cliEnviron(), env...)
	cmd.Dir = t.TempDir()
	var stdout, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("taskwire %q did not end within %v\n%s", args, cliTimeout, stderr.String())
	}
	r := cliResult{stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("taskwire %q: %v", args, err)
	}
	for _, bad := range []string{"panic:", "WARNING: DATA RACE", "fatal error:"} {
		if strings.Contains(r.stderr, bad) {
			t.Errorf("taskwire %q: stderr contains %q:\n%s", args, bad, r.stderr)
		}
	}
	return r
}

// cliEnviron is the test's environment without TASKWIRE_* variables.
func cliEnviron() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TASKWIRE_") {
			env = append(env, kv)
		}
	}
	return env
}

// startSQLiteServe starts `taskwire serve` on a fresh SQLite file.
func startSQLiteServe(t *testing.T) *proc {
	t.Helper()
	db := filepath.Join(t.TempDir(), "tasks.db")
	return startProc(t, "serve", "serve", "--addr", "127.0.0.1:0", "--store", "sqlite:"+db, "--workers", "2",
		"--log-level", "warn", "--shutdown-grace", "1s")
}

var (
	reportLine   = regexp.MustCompile(`(?m)^working: row \d+ of 1000 \(`)
	progressLine = regexp.MustCompile(`(?m)^(working|completed)(: .*)? \(\d[^)]*\)$`)
	hintTaskID   = regexp.MustCompile(`task ([0-9a-f]+-[0-9a-f]+) `)
	bareTaskID   = regexp.MustCompile(`^[0-9a-f]+-[0-9a-f]+$`)
)

// decodeStdout decodes a command's JSON output.
func decodeStdout[T any](t *testing.T, r cliResult) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil {
		t.Fatalf("stdout is not the expected JSON (%v); exit %d\n--- stdout\n%s--- stderr\n%s", err, r.code, r.stdout, r.stderr)
	}
	return v
}

// approval is the result of approvals.request.
type approval struct {
	Subject  string `json:"subject"`
	Approved bool   `json:"approved"`
	Comment  string `json:"comment"`
}

// TestCLI drives `taskwire serve` (SQLite) with the built CLI in separate
// processes: a report to its result with progress lines, an approval
// through its form on a pseudo-terminal and through `task answer` without
// one, --detach and a wait from a new process, Ctrl-C that detaches
// without cancelling, --timeout, an unreachable server, and tokens.
func TestCLI(t *testing.T) {
	srv := startSQLiteServe(t)
	url := []string{"--url", srv.url}

	t.Run("report with progress", func(t *testing.T) {
		r := runCLI(t, nil, append([]string{"call", "reports.generate", "accountId=acme", "rows=1000", "seconds=2.5"}, url...)...)
		rep := decodeStdout[Report](t, r)
		if r.code != 0 || rep.AccountID != "acme" || rep.Rows != 1000 || rep.Checksum != checksum("acme", 1000) {
			t.Errorf("exit %d, report %+v", r.code, rep)
		}
		// The worker reports every 200 ms and the runtime writes at most one
		// report a second, so a loaded machine may show only one row count
		// in 2.5 s: at least two progress lines, one with the rows done.
		if n, rows := len(progressLine.FindAllString(r.stderr, -1)), len(reportLine.FindAllString(r.stderr, -1)); n < 2 || rows < 1 {
			t.Errorf("%d progress lines on stderr (%d with rows), want at least 2 (1):\n%s", n, rows, r.stderr)
		}
		if !strings.Contains(r.stderr, "\ncompleted (") || strings.Contains(r.stderr, "\r") {
			t.Errorf("stderr is not a terminal: want one line per change ending in completed:\n%q", r.stderr)
		}
	})

	t.Run("approval through the form on a terminal", func(t *testing.T) {
		cmd := exec.Command(taskwireBinary(t), append([]string{"call", "approvals.request", "subject=Quarterly budget"}, url...)...)
		cmd.Env = cliEnviron()
		term := startPTY(t, cmd)
		term.answer(t, "Answer? accept, decline or cancel [accept]: ", "accept")
		term.answer(t, "Approve (boolean, required) Approve the request? y/n: ", "y")
		term.answer(t, "Comment (string) An optional note for the record: ", "signed off on a terminal")
		code := term.wait(t)
		out := term.String()
		if code != 0 || !strings.Contains(out, `"approved":true`) || !strings.Contains(out, `"comment":"signed off on a terminal"`) {
			t.Errorf("exit %d; terminal:\n%s", code, out)
		}
		if !strings.Contains(out, "\r\x1b[Kinput_required") {
			t.Errorf("the progress line was not redrawn in place on the terminal:\n%q", out)
		}
		if !strings.Contains(out, "The server asks:\r\n  Approve: Quarterly budget") {
			t.Errorf("the form does not show the message:\n%q", out)
		}
	})

	t.Run("approval without a terminal, then task answer", func(t *testing.T) {
		r := runCLI(t, nil, append([]string{"call", "approvals.request", "subject=Budget"}, url...)...)
		m := hintTaskID.FindStringSubmatch(r.stderr)
		if r.code != 7 || m == nil || !strings.Contains(r.stderr, "taskwire task answer --url "+srv.url+" "+m[1]+" 'approval=") {
			t.Fatalf("exit %d, want 7 with the answer command:\n%s", r.code, r.stderr)
		}
		id := m[1]
		a := runCLI(t, nil, append([]string{"task", "answer", id, `approval={"action":"accept","content":{"approve":false,"comment":"not now"}}`}, url...)...)
		if a.code != 0 {
			t.Fatalf("task answer: exit %d\n%s", a.code, a.stderr)
		}
		w := runCLI(t, nil, append([]string{"task", "wait", id}, url...)...)
		if got := decodeStdout[approval](t, w); w.code != 0 || got.Approved || got.Comment != "not now" || got.Subject != "Budget" {
			t.Errorf("task wait: exit %d, %+v", w.code, got)
		}
	})

	t.Run("detach, then wait in a new process", func(t *testing.T) {
		r := runCLI(t, nil, append([]string{"call", "--detach", "reports.generate", "accountId=later", "rows=5", "seconds=1"}, url...)...)
		id := strings.TrimSpace(r.stdout)
		if r.code != 0 || !bareTaskID.MatchString(id) || !strings.Contains(r.stderr, "taskwire task wait --url "+srv.url+" "+id) {
			t.Fatalf("--detach: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		w := runCLI(t, []string{"TASKWIRE_URL=" + srv.url}, "task", "wait", id)
		if rep := decodeStdout[Report](t, w); w.code != 0 || rep.AccountID != "later" || rep.Checksum != checksum("later", 5) {
			t.Errorf("task wait: exit %d, %+v", w.code, rep)
		}
	})

	t.Run("Ctrl-C detaches without cancelling", func(t *testing.T) {
		p := launchProc(t, "call", append([]string{"call", "reports.generate", "accountId=sigint", "rows=1000", "seconds=3"}, url...)...)
		poll(t, cliTimeout, 10*time.Millisecond, func() string { return "no progress line:\n" + p.output() }, func() bool {
			return reportLine.MatchString(p.stderr.String())
		})
		p.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-p.done:
		case <-time.After(cliTimeout):
			t.Fatal("call did not exit after SIGINT")
		}
		var ee *exec.ExitError
		m := regexp.MustCompile(`task (\S+) runs on; resume with: taskwire task wait --url (\S+) (\S+)\n`).FindStringSubmatch(p.stderr.String())
		if !errors.As(p.err, &ee) || ee.ExitCode() != 130 || m == nil || m[1] != m[3] || m[2] != srv.url {
			t.Fatalf("after SIGINT: %v, want exit 130 with the resume command\n%s", p.err, p.output())
		}
		w := runCLI(t, nil, append([]string{"task", "wait", m[1]}, url...)...)
		if rep := decodeStdout[Report](t, w); w.code != 0 || rep.AccountID != "sigint" {
			t.Errorf("the detached task: exit %d, %+v", w.code, rep)
		}
	})

	t.Run("timeout", func(t *testing.T) {
		began := time.Now()
		r := runCLI(t, nil, append([]string{"call", "--timeout", "1s", "reports.generate", "accountId=slow", "rows=1", "seconds=60"}, url...)...)
		if r.code != 124 || !strings.Contains(r.stderr, "--timeout 1s passed") {
			t.Errorf("exit %d, want 124\n%s", r.code, r.stderr)
		}
		if d := time.Since(began); d > 20*time.Second {
			t.Errorf("--timeout 1s took %v", d)
		}
		m := hintTaskID.FindStringSubmatch(r.stderr)
		if m == nil {
			// A machine so loaded that the call itself took a second.
			t.Skipf("the timeout passed before the task was created:\n%s", r.stderr)
		}
		id := m[1]
		if c := runCLI(t, nil, append([]string{"task", "cancel", id}, url...)...); c.code != 0 {
			t.Errorf("task cancel: exit %d\n%s", c.code, c.stderr)
		}
		if w := runCLI(t, nil, append([]string{"task", "wait", id}, url...)...); w.code != 6 {
			t.Errorf("waiting for the cancelled task: exit %d, want 6\n%s", w.code, w.stderr)
		}
	})

	t.Run("unreachable server", func(t *testing.T) {
		r := runCLI(t, []string{"TASKWIRE_URL=http://127.0.0.1:1/mcp"}, "call", "text.stats", "text=x")
		if r.code != 4 || !strings.Contains(r.stderr, "cannot reach http://127.0.0.1:1/mcp") {
			t.Errorf("exit %d, want 4\n%s", r.code, r.stderr)
		}
	})

	t.Run("tokens", func(t *testing.T) {
		// serve's development admission takes the Bearer token as the
		// caller: a task of alice's does not exist for bob.
		r := runCLI(t, []string{"TASKWIRE_TOKEN=alice"}, append([]string{"call", "--detach", "reports.generate", "accountId=mine", "rows=1", "seconds=0"}, url...)...)
		id := strings.TrimSpace(r.stdout)
		if r.code != 0 || !bareTaskID.MatchString(id) {
			t.Fatalf("--detach: exit %d\n%s", r.code, r.stderr)
		}
		if w := runCLI(t, nil, append([]string{"task", "wait", "--token", "alice", id}, url...)...); w.code != 0 {
			t.Errorf("alice: exit %d\n%s", w.code, w.stderr)
		}
		for _, tok := range [][]string{{"--token", "bob"}, nil} {
			g := runCLI(t, nil, append(append([]string{"task", "get", id}, tok...), url...)...)
			if g.code != 1 || !strings.Contains(g.stderr, "task not found") {
				t.Errorf("task get with %q: exit %d, want 1 (not found)\n%s", tok, g.code, g.stderr)
			}
		}
		if strings.Contains(srv.stderr.String(), "alice") {
			t.Error("the server logged the token")
		}
	})

	t.Run("help lists the exit codes", func(t *testing.T) {
		r := runCLI(t, nil, "help")
		for _, want := range []string{"tools ", "call ", "task ", "\n  124  ", "\n  7    "} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("help lacks %q", want)
			}
		}
		if u := runCLI(t, nil, "call"); u.code != 2 {
			t.Errorf("call without a tool: exit %d, want 2", u.code)
		}
	})
	srv.checkHealthy(t)
}

// ptyProc is a process on a pseudo-terminal: stdin, stdout and stderr.
type ptyProc struct {
	cmd     *exec.Cmd
	term    *os.File
	done    chan struct{} // closed when the output ended
	exited  chan struct{} // closed when the process has been reaped
	waitErr error         // cmd.Wait's result, set before exited is closed

	mu      sync.Mutex
	out     strings.Builder
	changed chan struct{} // signalled on every read
	offset  int           // where the next answer's prompt is looked for
}

func startPTY(t *testing.T, cmd *exec.Cmd) *ptyProc {
	t.Helper()
	f, err := pty.Start(cmd)
	if err != nil {
		t.Fatalf("pty: %v", err)
	}
	p := &ptyProc{cmd: cmd, term: f, done: make(chan struct{}), exited: make(chan struct{}), changed: make(chan struct{}, 1)}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	go func() { // ends when the process has exited and the terminal reads EIO
		defer close(p.done)
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			p.mu.Lock()
			p.out.Write(buf[:n])
			p.mu.Unlock()
			select {
			case p.changed <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		cmd.Process.Kill() // fails harmlessly once the process has exited
		<-p.exited
		f.Close()
		<-p.done
	})
	return p
}

func (p *ptyProc) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// answer waits for prompt after the previous one, then types line.
func (p *ptyProc) answer(t *testing.T, prompt, line string) {
	t.Helper()
	deadline := time.After(cliTimeout)
	for {
		p.mu.Lock()
		s := p.out.String()
		i := strings.Index(s[p.offset:], prompt)
		if i >= 0 {
			p.offset += i + len(prompt)
		}
		p.mu.Unlock()
		if i >= 0 {
			break
		}
		select {
		case <-p.changed:
		case <-p.done:
			t.Fatalf("the output ended before %q:\n%s", prompt, s)
		case <-deadline:
			t.Fatalf("no %q within %v:\n%s", prompt, cliTimeout, s)
		}
	}
	if _, err := p.term.Write([]byte(line + "\n")); err != nil {
		t.Fatalf("typing: %v", err)
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *ptyProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.exited:
		<-p.done
		var ee *exec.ExitError
		if errors.As(p.waitErr, &ee) {
			return ee.ExitCode()
		}
		if p.waitErr != nil {
			t.Fatalf("wait: %v", p.waitErr)
		}
		return 0
	case <-time.After(cliTimeout):
		t.Fatalf("the process did not exit:\n%s", p.String())
	}
	return -1
}
