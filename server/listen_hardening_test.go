package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// openHTTPListen opens a listen over real HTTP as bearer (none when
// empty). On success it returns the response after reading the
// acknowledgement; otherwise the response with its body unread.
func openHTTPListen(t *testing.T, hc *http.Client, url, rpcID, bearer string, ids ...string) *http.Response {
	t.Helper()
	resp := openHTTPListenBody(t, hc, url, rpcID, bearer, ids...)
	if resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Type") == "text/event-stream" {
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || !strings.Contains(line, mcp.NotificationSubscriptionsAcknowledged) {
			t.Fatalf("listen %s: first line %q, %v", rpcID, line, err)
		}
	}
	return resp
}

// TestListenPerPrincipalCap: one principal holding MaxPerPrincipal listens
// gets HTTP 429 with Retry-After for the next one, before the authorizer
// runs, while another principal of the same tenant capacity still gets
// listens; closing one of the first principal's streams frees its slot.
// Anonymous callers are not counted per principal.
func TestListenPerPrincipalCap(t *testing.T) {
	var authorized atomic.Int64
	auth := &testAuthorizer{fn: func(context.Context, *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
		authorized.Add(1)
		return server.SubscriptionGrant{Until: time.Now().Add(time.Hour)}, nil
	}}
	r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth, MaxPerPrincipal: 3}, nil)
	ts := httptest.NewServer(r.srv)
	defer ts.Close()
	defer r.srv.Close() // before ts.Close, which waits for the streams
	url := ts.URL + "/mcp"
	hc := ts.Client()

	var open []*http.Response
	defer func() {
		for _, resp := range open {
			resp.Body.Close()
		}
	}()
	for i := range 3 {
		resp := openHTTPListen(t, hc, url, fmt.Sprint(i+1), "mallory", "tid-1")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("listen %d of mallory: HTTP %d", i+1, resp.StatusCode)
		}
		open = append(open, resp)
	}
	before := authorized.Load()
	refused := openHTTPListen(t, hc, url, "4", "mallory", "tid-1")
	var body []byte
	if refused.Header.Get("Content-Type") != "text/event-stream" {
		body, _ = io.ReadAll(refused.Body)
	}
	refused.Body.Close()
	if refused.StatusCode != http.StatusTooManyRequests || refused.Header.Get("Retry-After") != "5" {
		t.Errorf("fourth listen of mallory: HTTP %d, Retry-After %q, %s; want 429 with Retry-After 5",
			refused.StatusCode, refused.Header.Get("Retry-After"), body)
	}
	if !strings.Contains(string(body), fmt.Sprint(server.CodeRateLimited)) {
		t.Errorf("refusal body %s lacks code %d", body, server.CodeRateLimited)
	}
	if n := authorized.Load() - before; n != 0 {
		t.Errorf("the refused listen was authorized %d times", n)
	}

	// Another principal, and anonymous callers, are not affected.
	for i, who := range []string{"alice", "", "", "", ""} {
		resp := openHTTPListen(t, hc, url, fmt.Sprint(10+i), who, "tid-1")
		if resp.StatusCode != http.StatusOK {
			t.Errorf("listen of %q: HTTP %d", who, resp.StatusCode)
		}
		open = append(open, resp)
	}

	// Ending one of mallory's streams frees its slot.
	open[0].Body.Close()
	open = open[1:]
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp := openHTTPListen(t, hc, url, "20", "mallory", "tid-1")
		if resp.StatusCode == http.StatusOK {
			open = append(open, resp)
			break
		}
		resp.Body.Close()
		if time.Now().After(deadline) {
			t.Fatalf("mallory's slot was not freed: HTTP %d", resp.StatusCode)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestListenOwnsRenewalAuthorizer: a renewal whose authorizer ignores
// cancellation ends its listen gracefully at AuthorizationTimeout; the
// goroutine running the authorizer belongs to the listen, whose request
// neither finishes nor gives its capacity back before the authorizer has
// returned. No authorizer call outlives its listen.
func TestListenOwnsRenewalAuthorizer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var running atomic.Int64
		auth := &testAuthorizer{fn: func(ctx context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
			if req.Renewal {
				running.Add(1)
				defer running.Add(-1)
				<-release // ignores cancellation
			}
			return server.SubscriptionGrant{Until: time.Now().Add(4 * time.Second)}, nil
		}}
		r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth, AuthorizationTimeout: time.Second, MaxSubscriptions: 1}, nil)
		id := r.createTask(t, `{"n":1}`, nil)
		lc, _ := listen(t, r.srv, "1", nil, id)
		start := time.Now()
		time.AfterFunc(10*time.Second, func() { close(release) })

		// Renewal at about 2 s, refused by its timeout at about 3 s.
		lc.expect(t, "end")
		if running.Load() != 1 {
			t.Fatalf("%d renewals running after the listen's final result, want the stuck one", running.Load())
		}
		// The capacity of one is still held by the stuck authorizer.
		if res := startListen(r.srv, "2", idsFilter(id), taskCaps, nil).open(t); res == nil || res.Status != http.StatusServiceUnavailable {
			t.Errorf("a second listen while the first one's authorizer runs: %v, want HTTP 503", res)
		}
		lc.wait(t)
		if n := running.Load(); n != 0 {
			t.Errorf("the listen's request finished with %d authorizer calls still running", n)
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("the listen's request finished after %v, want when its authorizer returned (10 s)", d)
		}
		b, _ := listen(t, r.srv, "3", nil, id) // the capacity is free again
		r.srv.Close()
		b.expectEnd(t, "end")
	})
}

// TestListenSharesLookupsPerView: listens of the same view (endpoint,
// identity, protocol version, capabilities) that follow one task cost one
// manager lookup (and one policy and sanitizer call) per hint together,
// not one each; another identity has its own. Every listen still gets the
// notification, with its own subscription ID.
func TestListenSharesLookupsPerView(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	id := r.createTask(t, `{"n":1}`, asAlice)
	other := r.createTask(t, `{"n":2}`, asBob)
	var alice []*listenConn
	for i := range 5 {
		lc, _ := listen(t, r.srv, fmt.Sprint(i+1), asAlice, id)
		alice = append(alice, lc)
	}
	bob, _ := listen(t, r.srv, `"b"`, asBob, other)
	r.takeCalls()

	taskMust(t)(r.mem.MarkWorking(id, "one"))
	for _, lc := range alice {
		lc.expect(t, note(id, "working", "one"))
	}
	diffCalls(t, "a hint for five listens of one view", taskCalls{Find: 1}, r.takeCalls())

	completeTask(t, r, id)
	for _, lc := range alice {
		lc.expect(t, note(id, "completed", "done"))
	}
	diffCalls(t, "a completion for five listens of one view", taskCalls{Find: 1, Policy: 1, Sanitize: 1}, r.takeCalls())

	taskMust(t)(r.mem.MarkWorking(other, "two"))
	bob.expect(t, note(other, "working", "two"))
	diffCalls(t, "another view", taskCalls{Find: 1}, r.takeCalls())

	r.srv.Close()
	for _, lc := range append(alice, bob) {
		lc.expectEnd(t, "end")
	}
}
