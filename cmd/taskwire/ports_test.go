package main

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// asMainEnv, set in the environment of the test binary, makes it run the
// taskwire command with its arguments (TestMain).
const asMainEnv = "TASKWIRE_TEST_AS_MAIN"

// runAsMain runs `taskwire args...` as a process of its own in dir and
// returns its combined output and exit code.
func runAsMain(t *testing.T, dir string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), asMainEnv+"=1")
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("taskwire %v: %v", args, err)
	return "", 0
}

// TestTakenPortCreatesNoStore runs serve and worker as processes on a
// port another listener holds: each exits with an error naming the flag
// and the address, before it creates (or migrates) the store.
func TestTakenPortCreatesNoStore(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"serve --addr", []string{"serve", "--addr", addr}, "--addr"},
		{"serve --admin-addr", []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", addr}, "--admin-addr"},
		{"worker --admin-addr", []string{"worker", "--admin-addr", addr}, "--admin-addr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append(tc.args, "--store", "sqlite:"+filepath.Join(dir, "tasks.db"))
			out, code := runAsMain(t, dir, args...)
			if code == 0 {
				t.Fatalf("exit code 0; output:\n%s", out)
			}
			for _, w := range []string{tc.flag + " " + addr + ": the port is taken", "address already in use"} {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if names := reportFiles(t, dir); len(names) != 0 { // lists any directory
				t.Errorf("files created: %v", names)
			}
		})
	}
}
