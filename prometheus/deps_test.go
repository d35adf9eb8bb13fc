package prometheus_test

import (
	"strings"
	"testing"

	"github.com/taskwire/taskwire/internal/depcheck"
)

// TestCoreHasNoMetricsDependency checks that the packages every
// application imports do not depend on the Prometheus client: only this
// package does, for the applications that choose it.
func TestCoreHasNoMetricsDependency(t *testing.T) {
	for _, d := range depcheck.Deps(t, depcheck.Core()...) {
		if strings.HasPrefix(d, "github.com/prometheus/") || d == "github.com/taskwire/taskwire/prometheus" {
			t.Errorf("a core package depends on %s", d)
		}
	}
}
