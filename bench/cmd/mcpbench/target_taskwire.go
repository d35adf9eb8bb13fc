package main

import (
	"fmt"
	"net/http"

	"github.com/taskwire/taskwire/conformance/fixture"
)

// taskwireUnavailable is empty: the taskwire fixture is always compiled in.
// (Should the target ever have to be left out of a build, a stub file can
// define a non-empty reason and the harness skips the target loudly.)
const taskwireUnavailable = ""

// newTaskwireHandler builds the taskwire conformance fixture server, which
// serves MCP on endpointPath itself.
func newTaskwireHandler() (http.Handler, error) {
	h, err := fixture.New(fixture.Options{})
	if err != nil {
		return nil, fmt.Errorf("build taskwire fixture: %w", err)
	}
	return h, nil
}
