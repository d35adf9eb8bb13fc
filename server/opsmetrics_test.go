package server_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
)

// toolSink records what the server reports to a Metrics that also
// implements ToolMetrics. It is a real metrics sink, as an exporter would
// be, not a stand-in for a component.
type toolSink struct {
	mu    sync.Mutex
	calls []string // "endpoint tool outcome"
}

func (s *toolSink) RequestFinished(server.RequestInfo, server.Outcome, time.Duration) {}
func (s *toolSink) RequestRejected(string, int)                                       {}
func (s *toolSink) ToolCallFinished(info server.ToolCallInfo, outcome server.Outcome, _ time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, info.Endpoint+" "+info.Tool+" "+string(outcome))
}

func (s *toolSink) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.calls
	s.calls = nil
	return c
}

// TestToolMetrics checks that every admitted tools/call is reported once
// with its tool, on both generations of the protocol: a registered name as
// it is, any other name as "unknown", and other methods not at all.
func TestToolMetrics(t *testing.T) {
	ctx := context.Background()
	sink := &toolSink{}
	srv := newCatalogServer(t, func(o *server.Options, _ *server.Endpoint) { o.Metrics = sink })
	c := mcptest.NewClient(srv, "/mcp")
	for _, name := range []string{"echo", "fail", "no-such-tool-4711"} {
		if _, err := c.CallTool(ctx, name, map[string]any{"text": "hi"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Call(ctx, "tools/list", nil); err != nil {
		t.Fatal(err)
	}
	want := []string{"catalog echo complete", "catalog fail tool_error", "catalog unknown protocol_error"}
	if d := cmp.Diff(want, sink.take()); d != "" {
		t.Errorf("2026-07-28 tool calls (-want +got):\n%s", d)
	}

	legacySink := &toolSink{}
	lc := newLegacyRig(t, newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) { o.Metrics = legacySink }))
	lc.mustInitialize("2025-11-25", `{}`)
	lc.request("tools/call", `{"name":"echo","arguments":{"text":"hi"}}`)
	lc.request("tools/call", `{"name":"secret-name-of-a-client","arguments":{}}`)
	lc.request("tools/list", "")
	want = []string{"catalog echo complete", "catalog unknown protocol_error"}
	if d := cmp.Diff(want, legacySink.take()); d != "" {
		t.Errorf("2025-11-25 tool calls (-want +got):\n%s", d)
	}
}

// TestServerGauges checks Server.Gauges: a 2025-era session holds state on
// the node while its GET stream is open.
func TestServerGauges(t *testing.T) {
	srv := newLegacyCatalog(t, nil)
	if g := srv.Gauges(); g != (server.Gauges{}) {
		t.Errorf("new server: %+v, want zeros", g)
	}
	lc := newLegacyRig(t, srv)
	lc.mustInitialize("2025-11-25", `{}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	g, err := http.NewRequestWithContext(ctx, http.MethodGet, lc.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	g.Header.Set("Accept", "text/event-stream")
	g.Header.Set("Mcp-Session-Id", lc.sid)
	g.Header.Set("MCP-Protocol-Version", "2025-11-25")
	res, err := http.DefaultClient.Do(g)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: %v %v", res, err)
	}
	defer res.Body.Close()
	// The stream is registered before its headers are sent.
	if got := srv.Gauges(); got.LiveSessions != 1 || got.ListenStreams != 0 {
		t.Errorf("with a GET stream open: %+v, want one live session", got)
	}
}
