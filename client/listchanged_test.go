package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	sessmemory "github.com/taskwire/taskwire/session/memory"
)

// swapServer serves the current taskwire server of a test on one loopback
// address, so that a restart keeps the URL.
type swapServer struct {
	cur atomic.Pointer[server.Server]
	ep  atomic.Pointer[server.Endpoint]
}

func (s *swapServer) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.cur.Load().ServeHTTP(w, r) }

// start builds a server with one tool and one prompt, tools that may
// change, 2025 sessions and listens, and serves it in place of the last
// one, which it closes.
func (s *swapServer) start(t *testing.T) {
	t.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "lists", Version: "1", DynamicTools: true})
	ep.AddRawTool(&mcp.Tool{Name: "first", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return &mcp.CallToolResult{}, nil })
	ep.AddPrompt(&mcp.Prompt{Name: "p"}, func(context.Context, *server.Request, map[string]string) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	sessions, err := sessmemory.New(sessmemory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{ep}, Sessions: &server.SessionOptions{Store: sessions},
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
	})
	if err != nil {
		t.Fatal(err)
	}
	old := s.cur.Swap(srv)
	s.ep.Store(ep)
	t.Cleanup(func() { srv.Close() })
	if old != nil {
		old.Close()
	}
}

// changes records the calls of Options.OnListChanged.
type changes struct {
	ch       chan client.ListChange
	calls    atomic.Int32
	holdNext atomic.Bool   // the next call waits for hold
	hold     chan struct{} // closed by the test
}

func newChanges() *changes {
	return &changes{ch: make(chan client.ListChange, 64), hold: make(chan struct{})}
}

func (c *changes) fn(k client.ListChange) {
	c.calls.Add(1)
	if c.holdNext.CompareAndSwap(true, false) {
		<-c.hold
	}
	c.ch <- k
}

// await returns the next reported change within d, or 0.
func (c *changes) await(d time.Duration) client.ListChange {
	select {
	case k := <-c.ch:
		return k
	case <-time.After(d):
		return 0
	}
}

// putUntilHeard adds tools until the client reports a tools change: the
// listen of a 2026 client opens after Connect, asynchronously.
func putUntilHeard(t *testing.T, ep *server.Endpoint, ch *changes) client.ListChange {
	t.Helper()
	for i := range 50 {
		tool := &mcp.Tool{Name: fmt.Sprintf("added%d", i), InputSchema: json.RawMessage(`{"type":"object"}`)}
		if err := ep.UpdateTools(server.PutRawTool(tool, func(context.Context, *server.Request) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})); err != nil {
			t.Fatal(err)
		}
		if k := ch.await(100 * time.Millisecond); k != 0 {
			return k
		}
	}
	t.Fatal("no list change reported")
	return 0
}

// TestOnListChanged: in each era the callback hears tools/list_changed
// (a 2026 client on its own listen stream, a 2025 session on its GET
// stream), the new tool is then listed, changes coalesce while the
// callback runs without holding the reader, and a restarted server is
// reported as every list changed.
func TestOnListChanged(t *testing.T) {
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125, mcp.ProtocolVersion20250618} {
		t.Run(version, func(t *testing.T) {
			var sw swapServer
			sw.start(t)
			hs := httptest.NewServer(&sw)
			t.Cleanup(hs.Close)
			ch := newChanges()
			c := newClient(t, hs.URL+"/mcp", client.Options{ProtocolVersions: []string{version}, OnListChanged: ch.fn})
			ctx := testContext(t)
			if _, err := c.ListTools(ctx); err != nil {
				t.Fatal(err)
			}
			if k := putUntilHeard(t, sw.ep.Load(), ch); k != client.ToolsChanged {
				t.Errorf("reported %b, want tools only", k)
			}
			tools, err := c.ListTools(ctx)
			if err != nil || !slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == "added0" }) {
				t.Errorf("after the change: %d tools, %v", len(tools), err)
			}

			// A callback that does not return holds no reader: changes
			// coalesce, calls still work, and one call reports them all.
			ch.calls.Store(0)
			ch.holdNext.Store(true)
			released := false
			release := func() {
				if !released {
					released = true
					close(ch.hold)
				}
			}
			t.Cleanup(release) // before Close, which waits for the callback
			sw.ep.Load().UpdateTools(server.RemoveTool("added0"))
			waitFor(t, func() bool { return ch.calls.Load() == 1 }) // the held call runs
			for i := range 20 {
				sw.ep.Load().UpdateTools(server.PutRawTool(&mcp.Tool{Name: fmt.Sprintf("more%d", i), InputSchema: json.RawMessage(`{"type":"object"}`)},
					func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return &mcp.CallToolResult{}, nil }))
			}
			sw.ep.Load().NotifyListChanged(server.ListPrompts)
			if _, err := c.ListTools(ctx); err != nil {
				t.Fatalf("a call while the callback runs: %v", err)
			}
			time.Sleep(200 * time.Millisecond) // let the notifications arrive
			release()
			if k := ch.await(5 * time.Second); k != client.ToolsChanged {
				t.Errorf("held call reported %b", k)
			}
			if k := ch.await(5 * time.Second); !k.Has(client.ToolsChanged | client.PromptsChanged) {
				t.Errorf("coalesced call reported %b, want tools and prompts", k)
			}
			if n := ch.calls.Load(); n > 3 {
				t.Errorf("%d calls for 22 changes made while the callback ran; want them coalesced", n)
			}

			sw.start(t) // a restart: the old server ends its streams
			if version != mcp.LatestProtocolVersion {
				if k := ch.await(10 * time.Second); !k.Has(client.ToolsChanged | client.PromptsChanged) {
					t.Fatalf("after a restart: %b, want every list", k)
				}
				if _, err := c.ListTools(ctx); err != nil { // renews the session, with its GET stream
					t.Fatal(err)
				}
			} else if k := ch.await(10 * time.Second); !k.Has(client.ToolsChanged | client.PromptsChanged) {
				t.Fatalf("after a restart: %b, want every list", k)
			}
			if k := putUntilHeard(t, sw.ep.Load(), ch); !k.Has(client.ToolsChanged) {
				t.Errorf("after the restart: %b", k)
			}
		})
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestOnListChangedCloseLeavesNoGoroutine: the listen and the notifier end
// with Close.
func TestOnListChangedCloseLeavesNoGoroutine(t *testing.T) {
	var sw swapServer
	sw.start(t)
	hs := httptest.NewServer(&sw)
	t.Cleanup(hs.Close)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	ch := newChanges()
	c, err := client.New(hs.URL+"/mcp", client.Options{OnListChanged: ch.fn})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListTools(testContext(t)); err != nil {
		t.Fatal(err)
	}
	putUntilHeard(t, sw.ep.Load(), ch)
	c.Close()
	hs.CloseClientConnections()
}
