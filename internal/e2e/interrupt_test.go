package e2e

import (
	"errors"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/stalledmcp"
)

// TestSecondInterruptKillsClientCommand runs `taskwire tools` against a
// 2025-06-18 server that opens the session and then stops answering. The
// first SIGINT ends the command, which then sends the DELETE that ends the
// session; a second SIGINT during that DELETE kills the process (the
// default action of SIGINT is back), instead of being swallowed.
func TestSecondInterruptKillsClientCommand(t *testing.T) {
	srv := stalledmcp.New(t)
	cmd := exec.Command(taskwireBinary(t), "tools", "--url", srv.URL)
	cmd.Env = cliEnviron()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill(); <-exited })
	await := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case err := <-exited:
			t.Fatalf("the command ended (%v) before %s\n%s", err, what, stderr.String())
		case <-time.After(cliTimeout):
			t.Fatalf("no %s\n%s", what, stderr.String())
		}
	}
	await(srv.Listed, "tools/list")
	cmd.Process.Signal(syscall.SIGINT)
	await(srv.Deleting, "DELETE after the first Ctrl-C")
	cmd.Process.Signal(syscall.SIGINT)
	var err error
	select {
	case err = <-exited:
		exited <- err // for the cleanup
	case <-time.After(cliTimeout):
		t.Fatalf("the command did not end after the second Ctrl-C\n%s", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("exit: %v, want death by SIGINT", err)
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGINT {
		t.Errorf("the command ended with %v, want death by SIGINT (the second Ctrl-C)\n%s", err, stderr.String())
	}
}
