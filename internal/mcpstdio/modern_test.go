package mcpstdio_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/internal/mcpstdio"
	"github.com/taskwire/taskwire/mcp"
)

// modernMeta is the _meta of a 2026-07-28 request, with extra members.
func modernMeta(extra string) string {
	return `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}` + extra + `}`
}

// TestModernForward: a server that answers server/discover as a 2026-07-28
// server gets no initialize; a forwarded request's progress comes back
// under the caller's own token, and a listen's notifications under the
// caller's subscription ID.
func TestModernForward(t *testing.T) {
	c := start(t, "taskwire", mcpstdio.Options{Modern: true})
	if !c.Modern() || c.Initialized().ProtocolVersion != "" {
		t.Fatalf("Modern() = %v, initialized %q: want a modern connection without a session", c.Modern(), c.Initialized().ProtocolVersion)
	}
	var d mcp.DiscoverResult
	if err := json.Unmarshal(c.Discovered(), &d); err != nil || len(d.SupportedVersions) == 0 {
		t.Errorf("Discovered() = %s (%v)", c.Discovered(), err)
	}
	type note struct {
		Token   json.RawMessage `json:"progressToken"`
		Message string          `json:"message"`
	}
	var got []note
	params := `{"name":"slow.build","arguments":{"steps":2},` + modernMeta(`,"progressToken":"mine-1"`) + `}`
	res, err := c.Forward(t.Context(), mcp.MethodToolsCall, json.RawMessage(params), nil, func(method string, p json.RawMessage) {
		var n note
		if method != mcp.NotificationProgress || json.Unmarshal(p, &n) != nil {
			t.Errorf("notification %s %s", method, p)
		}
		got = append(got, n)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []note{{json.RawMessage(`"mine-1"`), "step 1 of 2"}, {json.RawMessage(`"mine-1"`), "step 2 of 2"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
	var r mcp.CallToolResult
	if err := json.Unmarshal(res, &r); err != nil || string(r.StructuredContent) != `{"done":2}` {
		t.Errorf("result %s: %v", res, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	acked := make(chan json.RawMessage, 1)
	listen := `{"notifications":{"toolsListChanged":true},` + modernMeta("") + `}`
	done := make(chan error, 1)
	go func() {
		_, err := c.Forward(ctx, mcp.MethodSubscriptionsListen, json.RawMessage(listen), json.RawMessage(`"client-7"`), func(method string, p json.RawMessage) {
			if method == mcp.NotificationSubscriptionsAcknowledged {
				acked <- p
			}
		})
		done <- err
	}()
	select {
	case p := <-acked:
		var m struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if err := json.Unmarshal(p, &m); err != nil || string(m.Meta[mcp.MetaSubscriptionID]) != `"client-7"` {
			t.Errorf("acknowledged %s, want the subscription ID \"client-7\"", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no acknowledgement of the listen")
	}
	cancel()
	if err := <-done; err == nil {
		t.Error("the listen ended without an error after its context")
	}
}

// TestModernProbeFallsBack: a 2025-era server that does not answer
// server/discover is initialized after the probe's timeout.
func TestModernProbeFallsBack(t *testing.T) {
	c := start(t, "raw", mcpstdio.Options{Modern: true, ProbeTimeout: 200 * time.Millisecond})
	if c.Modern() || c.Initialized().ProtocolVersion != mcp.ProtocolVersion20250618 {
		t.Errorf("Modern() = %v, initialized %q: want the 2025-06-18 session", c.Modern(), c.Initialized().ProtocolVersion)
	}
}
