package storetest_test

import (
	"strings"
	"testing"

	"github.com/taskwire/taskwire/internal/deptest"
)

// TestStoresDoNotLinkTheRuntime checks that the stores and their suite
// sit below the runtime: they meet it only through package backend, so
// none of them may depend on the worker runtime or the server.
func TestStoresDoNotLinkTheRuntime(t *testing.T) {
	const module = "github.com/taskwire/taskwire/"
	for _, d := range deptest.Deps(t, "../..", "store/...") {
		switch rel := strings.TrimPrefix(d, module); {
		case rel == "worker", rel == "server", strings.HasPrefix(rel, "server/"), rel == "durable":
			t.Errorf("a package under store/ depends on %s", d)
		}
	}
}
