package gateway_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
)

// TestUpstreamTaskSessionEnded: with a 2025-11-25 upstream, a gateway
// whose upstream tasks all finished ends their session with DELETE on
// Close; one with a task still unfinished keeps it (a gateway started
// later follows the task in it).
func TestUpstreamTaskSessionEnded(t *testing.T) {
	for _, tc := range []struct {
		name       string
		unfinished bool
		wantDelete bool
	}{
		{name: "every task finished", wantDelete: true},
		{name: "a task unfinished", unfinished: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			up := newTaskUpstream(t, "127.0.0.1:0", filepath.Join(dir, "upstream.db"))
			t.Cleanup(up.releaseAll)
			tr := http.DefaultTransport.(*http.Transport).Clone()
			t.Cleanup(tr.CloseIdleConnections)
			log := &sessionLog{next: tr}
			gn := startGatewayOn(t, gateway.Options{Upstream: up.url, TaskTools: []string{"*.task"},
				ProtocolVersions: []string{mcp.ProtocolVersion20251125}, Transport: log}, filepath.Join(dir, "gateway.db"))
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			c := newClient(t, gn.url)
			if _, err := callTask(t, ctx, c, "again.task", BuildIn{Steps: 1}).Wait(ctx); err != nil {
				t.Fatal(err)
			}
			if tc.unfinished {
				callTask(t, ctx, c, "again.task", BuildIn{Steps: 2, HoldAt: 1})
				up.awaitHeld(t, ctx, "again.task")
			}
			gn.stop(t)
			sessions := map[string]bool{} // of the upstream tools/call
			sent := log.take()
			for _, m := range sent {
				if m.method == mcp.MethodToolsCall {
					sessions[m.session] = true
				}
			}
			if len(sessions) != 1 {
				t.Fatalf("the upstream tools/call went in %d sessions, want 1", len(sessions))
			}
			deleted := false
			for _, m := range sent {
				if m.verb == http.MethodDelete && sessions[m.session] {
					deleted = true
				}
			}
			if deleted != tc.wantDelete {
				t.Errorf("the tasks' session ended with DELETE: %v, want %v", deleted, tc.wantDelete)
			}
		})
	}
}
