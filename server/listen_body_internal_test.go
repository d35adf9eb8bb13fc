package server

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
)

// TestListenGivesBodyBack: a listen gives its request body (the pooled
// buffer and the body budget it charged) back once the request is decoded,
// not when its stream ends, so an idle stream holds no body.
func TestListenGivesBodyBack(t *testing.T) {
	m, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ep := NewEndpoint(EndpointOptions{Path: "/mcp", Name: "e", Version: "1", TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	srv, err := New(Options{Endpoints: []*Endpoint{ep}, TaskManager: m,
		Subscriptions: &SubscriptionOptions{Authorizer: AllowSubscriptions(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	defer srv.Close()

	// A body larger than freeBodyBytes charges the budget; an unknown
	// params member pads it.
	body, err := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 7, "method": mcp.MethodSubscriptionsListen,
		"params": map[string]any{
			"padding": strings.Repeat("x", 3*freeBodyBytes),
			"_meta": map[string]any{
				mcp.MetaProtocolVersion:    mcp.LatestProtocolVersion,
				mcp.MetaClientCapabilities: map[string]any{},
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/mcp", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LatestProtocolVersion)
	req.Header.Set(mcp.HeaderMethod, mcp.MethodSubscriptionsListen)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || !strings.Contains(line, mcp.NotificationSubscriptionsAcknowledged) {
		t.Fatalf("first line %q: %v", line, err)
	}
	// The stream is open and acknowledged: its body is given back.
	if n := srv.subs.count(); n != 1 {
		t.Fatalf("%d listens open, want 1", n)
	}
	if used := srv.budget.used.Load(); used != 0 {
		t.Errorf("body budget held by an open listen: %d bytes", used)
	}
}
