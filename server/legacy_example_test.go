package server_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// One endpoint serves 2025-06-18, 2025-11-25 and 2026-07-28 clients on the
// same path (the default ProtocolVersions); 2025 clients get sessions,
// bounded per node and per principal and ended when idle or old.
func ExampleSessionOptions() {
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "inventory", Version: "1.4.0"})
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep},
		Sessions: &server.SessionOptions{
			Store:           nil, // in-process; pass a store/postgres or store/sqlite store for a fleet
			MaxSessions:     10_000,
			MaxPerPrincipal: 100,
			IdleTimeout:     30 * time.Minute,
			MaxLifetime:     24 * time.Hour,
		},
		NodeID: "node-a", // unique in the fleet; names the node in server-to-client request IDs
	})
	if err != nil {
		log.Fatal(err)
	}

	// A 2025-11-25 client's initialize.
	r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"c","version":"1"}}}`))
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	w := httptest.NewRecorder()
	srv.ServeHTTP(w, r)
	var res struct {
		Result mcp.InitializeResult `json:"result"`
	}
	json.Unmarshal(w.Body.Bytes(), &res)
	fmt.Println(w.Code, res.Result.ProtocolVersion, len(w.Header().Get(mcp.HeaderSessionID)))
	// Output: 200 2025-11-25 32
}
