package backend_test

import (
	"testing"

	"github.com/taskwire/taskwire/backend"
)

// TestFailureCategoryRecorded: a store records the bounded categories as
// they are, none as none, and anything else, an error's text included, as
// FailureUnknown.
func TestFailureCategoryRecorded(t *testing.T) {
	for _, tc := range []struct {
		in, want backend.FailureCategory
	}{
		{"", ""},
		{backend.FailureHandlerError, backend.FailureHandlerError},
		{backend.FailurePermanent, backend.FailurePermanent},
		{backend.FailureTimeout, backend.FailureTimeout},
		{backend.FailureInvalidResult, backend.FailureInvalidResult},
		{backend.FailurePanic, backend.FailurePanic},
		{backend.FailureUnavailable, backend.FailureUnavailable},
		{backend.FailureUnknown, backend.FailureUnknown},
		{"Timeout", backend.FailureUnknown},
		{"dial tcp 10.0.0.7:5432: connection refused", backend.FailureUnknown},
	} {
		if got := tc.in.Recorded(); got != tc.want {
			t.Errorf("%q.Recorded() = %q, want %q", tc.in, got, tc.want)
		}
	}
}
