package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// runningTarget is a target being served, in this process or in a
// subprocess, at a loopback address.
type runningTarget interface {
	// Addr returns the host:port the target listens on.
	Addr() string
	// Close stops the target.
	Close() error
}

// subprocess is a target served by "mcpbench serve" in a child process.
type subprocess struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	addr  string
	// exited is closed once cmd.Wait has returned; waitErr is then set.
	exited  chan struct{}
	waitErr error
}

// subprocessOptions configures startSubprocess.
type subprocessOptions struct {
	// GoMaxProcs, if positive, sets GOMAXPROCS in the child.
	GoMaxProcs int
	// MaxLifetime bounds how long the child runs even if the harness hangs.
	MaxLifetime time.Duration
	// Stderr receives the child's standard error.
	Stderr io.Writer
}

// startSubprocess re-executes this binary as "mcpbench serve" for t on a
// free 127.0.0.1 port and waits for it to announce its address.
//
// The child exits when its standard input closes, so it never outlives the
// harness, and after opts.MaxLifetime in any case.
func startSubprocess(ctx context.Context, t target, opts subprocessOptions) (*subprocess, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable to start %s server: %w", t.Name, err)
	}
	cmd := exec.Command(exe, "serve",
		"-target", t.Name,
		"-addr", "127.0.0.1:0",
		"-exit-on-stdin-eof",
		"-max-lifetime", opts.MaxLifetime.String(),
	)
	cmd.Env = os.Environ()
	if opts.GoMaxProcs > 0 {
		cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(opts.GoMaxProcs))
	}
	cmd.Stderr = opts.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s server: %w", t.Name, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s server: %w", t.Name, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s server: %w", t.Name, err)
	}
	p := &subprocess{cmd: cmd, stdin: stdin, exited: make(chan struct{})}

	// Read the announced address, then keep draining stdout so that the
	// child can never block writing to it. cmd.Wait must only run after
	// stdout is fully read, so it runs in the same goroutine.
	addrc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), listenPrefix); ok {
				select {
				case addrc <- addr:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()

	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case p.addr = <-addrc:
		return p, nil
	case <-p.exited:
		return nil, fmt.Errorf("%s server exited before announcing its address: %w", t.Name, exitErr(p.waitErr))
	case <-timer.C:
		err = errors.New("timed out after 30s waiting for it to announce its address")
	case <-ctx.Done():
		err = ctx.Err()
	}
	_ = p.Close()
	return nil, fmt.Errorf("start %s server: %w", t.Name, err)
}

// exitErr turns a nil Wait error for a child that was expected to keep
// running into a descriptive one.
func exitErr(err error) error {
	if err == nil {
		return errors.New("exit status 0")
	}
	return err
}

// Addr returns the host:port the child listens on.
func (p *subprocess) Addr() string { return p.addr }

// Close stops the child: it closes its standard input, then sends SIGTERM
// and finally SIGKILL if it does not exit in time.
func (p *subprocess) Close() error {
	_ = p.stdin.Close()
	for _, step := range []struct {
		wait time.Duration
		sig  os.Signal
	}{
		{3 * time.Second, syscall.SIGTERM},
		{3 * time.Second, syscall.SIGKILL},
		{3 * time.Second, nil},
	} {
		select {
		case <-p.exited:
			return p.closeErr()
		case <-time.After(step.wait):
		}
		if step.sig != nil {
			_ = p.cmd.Process.Signal(step.sig)
		}
	}
	return fmt.Errorf("server process %d did not exit", p.cmd.Process.Pid)
}

// closeErr reports how the child exited after Close asked it to stop.
func (p *subprocess) closeErr() error {
	if p.waitErr != nil {
		return fmt.Errorf("server process %d: %w", p.cmd.Process.Pid, p.waitErr)
	}
	return nil
}
