package tracing_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreHasNoTracingDependency checks that the packages every
// application imports depend on no OpenTelemetry module, not even its API:
// they call the hook interfaces server.Tracer and worker.Tracer, which only
// this package implements, for the applications that choose it.
func TestCoreHasNoTracingDependency(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command: %v", err)
	}
	core := []string{"server", "worker", "task/...", "backend", "store/...", "session/...", "mcp/...", "durable", "admin", "prometheus"}
	args := []string{"list", "-deps"}
	for _, p := range core {
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
		if strings.HasPrefix(d, "go.opentelemetry.io/") || d == "github.com/taskwire/taskwire/tracing" {
			t.Errorf("a core package depends on %s", d)
		}
	}
}
