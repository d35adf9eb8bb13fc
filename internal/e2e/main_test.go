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
//   - TestGatewayCrashMidCall SIGKILLs `taskwire gateway` while two upstream
//     calls are under way and restarts it: the retry tool's task completes
//     with a second call, the other's fails as interrupted, not repeated.
//   - TestCLI drives `taskwire serve` with the client commands of the
//     binary (call, task, tools): progress, forms on a pseudo-terminal,
//     exit codes, Ctrl-C, --detach and --timeout.
//   - TestClientWaitAcrossFleet waits with the client package on one node
//     for a task a worker process of a PostgreSQL fleet completes.
//   - TestSecondInterruptKillsClientCommand: a second Ctrl-C kills a client
//     command that is ending the session of a server that stopped answering.
//   - TestInvoicesExample runs examples/invoices, a program with its own
//     durable tool built on node/nodecmd: serve on SQLite with /metrics,
//     serve --stdio, and a PostgreSQL fleet of migrate, two API nodes and a
//     worker, with a 2025-11-25 session opened on one node and used on the
//     other.
//
// The package has only tests. The binaries are built once per test binary, with
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

// The programs these tests run, built once per test binary into binDir.
const (
	taskwirePkg = "github.com/taskwire/taskwire/cmd/taskwire"
	invoicesPkg = "github.com/taskwire/taskwire/examples/invoices"
)

var (
	binMu  sync.Mutex
	binDir string
	built  = map[string]builtBinary{} // by package
)

type builtBinary struct {
	path string
	err  error
}

// TestMain removes the built binaries when the tests end. Started with
// the crawl worker's variables (see TestCheckpointAfterKill), the test
// binary runs that worker instead.
func TestMain(m *testing.M) {
	if os.Getenv(crawlStoreEnv) != "" {
		os.Exit(crawlWorkerMain())
	}
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// taskwireBinary builds ./cmd/taskwire once per test binary and returns
// its path.
func taskwireBinary(t *testing.T) string { return programBinary(t, taskwirePkg) }

// programBinary builds the main package pkg once per test binary, with the
// race detector when the tests run with it, and returns its path.
func programBinary(t *testing.T, pkg string) string {
	t.Helper()
	binMu.Lock()
	defer binMu.Unlock()
	b, ok := built[pkg]
	if !ok {
		b = build(pkg)
		built[pkg] = b
	}
	if b.err != nil {
		t.Fatalf("building %s: %v", pkg, b.err)
	}
	return b.path
}

// build runs go build for pkg into binDir; binMu is held.
func build(pkg string) builtBinary {
	if binDir == "" {
		dir, err := os.MkdirTemp("", "taskwire-e2e-bin-")
		if err != nil {
			return builtBinary{err: err}
		}
		binDir = dir
	}
	path := filepath.Join(binDir, filepath.Base(pkg))
	args := []string{"build", "-o", path}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, pkg)
	began := time.Now()
	if out, err := exec.Command(goTool(), args...).CombinedOutput(); err != nil {
		return builtBinary{err: fmt.Errorf("go %v: %v\n%s", args, err, out)}
	}
	fmt.Fprintf(os.Stderr, "e2e: built %s (race=%v) in %v\n", filepath.Base(pkg), raceEnabled, time.Since(began).Round(time.Millisecond))
	return builtBinary{path: path}
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
