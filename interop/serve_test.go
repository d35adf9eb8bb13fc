package interop

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// waitFor bounds every wait of these tests: the build excepted, no step of
// a flow should take this long.
const waitFor = 60 * time.Second

// buildTimeout bounds the build of the taskwire binary in TestMain.
const buildTimeout = 10 * time.Minute

// taskwireBin is the path of the taskwire binary TestMain builds from the
// repository; every test runs it as a real process.
var taskwireBin string

func TestMain(m *testing.M) {
	if dir := os.Getenv("INTEROP_MCPGO_STDIO_DIR"); dir != "" {
		// The test binary as an mcp-go stdio server the gateway starts
		// (gateway_stdio_test.go).
		os.Exit(serveMCPGoStdio(dir))
	}
	if os.Getenv(subsEnv) != "" {
		// The test binary as a go-sdk stdio server with subscriptions
		// (gateway_subs_test.go).
		os.Exit(serveGoSDKSubsStdio())
	}
	os.Exit(runMain(m))
}

// runMain builds the binary into a temporary directory, runs the tests
// and removes the directory.
func runMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "taskwire-interop-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin, err := buildTaskwire(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "interop:", err)
		return 1
	}
	taskwireBin = bin
	return m.Run()
}

// buildTaskwire builds ./cmd/taskwire of the repository (the parent of this
// module) into dir, with the race detector when the tests have it.
func buildTaskwire(dir string) (string, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("find the go command: %w", err)
	}
	repo, err := filepath.Abs("..")
	if err != nil {
		return "", fmt.Errorf("locate the repository: %w", err)
	}
	bin := filepath.Join(dir, "taskwire")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "./cmd/taskwire")
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, args...)
	cmd.Dir = repo
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go %s in %s: %w\n%s", strings.Join(args, " "), repo, err, out)
	}
	return bin, nil
}

// serveProc is a running `taskwire serve` process.
type serveProc struct {
	// URL is the MCP endpoint, http://127.0.0.1:PORT/mcp.
	URL string
	// Dir is the process's working directory, which holds its SQLite file
	// taskwire.db and the reports/ directory beside it.
	Dir string

	cmd    *exec.Cmd
	stderr *syncBuffer
	exited chan struct{} // closed once cmd.Wait has returned
	err    error         // cmd.Wait's error, set before exited is closed
}

// startServe starts `taskwire serve` on its defaults in a fresh temporary
// working directory, with only --addr chosen (a free loopback port), and
// stops it with SIGTERM when the test ends, failing the test unless it
// exits cleanly. The environment is the test's without TASKWIRE_*
// variables, so that the default store (sqlite:taskwire.db) applies.
func startServe(t *testing.T) *serveProc {
	t.Helper()
	return startServeIn(t, t.TempDir(), "127.0.0.1:0")
}

// startServeIn is startServe in the working directory dir, listening on
// addr.
func startServeIn(t *testing.T, dir, addr string) *serveProc {
	t.Helper()
	p := &serveProc{Dir: dir, stderr: &syncBuffer{}, exited: make(chan struct{})}
	p.cmd = exec.Command(taskwireBin, "serve", "--addr", addr)
	p.cmd.Dir = dir
	p.cmd.Env = cleanEnv()
	p.cmd.Stderr = p.stderr
	p.cmd.SysProcAttr = childAttr()
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatalf("stdout pipe: %v", err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start taskwire serve: %v", err)
	}
	urls := make(chan string, 1)
	// The scanner goroutine ends when the process closes its standard
	// output, which it does on exit at the latest.
	go scanURL(stdout, urls)
	go func() {
		p.err = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() { p.stop(t) })

	timer := time.NewTimer(waitFor)
	defer timer.Stop()
	select {
	case u, ok := <-urls:
		if !ok {
			<-p.exited
			t.Fatalf("taskwire serve printed no URL (exit: %v); stderr:\n%s", p.err, p.stderr)
		}
		p.URL = u
	case <-p.exited:
		t.Fatalf("taskwire serve exited before serving: %v; stderr:\n%s", p.err, p.stderr)
	case <-timer.C:
		t.Fatalf("taskwire serve printed no URL within %v; stderr:\n%s", waitFor, p.stderr)
	}
	return p
}

// servingPrefix starts the line on which serve prints its URL.
const servingPrefix = "taskwire: serving MCP at "

// scanURL sends the URL serve prints on out, then drains out; it closes
// urls when out ends without one.
func scanURL(out io.Reader, urls chan<- string) {
	sc := bufio.NewScanner(out)
	sent := false
	for sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), servingPrefix); ok && !sent {
			urls <- strings.TrimSpace(u)
			sent = true
		}
	}
	_, _ = io.Copy(io.Discard, out)
	if !sent {
		close(urls)
	}
}

// stop sends SIGTERM and waits for a clean exit; a process that does not
// exit within waitFor is killed and fails the test.
func (p *serveProc) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.exited:
	default:
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
			t.Errorf("signal taskwire serve: %v", err)
		}
		timer := time.NewTimer(waitFor)
		defer timer.Stop()
		select {
		case <-p.exited:
		case <-timer.C:
			_ = p.cmd.Process.Kill()
			<-p.exited
			t.Errorf("taskwire serve did not stop within %v of SIGTERM", waitFor)
		}
	}
	if p.err != nil {
		t.Errorf("taskwire serve exited with %v", p.err)
	}
	if t.Failed() {
		t.Logf("taskwire serve stderr:\n%s", p.stderr)
	}
}

// restart stops the process (failing the test unless it exits cleanly)
// and starts serve again in the same working directory on the same
// address, so that a client keeps its URL.
func (p *serveProc) restart(t *testing.T) *serveProc {
	t.Helper()
	p.stop(t)
	u, err := url.Parse(p.URL)
	if err != nil {
		t.Fatalf("parse %q: %v", p.URL, err)
	}
	q := startServeIn(t, p.Dir, u.Host)
	if q.URL != p.URL {
		t.Fatalf("restarted at %s, want %s", q.URL, p.URL)
	}
	return q
}

// Stderr returns what the process has logged so far.
func (p *serveProc) Stderr() string { return p.stderr.String() }

// cleanEnv is the test's environment without TASKWIRE_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TASKWIRE_") {
			env = append(env, kv)
		}
	}
	return env
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
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
