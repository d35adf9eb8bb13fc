package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// startTimeout bounds a node's start-up: opening (and migrating) the store
// and binding its port.
const startTimeout = 30 * time.Second

// proc is a taskwire process started by a test. It is killed, if still
// running, when the test ends; then its stderr is checked for panics and
// data races.
type proc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	stdout *syncBuffer
	stderr *syncBuffer
	done   chan struct{} // closed when the process has exited and been reaped
	err    error         // Wait's result, set before done is closed
	url    string        // the MCP endpoint of a serve process
}

// startProc starts the taskwire binary with args. A serve process is
// returned once it has printed its URL and answers server/discover.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	p := launchProc(t, name, args...)
	if len(args) > 0 && args[0] == "serve" {
		p.awaitServing()
	}
	return p
}

// launchProc starts the taskwire binary with args and returns at once.
func launchProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return launchBinary(t, taskwireBinary(t), name, args...)
}

// launchBinary starts the program bin with args and returns at once.
func launchBinary(t *testing.T, bin, name string, args ...string) *proc {
	t.Helper()
	p := &proc{t: t, name: name, stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Dir = t.TempDir() // relative defaults (reports/) stay out of the tree
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.SysProcAttr = childAttr()
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("%s: start: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(p.cleanup)
	return p
}

var servingLine = regexp.MustCompile(`serving MCP at (http://\S+)`)

// awaitServing waits for the printed URL, then for server/discover to
// answer.
func (p *proc) awaitServing() {
	p.t.Helper()
	deadline := time.Now().Add(startTimeout)
	for p.url == "" {
		if m := servingLine.FindStringSubmatch(p.stdout.String()); m != nil {
			p.url = m[1]
			break
		}
		if !p.alive() {
			p.t.Fatalf("%s exited before serving (%v)\n%s", p.name, p.err, p.output())
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s printed no URL within %v\n%s", p.name, startTimeout, p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
	c := newClient(p.t, p.url, "probe")
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		r, err := c.call(ctx, 0, mcp.MethodServerDiscover, "", nil)
		cancel()
		if err == nil && r.Status == 200 && r.Error == nil {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s: server/discover did not succeed within %v (last: %v %+v)\n%s", p.name, startTimeout, err, r, p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether the process is still running.
func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// pid is the process ID.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// kill sends SIGKILL and waits for the process to be reaped.
func (p *proc) kill() {
	p.t.Helper()
	if p.alive() {
		p.cmd.Process.Signal(syscall.SIGKILL)
	}
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		p.t.Fatalf("%s did not die after SIGKILL", p.name)
	}
}

// cleanup kills the process if it still runs, then fails the test if it
// panicked or the race detector reported a race.
func (p *proc) cleanup() {
	p.kill()
	stderr := p.stderr.String()
	for _, bad := range []string{"panic:", "WARNING: DATA RACE", "fatal error:"} {
		if strings.Contains(stderr, bad) {
			p.t.Errorf("%s: stderr contains %q:\n%s", p.name, bad, tail(stderr, 8000))
		}
	}
	if p.t.Failed() {
		p.t.Logf("%s (pid %d) output:\n%s", p.name, p.pid(), tail(p.output(), 6000))
	}
}

// checkHealthy fails the test when the process has exited or logged a
// panic or a data race so far.
func (p *proc) checkHealthy(t *testing.T) {
	t.Helper()
	if !p.alive() {
		t.Errorf("%s exited: %v\n%s", p.name, p.err, tail(p.output(), 4000))
	}
	for _, bad := range []string{"panic:", "WARNING: DATA RACE", "fatal error:"} {
		if strings.Contains(p.stderr.String(), bad) {
			t.Errorf("%s: stderr contains %q", p.name, bad)
		}
	}
}

// output is everything the process printed.
func (p *proc) output() string {
	return "--- stdout\n" + p.stdout.String() + "--- stderr\n" + p.stderr.String()
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// poll calls f every interval until it returns true, failing the test with
// what() after timeout.
func poll(t *testing.T, timeout, interval time.Duration, what func() string, f func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !f() {
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %s", timeout, what())
		}
		time.Sleep(interval)
	}
}

// stop sends SIGTERM and expects a graceful exit with status 0.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		if p.err != nil {
			t.Errorf("%s: exit after SIGTERM: %v\n%s", p.name, p.err, tail(p.output(), 4000))
		}
	case <-time.After(30 * time.Second):
		t.Errorf("%s did not stop within 30s of SIGTERM", p.name)
	}
}
