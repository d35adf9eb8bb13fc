package gateway_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	sessmemory "github.com/taskwire/taskwire/session/memory"
	"github.com/taskwire/taskwire/store"
)

// subsUpstream is a taskwire upstream whose resource source counts its
// subscribers by URI (2025 sessions and 2026 listens alike), served on
// one loopback address across restarts.
type subsUpstream struct {
	url string
	cur atomic.Pointer[server.Server]
	ep  atomic.Pointer[server.Endpoint]
	src atomic.Pointer[countingSource]
}

// countingSource serves no resources of its own and counts subscribers.
type countingSource struct {
	mu   sync.Mutex
	subs map[string]int
}

func (s *countingSource) ListResources(context.Context, *server.Request, string) ([]*mcp.Resource, string, error) {
	return nil, "", nil
}

func (s *countingSource) ListResourceTemplates(context.Context, *server.Request, string) ([]*mcp.ResourceTemplate, string, error) {
	return nil, "", nil
}

func (s *countingSource) ReadResource(context.Context, *server.Request) (*mcp.ReadResourceResult, error) {
	return nil, server.ErrResourceNotFound
}

func (s *countingSource) SubscribeResource(_ context.Context, _ *server.Request, uri string) error {
	if strings.Contains(uri, "refused") {
		return mcp.NewError(mcp.CodeInvalidParams, "Invalid params: not subscribable")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[uri]++
	return nil
}

func (s *countingSource) UnsubscribeResource(uri string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs[uri]--
}

func (s *countingSource) count(uri string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs[uri]
}

func newSubsUpstream(t *testing.T) *subsUpstream {
	t.Helper()
	u := &subsUpstream{}
	u.start(t)
	hs := httptest.NewServer(u)
	t.Cleanup(hs.Close)
	u.url = hs.URL + "/mcp"
	return u
}

func (u *subsUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.cur.Load().ServeHTTP(w, r)
}

// start serves a new upstream in place of the last one (a restart): its
// sessions, listens and subscriptions are gone.
func (u *subsUpstream) start(t *testing.T) {
	t.Helper()
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "subs-upstream", Version: "1.0.0"})
	ep.AddRawTool(&mcp.Tool{Name: "text.echo", InputSchema: []byte(`{"type":"object"}`)},
		func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return textResult("echo"), nil })
	src := &countingSource{subs: map[string]int{}}
	ep.SetResourceSource(src)
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
	old := u.cur.Swap(srv)
	u.ep.Store(ep)
	u.src.Store(src)
	t.Cleanup(func() { srv.Close() })
	if old != nil {
		old.Close()
	}
}

// startListeningGateway runs a gateway node that serves listens, as
// taskwire gateway does, on a new SQLite file, and returns its MCP URL.
func startListeningGateway(t *testing.T, ctx context.Context, opts gateway.Options) string {
	t.Helper()
	g, err := gateway.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "gateway", Version: "1.0.0"})
	var tools durable.Set
	if err := g.Register(ep, &tools); err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{
		Addr:          "127.0.0.1:0",
		StoreSpec:     node.StoreSpec{Spec: store.Spec{Kind: store.SQLite, Path: filepath.Join(t.TempDir(), "gateway.db")}},
		Endpoint:      ep,
		Tools:         &tools,
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
		ShutdownGrace: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := n.Shutdown(); err != nil {
			t.Errorf("node Shutdown: %v", err)
		}
		if err := g.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
	})
	return n.URL()
}

// updates collects the resource updates a downstream client receives.
type updates chan string

func (u updates) note(uri string) {
	select {
	case u <- uri:
	default:
	}
}

// subscriber is a downstream client of url in the given revisions whose
// updates arrive on the returned channel.
func subscriber(t *testing.T, url string, versions ...string) (*client.Client, updates) {
	t.Helper()
	got := make(updates, 64)
	c, err := client.New(url, client.Options{ProtocolVersions: versions, OnResourceUpdated: got.note,
		Token: func(context.Context) (string, error) { return "alice", nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, got
}

// awaitUpdate waits for an update of uri on got, notifying it at the
// upstream until one arrives (a 2025 GET stream may open after the
// subscription).
func awaitUpdate(t *testing.T, ctx context.Context, up *subsUpstream, got updates, uri string) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		up.ep.Load().NotifyResourceUpdated(uri)
		select {
		case u := <-got:
			if u == uri {
				return
			}
		case <-tick.C:
		case <-ctx.Done():
			t.Fatalf("no update of %s reached the subscriber", uri)
		}
	}
}

// TestResourceSubscriptionsThroughGateway: with an upstream of either era,
// a 2025-era session's resources/subscribe and a 2026-07-28 listen's
// resourceSubscriptions for the same URI subscribe at the upstream once;
// the upstream's updates reach both; the upstream subscription ends when
// the last subscriber unsubscribes or its session ends; MaxSubscriptions
// is answered with -32602; an upstream's refusal reaches the 2025 client
// and leaves the URI out of a listen's acknowledgement; and a restarted
// upstream is subscribed again.
func TestResourceSubscriptionsThroughGateway(t *testing.T) {
	for _, version := range []string{mcp.LatestProtocolVersion, mcp.ProtocolVersion20251125} {
		t.Run(version, func(t *testing.T) {
			up := newSubsUpstream(t)
			ctx, cancel := context.WithTimeout(context.Background(), waitFor)
			defer cancel()
			url := startListeningGateway(t, ctx, gateway.Options{Upstream: up.url, ProtocolVersions: []string{version}, MaxSubscriptions: 2})
			const a = "file:///a"
			count := func(want int) func() string {
				return func() string {
					if n := up.src.Load().count(a); n != want {
						return "upstream subscribers of a: " + strconv.Itoa(n) + ", want " + strconv.Itoa(want)
					}
					return ""
				}
			}

			old, oldGot := subscriber(t, url, mcp.ProtocolVersion20250618)
			modern, modernGot := subscriber(t, url)
			if err := old.SubscribeResource(ctx, a); err != nil {
				t.Fatalf("2025 subscribe: %v", err)
			}
			if err := modern.SubscribeResource(ctx, a); err != nil {
				t.Fatalf("2026 listen: %v", err)
			}
			eventually(t, count(1))
			awaitUpdate(t, ctx, up, oldGot, a)
			awaitUpdate(t, ctx, up, modernGot, a)

			// The cap counts distinct URIs: a is one, b the second.
			if err := old.SubscribeResource(ctx, "file:///b"); err != nil {
				t.Fatalf("subscribe b: %v", err)
			}
			err := old.SubscribeResource(ctx, "file:///c")
			var rpc *client.RPCError
			if !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams || !strings.Contains(rpc.Message, "as many upstream resources as it may (2)") {
				t.Errorf("a third URI: %v, want -32602 naming the cap", err)
			}
			if err := old.UnsubscribeResource(ctx, "file:///b"); err != nil {
				t.Fatal(err)
			}
			eventually(t, func() string {
				if n := up.src.Load().count("file:///b"); n != 0 {
					return "b still subscribed upstream"
				}
				return ""
			})
			err = old.SubscribeResource(ctx, "file:///refused")
			if !errors.As(err, &rpc) || rpc.Code != mcp.CodeInvalidParams {
				t.Errorf("a URI the upstream refuses: %v, want -32602", err)
			}
			if err := modern.SubscribeResource(ctx, "file:///refused"); !errors.Is(err, client.ErrNotAcknowledged) {
				t.Errorf("a listen for a URI the upstream refuses: %v, want it not acknowledged", err)
			}

			// The upstream restarts: a is subscribed again on the new one.
			up.start(t)
			eventually(t, count(1))
			awaitUpdate(t, ctx, up, oldGot, a)
			awaitUpdate(t, ctx, up, modernGot, a)

			if err := old.UnsubscribeResource(ctx, a); err != nil {
				t.Fatal(err)
			}
			if err := modern.UnsubscribeResource(ctx, a); err != nil {
				t.Fatal(err)
			}
			eventually(t, count(0))

			// A session that ends releases its subscription.
			ender, _ := subscriber(t, url, mcp.ProtocolVersion20250618)
			if err := ender.SubscribeResource(ctx, a); err != nil {
				t.Fatal(err)
			}
			eventually(t, count(1))
			if err := ender.Close(); err != nil {
				t.Fatal(err)
			}
			eventually(t, count(0))
		})
	}
}
