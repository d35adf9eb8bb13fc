package oauth_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreHasNoJWTDependency checks that the packages every application
// imports do not depend on the JWT library: only this package does, for
// the servers that verify OAuth access tokens.
func TestCoreHasNoJWTDependency(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	args := []string{"list", "-deps"}
	for _, p := range []string{"server", "worker", "task/...", "store/...", "session/...", "mcp/...", "admin", "client/..."} {
		args = append(args, "github.com/taskwire/taskwire/"+p)
	}
	cmd := exec.Command(goBin, args...)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 {
		t.Fatalf("go list listed %d packages; want the core's dependencies", len(deps))
	}
	for _, d := range deps {
		if strings.HasPrefix(d, "github.com/golang-jwt/") || d == "github.com/taskwire/taskwire/oauth" {
			t.Errorf("a core package depends on %s", d)
		}
	}
}
