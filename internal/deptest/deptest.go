// Package deptest reads taskwire's import graph with go list: what the
// core packages depend on, for the tests of the optional integrations
// (Prometheus, OpenTelemetry, JWT) that check the core does not link them,
// and the import loops between the module's top-level folders, which its
// own test forbids.
package deptest

import (
	"os/exec"
	"strings"
	"testing"
)

// core are the packages every application imports, as go list patterns
// relative to the module.
var core = []string{"server", "worker", "task/...", "backend", "store/...", "session/...", "mcp/...", "durable", "admin"}

// CoreDeps returns the import paths of every package the core packages,
// and the extra ones named like them, depend on (go list -deps), run in
// the module root dir. It skips t when there is no go command, and fails
// it when go list fails or lists implausibly few packages.
func CoreDeps(t testing.TB, dir string, extra ...string) []string {
	t.Helper()
	deps := Deps(t, dir, append(append([]string{}, core...), extra...)...)
	if len(deps) < 50 {
		t.Fatalf("go list listed %d packages; want the core's dependencies", len(deps))
	}
	return deps
}

// Deps returns the import paths of every package that the packages named
// by pkgs (go list patterns relative to the module) depend on, themselves
// included (go list -deps, test files excluded), run in the module root
// dir. It skips t when there is no go command and fails it when go list
// fails.
func Deps(t testing.TB, dir string, pkgs ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/taskwire/taskwire/"+p)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return strings.Fields(string(out))
}
