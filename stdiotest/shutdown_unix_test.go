//go:build unix

package stdiotest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// hostStep is how long the TypeScript and Python SDKs wait at each step of
// stopping a stdio server: they close its stdin, wait hostStep, send
// SIGTERM, wait hostStep again and send SIGKILL.
const hostStep = 2 * time.Second

// TestHostStopReleasesRunningJob stops a `taskwire serve --stdio` whose
// worker runs a durable task the way the hosts do, and checks that the
// process exits by itself before the SIGKILL, having handed the job back:
// a second process on the same store finishes the task in about the task's
// own duration, not after the first process's lease (two minutes here, so
// that a job left claimed could not be finished within the test's wait).
// With a 2025 call waiting inline for the task, the call is answered (the
// task goes on) rather than holding the exit, and the host's call again
// on the next process waits for the same task.
func TestHostStopReleasesRunningJob(t *testing.T) {
	for _, tc := range []struct {
		name   string
		eof    bool // the host closes stdin first, as the SDKs do
		inline bool // a 2025-06-18 client without tasks waits inline for the task
	}{
		{"stdin closed, then SIGTERM, then SIGKILL", true, false},
		{"SIGTERM with stdin open, then SIGKILL", false, false},
		{"a call waiting inline, stdin closed, then SIGTERM, then SIGKILL", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testHostStop(t, tc.eof, tc.inline)
		})
	}
}

func testHostStop(t *testing.T, eof, inline bool) {
	const (
		lease   = 2 * time.Minute
		seconds = 5 // the task's work: long enough to be running throughout the stop
		margin  = 15 * time.Second
	)
	db := filepath.Join(t.TempDir(), "tasks.db")
	cmd := serveCmd(t, db, "--lease", lease.String())
	p := startLines(t, cmd)
	args := map[string]any{"accountId": "host-stop", "rows": 1000, "seconds": seconds, "idempotencyKey": "host-stop"}
	var task struct {
		TaskID string `json:"taskId"`
	}
	if inline {
		p.startInline(t, args)
	} else {
		created := p.call(t, "tools/call", map[string]any{"name": "reports.generate", "arguments": args})
		if err := json.Unmarshal(created, &task); err != nil || task.TaskID == "" {
			t.Fatalf("tools/call: %s", created)
		}
	}
	// The handler runs once the task reports its first progress.
	deadline := time.Now().Add(waitLimit)
	for !inline {
		var got struct {
			StatusMessage string `json:"statusMessage"`
		}
		json.Unmarshal(p.call(t, "tasks/get", map[string]any{"taskId": task.TaskID}), &got)
		if strings.HasPrefix(got.StatusMessage, "row ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task reported no progress within %v", waitLimit)
		}
		time.Sleep(50 * time.Millisecond) // polling another process: no event to wait for
	}

	// The host's sequence.
	var steps []string
	stopped := time.Now()
	if eof {
		p.stdin.Close()
		steps = append(steps, "closed stdin")
		if !p.exitedWithin(hostStep) {
			cmd.Process.Signal(syscall.SIGTERM)
			steps = append(steps, "SIGTERM")
		}
	} else {
		cmd.Process.Signal(syscall.SIGTERM)
		steps = append(steps, "SIGTERM")
	}
	if !p.exitedWithin(hostStep) {
		cmd.Process.Kill()
		<-p.exited
		t.Fatalf("serve --stdio had to be killed after %v", steps)
	}
	t.Logf("exited by itself %v after the first step of %v: %v", time.Since(stopped), steps, p.waitErr)
	if p.waitErr != nil {
		t.Errorf("serve --stdio: %v", p.waitErr)
	}
	if inline { // the call was answered: the task goes on without it
		answered := false
		for line := range p.lines {
			answered = answered || strings.Contains(string(line), `"id":2,`) && strings.Contains(string(line), "still running")
		}
		if !answered {
			t.Error("the call waiting inline got no answer saying the task goes on")
		}
	}

	// The next process claims the released job at once.
	start := time.Now()
	if inline {
		// The host calls again: the same key and arguments reach the same
		// task, and the call waits for it.
		p2 := startLines(t, serveCmd(t, db, "--lease", lease.String()))
		p2.startInline(t, args)
		res := p2.inlineResult(t)
		if !strings.Contains(string(res), `"accountId":"host-stop"`) || strings.Contains(string(res), `"isError":true`) {
			t.Fatalf("the call again: %s", res)
		}
		p2.stdin.Close()
	} else {
		awaitCompletion(t, serveCmd(t, db, "--lease", lease.String()), task.TaskID)
	}
	took := time.Since(start)
	t.Logf("the second process completed the task %v after it started", took)
	if took > seconds*time.Second+margin {
		t.Errorf("the second process took %v, want about the task's %ds (the lease is %v)", took, seconds, lease)
	}
}

// awaitCompletion starts cmd, a `serve --stdio`, and listens for the task
// until it completes.
func awaitCompletion(t *testing.T, cmd *exec.Cmd, taskID string) {
	t.Helper()
	c := dialRaw(t, cmd)
	defer c.conn.Close()
	listenID := c.send("subscriptions/listen", map[string]any{"notifications": map[string]any{"taskIds": []string{taskID}}})
	for done := false; !done; {
		switch m := c.read().(type) {
		case *jsonrpc.Request:
			if m.Method != "notifications/tasks" {
				continue
			}
			if strings.Contains(string(m.Params), `"status":"completed"`) {
				done = true
			} else if !strings.Contains(string(m.Params), `"status":"working"`) {
				t.Fatalf("task ended: %s", m.Params)
			}
		case *jsonrpc.Response:
			if m.ID == listenID {
				t.Fatalf("listen ended early: %s %v", m.Result, m.Error)
			}
		}
	}
}

// lineProc is a `serve --stdio` subprocess spoken to line by line on pipes
// the test holds, so that it can close stdin and signal as a host does.
type lineProc struct {
	stdin   io.WriteCloser
	lines   chan []byte // stdout, one message a line; closed at EOF
	exited  chan struct{}
	waitErr error // set before exited is closed
	next    int
}

func startLines(t *testing.T, cmd *exec.Cmd) *lineProc {
	t.Helper()
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
	p := &lineProc{stdin: stdin, lines: make(chan []byte, 64), exited: make(chan struct{})}
	read := make(chan struct{})
	go func() { // ends at the process's exit, which closes stdout
		defer close(read)
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
	}()
	go func() {
		<-read // Wait closes stdout: read it all first
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { // kills it only when the test failed before it ended
		cmd.Process.Kill()
		for range p.lines {
		}
		<-p.exited
	})
	return p
}

// startInline opens a 2025-06-18 session without tasks and calls
// reports.generate with args, a call that waits inline (id 2); it returns
// once the task reports its first progress, its handler running.
func (p *lineProc) startInline(t *testing.T, args map[string]any) {
	t.Helper()
	fmt.Fprintln(p.stdin, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	fmt.Fprintln(p.stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 2, "method": "tools/call",
		"params": map[string]any{"name": "reports.generate", "arguments": args, "_meta": map[string]any{"progressToken": "p"}}})
	fmt.Fprintf(p.stdin, "%s\n", b)
	timeout := time.After(waitLimit)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatal("stdout ended before the task's progress")
			}
			if strings.Contains(string(line), `"notifications/progress"`) && strings.Contains(string(line), `"message":"row `) {
				return
			}
			if strings.Contains(string(line), `"id":2,`) {
				t.Fatalf("the inline call ended early: %s", line)
			}
		case <-timeout:
			t.Fatalf("no progress within %v", waitLimit)
		}
	}
}

// inlineResult returns the response of startInline's call (id 2).
func (p *lineProc) inlineResult(t *testing.T) json.RawMessage {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatal("stdout ended before the inline call's response")
			}
			if strings.Contains(string(line), `"id":2,`) {
				return line
			}
		case <-timeout:
			t.Fatalf("no response to the inline call within %v", waitLimit)
		}
	}
}

// exitedWithin reports whether the process exits within d.
func (p *lineProc) exitedWithin(d time.Duration) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(d):
		return false
	}
}

// call sends a 2026-07-28 request that declares the Tasks extension and
// returns its result; other messages are skipped.
func (p *lineProc) call(t *testing.T, method string, params map[string]any) json.RawMessage {
	t.Helper()
	p.next++
	params["_meta"] = tasksMeta
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.next, "method": method, "params": params})
	if _, err := fmt.Fprintf(p.stdin, "%s\n", b); err != nil {
		t.Fatalf("write %s: %v", method, err)
	}
	timeout := time.After(waitLimit)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("%s: stdout ended", method)
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil || string(m.ID) != fmt.Sprint(p.next) {
				continue
			}
			if m.Error != nil {
				t.Fatalf("%s: %s", method, m.Error)
			}
			return m.Result
		case <-timeout:
			t.Fatalf("%s: no response within %v", method, waitLimit)
		}
	}
}
