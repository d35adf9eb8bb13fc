package server_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// TestReleasedCallJoined: a 2025-era call whose POST stream the server
// released (CloseSSEStream over HTTP/2, where the call runs on a
// goroutine of its own) is canceled by Server.Close and by its session's
// DELETE, and each returns only once the call has returned, even when the
// call ignores the cancellation for a while. No goroutine outlives the
// test.
func TestReleasedCallJoined(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, ignore) }) // registered first: runs last
	for _, how := range []string{"Server.Close", "DELETE"} {
		t.Run(how, func(t *testing.T) {
			released := make(chan error, 1)
			canceled := make(chan struct{})
			release := make(chan struct{})
			var returned atomic.Bool
			srv := newLegacyCatalog(t, func(o *server.Options, ep *server.Endpoint) {
				server.AddTool(ep, &mcp.Tool{Name: "poll"}, func(ctx context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
					released <- req.CloseSSEStream(time.Second)
					<-ctx.Done()
					close(canceled)
					<-release // ignores the cancellation until released
					returned.Store(true)
					return &mcp.CallToolResult{Content: textContent("done")}, nil, nil
				})
			})
			var protos http.Protocols
			protos.SetUnencryptedHTTP2(true)
			hs := httptest.NewUnstartedServer(srv)
			hs.Config.Protocols = &protos
			hs.Start()
			t.Cleanup(hs.Close)
			hc := &http.Client{Transport: &http.Transport{Protocols: &protos}}
			t.Cleanup(hc.CloseIdleConnections)
			c := &legacyClient{t: t, url: hs.URL + "/mcp"}
			res, err := hc.Do(c.newPost(context.Background(), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h2","version":"1"}}}`))
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			c.sid = res.Header.Get("Mcp-Session-Id")
			res, err = hc.Do(c.newPost(context.Background(), pollCall))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, res.Body) // the server ends the POST's stream
			res.Body.Close()
			if err := <-released; err != nil {
				t.Fatalf("CloseSSEStream: %v", err)
			}

			ended := make(chan error, 1)
			go func() {
				if how == "Server.Close" {
					ended <- srv.Close()
					return
				}
				r, _ := http.NewRequest(http.MethodDelete, c.url, nil)
				r.Header.Set("Mcp-Session-Id", c.sid)
				dres, err := hc.Do(r)
				if err == nil {
					dres.Body.Close()
				}
				ended <- err
			}()
			select {
			case <-canceled:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s did not cancel the released call", how)
			}
			// The call holds on well past a DELETE's or Close's own work.
			time.AfterFunc(200*time.Millisecond, func() { close(release) })
			if err := <-ended; err != nil {
				t.Fatalf("%s: %v", how, err)
			}
			if !returned.Load() {
				t.Errorf("%s returned before the released call did", how)
			}
		})
	}
}
