package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// buildTaskwire builds cmd/taskwire of the module the bench module replaces
// into dir. It builds inside that module, with its go.sum: the bench
// module's go.sum lists only what the bench's own packages import, and
// taskwire's command imports more (Prometheus, OpenTelemetry).
func buildTaskwire(ctx context.Context, dir string) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "list", "-m", "-f", "{{.Dir}}", "github.com/taskwire/taskwire").Output()
	if err != nil {
		return "", fmt.Errorf("finding the taskwire module: %w", err)
	}
	bin := filepath.Join(dir, "taskwire")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/taskwire")
	cmd.Dir = strings.TrimSpace(string(out))
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building taskwire: %v\n%s", err, out)
	}
	return bin, nil
}

// server is the `taskwire serve` process under attack.
type server struct {
	cmd  *exec.Cmd
	addr string // host:port
	done chan struct{}
	gone atomic.Bool
}

const servingPrefix = "taskwire: serving MCP at http://"

// startServer starts `taskwire serve` on a free loopback port with the
// descriptor limit cfg.NoFile (set by the shell's ulimit, which the Go
// runtime of the child keeps since soft and hard limits are equal) and
// waits for it to print its address.
func startServer(ctx context.Context, cfg config, bin, dir string, stderr io.Writer) (*server, error) {
	args := []string{bin, "serve", "--addr", "127.0.0.1:0", "--store", "sqlite:" + filepath.Join(dir, "soak.db"),
		"--workers", "4", "--reports-dir", filepath.Join(dir, "reports"), "--body-timeout", cfg.BodyTimeout.String(),
		"--shutdown-grace", "2s", "--log-level", "warn"}
	script := fmt.Sprintf(`ulimit -n %d && exec "$@"`, cfg.NoFile)
	cmd := exec.Command("/bin/sh", append([]string{"-c", script, "sh"}, args...)...)
	cmd.SysProcAttr = childAttr()
	if cfg.Verbose {
		cmd.Stderr = stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting taskwire serve: %w", err)
	}
	s := &server{cmd: cmd, done: make(chan struct{})}
	addr := make(chan string, 1)
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), servingPrefix); ok {
				addr <- strings.TrimSuffix(rest, "/mcp")
			}
		}
		cmd.Wait()
		s.gone.Store(true)
	}()
	select {
	case s.addr = <-addr:
		return s, nil
	case <-s.done:
		return nil, fmt.Errorf("taskwire serve exited before serving (run with -v for its log)")
	case <-time.After(30 * time.Second):
	case <-ctx.Done():
	}
	s.Close()
	return nil, fmt.Errorf("taskwire serve did not start")
}

// rssKB returns the server's resident set size.
func (s *server) rssKB() (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, err
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			return strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
		}
	}
	return 0, fmt.Errorf("no VmRSS in /proc/%d/status", s.cmd.Process.Pid)
}

// exited reports whether the server stopped by itself.
func (s *server) exited() bool { return s.gone.Load() }

// Close stops the server: SIGTERM, then SIGKILL after 5 s.
func (s *server) Close() {
	if s.gone.Load() {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// raiseNoFile raises this process's descriptor limit to its hard limit:
// the attacks hold more connections than the server may.
func raiseNoFile() {
	var r syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r) == nil && r.Cur < r.Max {
		r.Cur = r.Max
		syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r)
	}
}
