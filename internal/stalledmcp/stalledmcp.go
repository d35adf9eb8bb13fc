// Package stalledmcp is a test server that speaks 2025-06-18 until a
// session is open and then stops answering: the commands and clients under
// test must end on their own bounds.
package stalledmcp

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/taskwire/taskwire/mcp"
)

// Server answers initialize and notifications/initialized, then holds every
// tools/list and DELETE until the request's context ends or the test does.
// It answers GET with 405 and anything else, server/discover among them,
// with 404, so a client takes it for a 2025 server.
type Server struct {
	// URL is the MCP endpoint.
	URL string
	// Listed and Deleting receive a value when a tools/list or a DELETE
	// arrives, before it stalls. They hold 16 values; a test that sends
	// more must read them.
	Listed, Deleting chan struct{}

	deletes atomic.Int32
}

// New starts a Server that is closed when t ends.
func New(t testing.TB) *Server {
	t.Helper()
	s := &Server{Listed: make(chan struct{}, 16), Deleting: make(chan struct{}, 16)}
	release := make(chan struct{})
	stall := func(r *http.Request, arrived chan struct{}) {
		arrived <- struct{}{}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		case http.MethodDelete:
			s.deletes.Add(1)
			stall(r, s.Deleting)
			return
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if json.Unmarshal(body, &req) != nil {
			http.Error(w, "bad JSON", http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case mcp.MethodInitialize:
			w.Header().Set(mcp.HeaderSessionID, "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stalled","version":"1"}}}`, req.ID)
		case mcp.NotificationInitialized:
			w.WriteHeader(http.StatusAccepted)
		case mcp.MethodToolsList:
			stall(r, s.Listed)
		default:
			http.Error(w, "not found", http.StatusNotFound)
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	s.URL = srv.URL + "/mcp"
	return s
}

// Deletes reports how many DELETE requests have arrived.
func (s *Server) Deletes() int { return int(s.deletes.Load()) }
