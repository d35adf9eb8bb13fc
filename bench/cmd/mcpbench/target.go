package main

import (
	"fmt"
	"net/http"
	"strings"
)

// defaultTargetList is the default value of the -targets flags.
const defaultTargetList = "taskwire,gosdk,gosdk-legacy,bare"

// target is one server under test.
type target struct {
	// Name identifies the target on the command line and in reports.
	Name string
	// Description is a one-line summary for reports.
	Description string
	// Unavailable, when non-empty, says why the target cannot be built into
	// this binary; the harness then skips it loudly instead of failing.
	Unavailable string
	// NewHandler builds a handler that serves MCP on endpointPath.
	NewHandler func() (http.Handler, error)
	// Request is the request replayed against the target.
	Request request
	// Expect is what every response to Request must show; the zero value
	// means the successful test_simple_text tools/call result.
	Expect expectation
	// Session marks a session-bound target: before verification the
	// harness opens a 2025-11-25 session on it (openLegacySession), and
	// Request becomes legacySessionToolsCallRequest of that session.
	Session bool
}

// allTargets returns every known target, in the default run order.
func allTargets() []target {
	return []target{
		{
			Name:        "taskwire",
			Description: "taskwire conformance fixture (conformance/fixture)",
			Unavailable: taskwireUnavailable,
			NewHandler:  newTaskwireHandler,
			Request:     toolsCallRequest(),
		},
		{
			Name:        "gosdk",
			Description: "modelcontextprotocol/go-sdk " + goSDKVersion + ", stateless, JSON responses",
			NewHandler:  newGoSDKHandler,
			Request:     goSDKRequest(),
		},
		{
			Name:        "gosdk-legacy",
			Description: "the gosdk server, sent a " + legacyProtocolVersion + " request (no _meta, no Mcp-Method/Mcp-Name)",
			NewHandler:  newGoSDKHandler,
			Request:     goSDKLegacyRequest(),
		},
		{
			Name:        "bare",
			Description: "bare net/http handler with encoding/json",
			NewHandler:  newBareHandler,
			Request:     toolsCallRequest(),
		},
		{
			Name:        "gateway",
			Description: "taskwire gateway (package gateway, pass-through) in front of the gosdk server on loopback",
			NewHandler:  newGatewayHandler,
			Request:     toolsCallRequest(),
		},
		{
			Name:        "taskwire-legacy",
			Description: "the taskwire fixture, sent a " + legacyProtocolVersion + " tools/call inside a session opened with initialize",
			Unavailable: taskwireUnavailable,
			NewHandler:  newTaskwireHandler,
			Request:     legacySessionToolsCallRequest(sessionPlaceholder),
			Expect:      legacyToolsCallExpectation(),
			Session:     true,
		},
		{
			Name:        "gosdk-stateful",
			Description: "modelcontextprotocol/go-sdk " + goSDKVersion + ", stateful (sessions), JSON responses, the same session-bound request",
			NewHandler:  newGoSDKStatefulHandler,
			Request:     legacySessionToolsCallRequest(sessionPlaceholder),
			Expect:      legacyToolsCallExpectation(),
			Session:     true,
		},
	}
}

// lookupTarget returns the target called name.
func lookupTarget(name string) (target, error) {
	var names []string
	for _, t := range allTargets() {
		if t.Name == name {
			return t, nil
		}
		names = append(names, t.Name)
	}
	return target{}, usageError{fmt.Sprintf("unknown target %q (known: %s)", name, strings.Join(names, ", "))}
}

// selectTargets parses a comma-separated list of target names, keeping its
// order and rejecting unknown names and duplicates.
func selectTargets(list string) ([]target, error) {
	var out []target
	seen := make(map[string]bool)
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			continue
		}
		if seen[name] {
			return nil, usageError{fmt.Sprintf("target %q listed twice", name)}
		}
		seen[name] = true
		t, err := lookupTarget(name)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	if len(out) == 0 {
		return nil, usageError{"no targets selected"}
	}
	return out, nil
}

// mountAt returns a mux that serves h on path only, so that every target
// answers 404 for any other path in the same way.
func mountAt(path string, h http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(path, h)
	return mux
}
