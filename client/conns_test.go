package client_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestConcurrentCallsReuseConnections: the client's own transport keeps
// the connections of concurrent calls for the next ones. With the default
// of net/http (two idle connections per host) a gateway making many calls
// at once toward one upstream opened a new TCP connection for most of
// them, every time.
func TestConcurrentCallsReuseConnections(t *testing.T) {
	const calls, waves = 16, 5
	var (
		mu   sync.Mutex
		wave *sync.WaitGroup // the calls of the running wave wait for each other
	)
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "conns", Version: "1.0.0"})
	server.AddTool[map[string]any, addOut](ep, &mcp.Tool{Name: "meet", Description: "Waits for the others."},
		func(ctx context.Context, _ *server.Request, _ map[string]any) (*mcp.CallToolResult, addOut, error) {
			mu.Lock()
			w := wave
			mu.Unlock()
			w.Done()
			done := make(chan struct{})
			go func() { w.Wait(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				return nil, addOut{}, ctx.Err()
			}
			return nil, addOut{Sum: 1}, nil
		})
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}})
	if err != nil {
		t.Fatal(err)
	}
	var opened atomic.Int64
	hs := httptest.NewUnstartedServer(srv)
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	hs.Start()
	t.Cleanup(hs.Close)
	c, err := client.New(hs.URL+"/mcp", client.Options{RequestTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := t.Context()
	if err := c.Connect(ctx); err != nil {
		t.Fatal(err)
	}
	for range waves {
		var w sync.WaitGroup
		w.Add(calls)
		mu.Lock()
		wave = &w
		mu.Unlock()
		errs := make(chan error, calls)
		for range calls {
			go func() {
				_, err := c.Call(ctx, "meet", map[string]any{})
				errs <- err
			}()
		}
		for range calls {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each wave holds calls connections at once; the first opens them
	// and the others reuse them. A connection goes back to the pool a
	// moment after its response has been read, so a few calls of a wave
	// may still dial (16 to 21 connections in all, seen here); keeping
	// two idle connections, as net/http does by default, opens about
	// calls+(waves-1)*(calls-2) = 72.
	if n := opened.Load(); n > 2*calls {
		t.Errorf("%d connections opened for %d waves of %d concurrent calls, want at most %d", n, waves, calls, 2*calls)
	}
}
