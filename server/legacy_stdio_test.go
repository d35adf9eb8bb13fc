package server_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// stdioInitialize opens the implicit session of a 2025 client.
func stdioInitialize(t *testing.T, rig *stdioRig, version, caps string) stdioMsg {
	t.Helper()
	m := rig.call("0", "initialize", `{"protocolVersion":"`+version+`","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}`)
	if m.Error != nil {
		t.Fatalf("initialize: %s", m.line)
	}
	rig.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return m
}

func TestStdioLegacySession(t *testing.T) {
	srv := newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) {
		o.NodeID = "n1"
		addInputTools(ep)
	})
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			rig := newStdioRig(t, srv, server.StdioOptions{})
			init := stdioInitialize(t, rig, version, `{"elicitation":{},"sampling":{},"roots":{}}`)
			var ir mcp.InitializeResult
			if err := json.Unmarshal(init.Result, &ir); err != nil || ir.ProtocolVersion != version {
				t.Fatalf("initialize result %s", init.line)
			}
			list := rig.call("1", "tools/list", `{}`)
			if strings.Contains(string(list.Result), "resultType") || !strings.Contains(string(list.Result), `"name":"echo"`) {
				t.Fatalf("tools/list is not in 2025 shape: %s", list.line)
			}
			if again := rig.call("2", "initialize", `{"protocolVersion":"`+version+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`); again.Error == nil {
				t.Fatalf("second initialize accepted: %s", again.line)
			}
			// Server-to-client requests: each is written to the output
			// and answered on the input.
			rig.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"two-rounds","arguments":{}}}`)
			var asked []string
			for {
				m := rig.recv()
				if m.Method == "" {
					if string(m.ID) != "3" || m.Error != nil || !strings.Contains(string(m.Result), "rounds done 2") {
						t.Fatalf("final %s", m.line)
					}
					break
				}
				asked = append(asked, m.Method)
				rig.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":` + answerAll(legacyMsg{Method: m.Method}) + `}`)
			}
			if got := strings.Join(asked, " "); got != "elicitation/create roots/list elicitation/create" {
				t.Errorf("server requests %q", got)
			}
			// A response nobody waits for changes nothing.
			rig.send(`{"jsonrpc":"2.0","id":"tw.n1.00000000000000000000000000000000","result":{}}`)
			if m := rig.call("4", "ping", `{}`); m.Error != nil {
				t.Fatalf("ping: %s", m.line)
			}
		})
	}
}

func TestStdioLegacyNeedsInitialize(t *testing.T) {
	srv := newCatalogServer(t, nil)
	rig := newStdioRig(t, srv, server.StdioOptions{})
	if m := rig.call("1", "tools/list", `{}`); m.Error == nil || m.Error.Code != mcp.CodeInvalidParams {
		t.Fatalf("got %s, want -32602 (initialize or _meta first)", m.line)
	}
}

// TestStdioListenEndedByServer: a listen the server ends gets its result
// and then notifications/cancelled naming it; a listen the client cancels
// gets nothing more.
func TestStdioListenEndedByServer(t *testing.T) {
	srv := newCatalogServer(t, func(o *server.Options, ep *server.Endpoint) {
		o.Subscriptions = &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)}
	})
	rig := newStdioRig(t, srv, server.StdioOptions{})
	listen := func(id string) {
		rig.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":` + modernParams(`"notifications":{}`) + `}`)
		if m := rig.recv(); m.Method != mcp.NotificationSubscriptionsAcknowledged || !strings.Contains(string(m.Params), `"io.modelcontextprotocol/subscriptionId":`+id) {
			t.Fatalf("got %s, want the acknowledgement of %s", m.line, id)
		}
	}
	listen(`"gone"`)
	rig.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"gone"}}`)
	listen(`"l"`)
	srv.Close()
	if m := rig.recv(); string(m.ID) != `"l"` || m.Error != nil || !strings.Contains(string(m.Result), `"resultType":"complete"`) {
		t.Fatalf("got %s, want the listen's result", m.line)
	}
	m := rig.recv()
	if m.Method != mcp.NotificationCancelled || string(m.Params) != `{"requestId":"l","reason":"subscription ended by the server"}` {
		t.Fatalf("got %s, want notifications/cancelled for l", m.line)
	}
	if m := rig.call("1", "server/discover", modernParams("")); m.Error != nil {
		t.Fatalf("discover: %s", m.line)
	}
}
