package stdiotest

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// pipeBytes returns how many bytes wait in the pipe whose read end is r
// (FIONREAD) and the pipe's capacity (F_GETPIPE_SZ).
func pipeBytes(t *testing.T, r *os.File) (queued, capacity int) {
	t.Helper()
	var n int32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, r.Fd(), syscall.TIOCINQ, uintptr(unsafe.Pointer(&n))); e != 0 {
		t.Fatalf("FIONREAD: %v", e)
	}
	const fGetPipeSz = 1032
	c, _, e := syscall.Syscall(syscall.SYS_FCNTL, r.Fd(), fGetPipeSz, 0)
	if e != 0 {
		t.Fatalf("F_GETPIPE_SZ: %v", e)
	}
	return int(n), int(c)
}

// TestSIGTERMWithStdoutNotRead is a host that stops reading the server's
// stdout and then sends SIGTERM: once the stdout pipe is full (the
// server's writes block), SIGTERM still ends the process within the
// drain timeouts, and it says that output was dropped.
func TestSIGTERMWithStdoutNotRead(t *testing.T) {
	const drain = 200 * time.Millisecond
	cmd := serveCmd(t, filepath.Join(t.TempDir(), "tasks.db"), "--drain-timeout", drain.String())
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer outR.Close() // never read
	cmd.Stdout = outW
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	outW.Close()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() { // kills it only when the test failed before it ended
		cmd.Process.Kill()
		<-exited
	})
	go func() { // each line is answered -32700; ends when stdin closes
		line := []byte(strings.Repeat("not json\n", 64))
		for {
			if _, err := stdin.Write(line); err != nil {
				return
			}
		}
	}()
	// A full pipe means the server's writer is (or is about to be, the
	// flood of input goes on) blocked in write(2); the
	// output only flows once ServeStdio runs, after the signal handler is
	// installed.
	deadline := time.Now().Add(waitLimit)
	last, still := -1, 0
	for {
		queued, capacity := pipeBytes(t, outR)
		// The pipe fills by pages and a write that does not fit waits
		// whole: a pipe more than half full whose level no longer moves
		// while the flood goes on is a writer blocked in write(2) with
		// output still to write, which the signal cannot let it flush.
		// (Half full alone let a writer on a busy machine flush all it
		// had once the signal stopped the input, and drop nothing.)
		if queued == last {
			still++
		} else {
			last, still = queued, 0
		}
		if queued > capacity/2 && still >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stdout pipe holds %d of %d bytes after %v", queued, capacity, waitLimit)
		}
		time.Sleep(5 * time.Millisecond) // waiting on another process: no event to wait for
	}
	start := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		took := time.Since(start)
		t.Logf("exited %v after SIGTERM: %v", took, waitErr)
		if took > 2*drain+5*time.Second {
			t.Errorf("exit took %v, want about 2×--drain-timeout (%v)", took, 2*drain)
		}
		if stderr := cmd.Stderr.(*lockedBuffer).String(); !strings.Contains(stderr, "not flushed within DrainTimeout") {
			t.Errorf("stderr does not say output was dropped:\n%s", stderr)
		}
	case <-time.After(waitLimit):
		t.Fatalf("serve --stdio still running %v after SIGTERM with stdout not read", waitLimit)
	}
}
