package client_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// TestConnectWithoutEndpoint points the client at a real HTTP server that
// serves no MCP endpoint at the URL, as at a wrong path: Connect fails with
// an *HTTPError whose NoEndpoint is true and whose message says so, on one
// line when both probes got the same status.
func TestConnectWithoutEndpoint(t *testing.T) {
	tests := []struct {
		name             string
		discover, legacy int // the statuses of server/discover and initialize
		wantMsg          string
		wantNoEndpoint   bool
	}{
		{"not found", 404, 404, "client: initialize: unexpected HTTP status 404 Not Found: no MCP endpoint at this URL (is its path right?)", true},
		{"method not allowed", 405, 405, "client: initialize: unexpected HTTP status 405 Method Not Allowed: no MCP endpoint at this URL (is its path right?)", true},
		{"two answers are both kept", 404, 501, "client: initialize: unexpected HTTP status 501 Not Implemented: no MCP endpoint at this URL (is its path right?)\n" +
			"client: server/discover: unexpected HTTP status 404 Not Found: no MCP endpoint at this URL (is its path right?)", true},
		{"a failing server is not a wrong path", 502, 502, "client: initialize: unexpected HTTP status 502 Bad Gateway", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				var m struct{ Method string }
				_ = json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&m)
				status := tc.legacy
				if m.Method == mcp.MethodServerDiscover {
					status = tc.discover
				}
				http.Error(w, "<html>nothing here</html>", status)
			}))
			t.Cleanup(srv.Close)
			c, err := client.New(srv.URL+"/wrong", client.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			err = c.Connect(testContext(t))
			var he *client.HTTPError
			if !errors.As(err, &he) {
				t.Fatalf("Connect: %v, want an *HTTPError", err)
			}
			if he.NoEndpoint() != tc.wantNoEndpoint {
				t.Errorf("NoEndpoint() = %v, want %v", he.NoEndpoint(), tc.wantNoEndpoint)
			}
			if diff := cmp.Diff(tc.wantMsg, err.Error()); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
		})
	}
}
