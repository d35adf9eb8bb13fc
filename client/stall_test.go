package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

// guard bounds the wait for something the test expects to happen soon; it
// is a failure bound, not a synchronisation.
const guard = 10 * time.Second

// stallingServer answers method (or the HTTP method DELETE) only once
// release is closed, and reports on arrived when such a request came in;
// everything else a 2025-06-18 session or a 2026 server needs is answered
// at once: server/discover (when modern), initialize, notifications and
// tools/list.
func stallingServer(t *testing.T, modern bool, method string) (url string, arrived <-chan struct{}, release func()) {
	t.Helper()
	in := make(chan struct{}, 16)
	rel := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		json.Unmarshal(body, &req)
		if r.Method != http.MethodPost {
			req.Method = r.Method
		}
		if req.Method == method {
			in <- struct{}{}
			select {
			case <-rel:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/json")
		switch req.Method {
		case http.MethodGet:
			w.WriteHeader(http.StatusMethodNotAllowed)
		case http.MethodDelete:
			w.WriteHeader(http.StatusNoContent)
		case mcp.MethodServerDiscover:
			if !modern {
				http.Error(w, "not found", http.StatusNotFound)
				return
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},"ttlMs":0,"cacheScope":"private"}}`, req.ID)
		case mcp.MethodInitialize:
			w.Header().Set(mcp.HeaderSessionID, "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"stall","version":"1"}}}`, req.ID)
		case mcp.NotificationInitialized:
			w.WriteHeader(http.StatusAccepted)
		case mcp.MethodToolsList:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"tools":[]}}`, req.ID)
		default:
			http.Error(w, "not found", http.StatusNotFound)
		}
	}))
	t.Cleanup(srv.Close)
	done := false
	release = func() {
		if !done {
			done = true
			close(rel)
		}
	}
	t.Cleanup(release) // before srv.Close, which waits for the handlers
	return srv.URL, in, release
}

// A server that stops answering must not hold Close for a RequestTimeout:
// the DELETE that ends the session has CloseTimeout.
func TestCloseBoundsTheSessionDelete(t *testing.T) {
	url, arrived, _ := stallingServer(t, false, http.MethodDelete)
	c, err := client.New(url, client.Options{
		ProtocolVersions: []string{mcp.ProtocolVersion20250618},
		RequestTimeout:   time.Hour,
		CloseTimeout:     100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(testContext(t)); err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case <-arrived:
	case <-time.After(guard):
		t.Fatal("Close sent no DELETE")
	}
	select {
	case err := <-closed:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close = %v, want the DELETE's deadline", err)
		}
	case <-time.After(guard):
		t.Fatalf("Close still waits for the DELETE after %v (CloseTimeout 100ms)", guard)
	}
}

// A first call with a short deadline returns by it, although another
// goroutine's Connect is negotiating with a server that does not answer.
func TestConcurrentConnectHonoursContext(t *testing.T) {
	url, arrived, release := stallingServer(t, true, mcp.MethodServerDiscover)
	c := newClient(t, url, client.Options{RequestTimeout: time.Hour})
	first := make(chan error, 1)
	go func() { first <- c.Connect(context.Background()) }()
	select {
	case <-arrived:
	case <-time.After(guard):
		t.Fatal("Connect sent no server/discover")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	second := make(chan error, 1)
	go func() {
		_, err := c.ListTools(ctx)
		second <- err
	}()
	select {
	case err := <-second:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("ListTools = %v, want its deadline", err)
		}
	case <-time.After(guard):
		t.Fatal("ListTools waits for the other goroutine's Connect beyond its own deadline")
	}
	select {
	case err := <-first:
		t.Fatalf("the first Connect returned (%v) although the server holds its request", err)
	default:
	}

	release()
	if err := <-first; err != nil {
		t.Fatalf("Connect: %v", err)
	}
	if _, err := c.ListTools(testContext(t)); err != nil {
		t.Fatalf("ListTools once connected: %v", err)
	}
}
