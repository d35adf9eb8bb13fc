// Package e2e holds end-to-end tests that run the real taskwire binary as
// separate processes on loopback ports, and kill them:
//
//   - TestCrashSQLite SIGKILLs `taskwire serve` while its workers run reports
//     and restarts it on the same SQLite file.
//   - TestRepeatedWorkerCrashes SIGKILLs `taskwire worker` five times while
//     500 queued reports drain: every task completes once, and the jobs the
//     kills interrupted keep their place in the queue.
//   - TestFleetPostgres runs three `serve` nodes (and later a `worker`) on
//     one PostgreSQL schema: cross-node reads, a SIGKILLed node's task
//     finished by another node after the lease expires, tenant isolation,
//     and task notifications across nodes.
//   - TestPostgresRestart restarts a PostgreSQL server under load.
//   - TestCLI drives `taskwire serve` with the client commands of the
//     binary (call, task, tools): progress, forms on a pseudo-terminal,
//     exit codes, Ctrl-C, --detach and --timeout.
//   - TestClientWaitAcrossFleet waits with the client package on one node
//     for a task a worker process of a PostgreSQL fleet completes.
//   - TestSecondInterruptKillsClientCommand: a second Ctrl-C kills a client
//     command that is ending the session of a server that stopped answering.
//
// The package has only tests. The binary is built once per test binary, with
// the race detector when the tests run with -race, into a temporary
// directory. Every process a test starts is killed when the test ends.
//
// Run them with the rest of the module (`make test`), or alone:
//
//	go test -race -count=1 ./internal/e2e            # about two minutes
//	go test -race -count=1 -short ./internal/e2e     # fewer tasks, shorter jobs
//	go test -count=1 -v -run TestFleetPostgres ./internal/e2e
//
// PostgreSQL: TestFleetPostgres uses TASKWIRE_TEST_POSTGRES_URL (default
// postgres://postgres@127.0.0.1:5432/test), in a schema of its own that it
// drops at the end. TestPostgresRestart never restarts that shared server,
// since other packages' tests may be using it at the same moment: it runs a
// private PostgreSQL server (initdb into a temporary directory, on a free
// loopback port, as the postgres OS user when run as root) from the
// binaries in TASKWIRE_TEST_PG_BINDIR, else the newest
// /usr/lib/postgresql/*/bin, else PATH. Without a reachable database or
// without PostgreSQL binaries the tests are skipped, except under CI=true,
// where that is a failure.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

// TestMain removes the built binary when the tests end.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// taskwireBinary builds ./cmd/taskwire once per test binary, with the race
// detector when the tests run with it, and returns its path.
func taskwireBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "taskwire-e2e-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "taskwire")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		args = append(args, "github.com/taskwire/taskwire/cmd/taskwire")
		cmd := exec.Command(goTool(), args...)
		began := time.Now()
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go %v: %v\n%s", args, err, out)
			return
		}
		fmt.Fprintf(os.Stderr, "e2e: built taskwire (race=%v) in %v\n", raceEnabled, time.Since(began).Round(time.Millisecond))
	})
	if binErr != nil {
		t.Fatalf("building taskwire: %v", binErr)
	}
	return binPath
}

// goTool is the go command that runs these tests.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return filepath.Join(runtime.GOROOT(), "bin", "go")
}

// underCI reports whether a missing dependency must fail the test instead
// of skipping it.
func underCI() bool { return os.Getenv("CI") == "true" }

// requireOrSkip fails the test under CI=true and skips it otherwise.
func requireOrSkip(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if underCI() {
		t.Fatalf("%s (required under CI=true)", msg)
	}
	t.Skip(msg)
}
