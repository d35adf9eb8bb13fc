package tracing_test

import (
	"strings"
	"testing"

	"github.com/taskwire/taskwire/internal/deptest"
)

// TestCoreHasNoTracingDependency checks that the packages every
// application imports (and package prometheus) depend on no OpenTelemetry
// module, not even its API: they call the hook interfaces server.Tracer
// and worker.Tracer, which only this package implements, for the
// applications that choose it.
func TestCoreHasNoTracingDependency(t *testing.T) {
	for _, d := range deptest.CoreDeps(t, "..", "prometheus") {
		if strings.HasPrefix(d, "go.opentelemetry.io/") || d == "github.com/taskwire/taskwire/tracing" {
			t.Errorf("a core package depends on %s", d)
		}
	}
}
