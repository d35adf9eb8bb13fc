package oauth_test

import (
	"strings"
	"testing"

	"github.com/taskwire/taskwire/internal/deptest"
)

// TestCoreHasNoJWTDependency checks that the packages every application
// imports, and the client, do not depend on the JWT library: only this
// package does, for the servers that verify OAuth access tokens.
func TestCoreHasNoJWTDependency(t *testing.T) {
	for _, d := range deptest.CoreDeps(t, "..", "client/...") {
		if strings.HasPrefix(d, "github.com/golang-jwt/") || d == "github.com/taskwire/taskwire/oauth" {
			t.Errorf("a core package depends on %s", d)
		}
	}
}
