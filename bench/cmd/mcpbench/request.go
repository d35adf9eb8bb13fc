package main

import (
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/taskwire/taskwire/mcp"
)

const (
	// endpointPath is the HTTP path every target serves MCP on.
	endpointPath = "/mcp"
	// toolName is the fixture tool every target implements.
	toolName = "test_simple_text"
	// expectedText is the only text content test_simple_text returns.
	expectedText = "This is a simple text response for testing."
	// protocolVersion is the MCP protocol version the benchmark client speaks.
	protocolVersion = "2026-07-28"
)

// header is one HTTP request header. Headers are kept in a slice rather
// than an http.Header so that they are printed and sent in a stable order.
type header struct {
	Name  string
	Value string
}

// request is the exact HTTP request replayed against a target, both by the
// Go verification client and by the wrk load script.
type request struct {
	Method  string
	Path    string
	Headers []header
	Body    string
	// UniqueIDs makes the wrk script give every request its own JSON-RPC
	// id (unique across wrk threads), in place of the body's "id":1, as a
	// client does within a session: a stateful server may refuse a
	// duplicate in-flight id (go-sdk answers 400). Verification still
	// sends the body as it is.
	UniqueIDs bool
}

// idMember is the id of every benchmark request body; the wrk script
// replaces it when UniqueIDs is set.
const idMember = `"id":1,`

// toolsCallRequest returns the request a 2026-07-28 client sends for an
// inline tools/call of test_simple_text: the per-request _meta carries the
// protocol version, client capabilities and client info, and the standard
// Mcp-Method / Mcp-Name headers mirror the body.
func toolsCallRequest() request {
	return request{
		Method: "POST",
		Path:   endpointPath,
		Headers: []header{
			{"Content-Type", "application/json"},
			{"Accept", "application/json, text/event-stream"},
			{mcp.HeaderProtocolVersion, protocolVersion},
			{mcp.HeaderMethod, "tools/call"},
			{mcp.HeaderName, toolName},
		},
		Body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + toolName + `","arguments":{},` +
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + protocolVersion + `",` +
			`"io.modelcontextprotocol/clientCapabilities":{},` +
			`"io.modelcontextprotocol/clientInfo":{"name":"bench","version":"1.0.0"}}}}`,
	}
}

// String renders r the way it goes over the wire, minus the Host and
// Content-Length headers that the client adds.
func (r request) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\n", r.Method, r.Path)
	for _, h := range r.Headers {
		fmt.Fprintf(&b, "%s: %s\n", h.Name, h.Value)
	}
	b.WriteString("\n")
	b.WriteString(r.Body)
	b.WriteString("\n")
	return b.String()
}

// runRequest implements "mcpbench request": it prints the exact request
// replayed against each selected target.
func runRequest(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpbench request", flag.ContinueOnError)
	fs.SetOutput(stderr)
	scenarioName := fs.String("scenario", scenarioToolsCall, "workload whose requests to print: tools-call or tasks-get")
	targetList := fs.String("targets", "", "comma-separated targets whose request to print (default: every target of the scenario)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	sc, err := lookupScenario(*scenarioName)
	if err != nil {
		return err
	}
	if *targetList == "" {
		*targetList = sc.DefaultTargets
	}
	targets, err := selectTargets(*targetList)
	if err != nil {
		return err
	}
	if err := sc.checkTargets(targets); err != nil {
		return err
	}
	if sc.Name == scenarioTasksGet {
		const placeholder = "TASK-ID"
		fmt.Fprintf(stdout, "# set-up, sent once to taskwire before load (the task ID comes from its answer)\n%s\n", slowComputeRequest())
		for _, t := range targets {
			fmt.Fprintf(stdout, "# %s\n%s\n", t.Name, tasksGetRequest(placeholder))
		}
		return nil
	}
	for _, t := range targets {
		if t.Session {
			fmt.Fprintf(stdout, "# set-up, sent once to %s before load (the session ID comes from the answer's Mcp-Session-Id)\n%s\n%s\n",
				t.Name, legacyInitializeRequest(),
				legacySessionRequest(sessionPlaceholder, `{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		}
		fmt.Fprintf(stdout, "# %s\n%s\n", t.Name, t.Request)
	}
	return nil
}
