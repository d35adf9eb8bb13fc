// Package depcheck lets tests check which packages the core of the module
// depends on, so that an optional dependency stays with the one package
// that chose it.
package depcheck

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Core returns the packages every application imports, relative to the
// module root.
func Core() []string {
	return []string{"server", "worker", "task/...", "store/...", "session/...", "mcp/...", "admin"}
}

// Deps returns every package the module's packages (paths relative to the
// module root, such as "server" or "store/...") depend on, themselves
// included, as `go list -deps` lists them. It skips the test without a go
// command and fails it when the list cannot be had.
func Deps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	args := []string{"list", "-deps"}
	for _, p := range pkgs {
		args = append(args, "github.com/taskwire/taskwire/"+p)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list listed %d packages; want the core's dependencies", len(deps))
	}
	return deps
}
