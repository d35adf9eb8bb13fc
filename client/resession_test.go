package client_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// wireReq is one request the front forwarded or answered.
type wireReq struct {
	Verb    string // HTTP method
	Method  string // JSON-RPC method of a POST
	Session string // the Mcp-Session-Id sent, as "s1", "s2", … in order of first use; "" when none
	Status  int
}

// front is a loopback HTTP server in front of a real 2025-only taskwire
// server. It records every request, can restart the server (a new one,
// with a new session store, behind the same address) and can answer
// requests itself.
type front struct {
	rig  *rig
	srv  *httptest.Server
	url  string
	next atomic.Pointer[server.Server]

	mu       sync.Mutex
	seen     []wireReq
	sessions map[string]string // raw session ID → label
	raw      map[string]string // label → raw session ID
	// intercept, when set, sees every request first; it answers it itself
	// by returning true. Set it before the first request.
	intercept func(w http.ResponseWriter, r *http.Request, m wireReq) bool
	// answered, when set, sees every request once answered. Set it before
	// the first request.
	answered func(m wireReq)
}

func newFront(t *testing.T) *front {
	t.Helper()
	return newFrontOn(t, rigOptions{versions: []string{mcp.ProtocolVersion20251125}})
}

// newFrontOn is newFront over a rig with options o.
func newFrontOn(t *testing.T, o rigOptions) *front {
	t.Helper()
	f := &front{rig: newRig(t, o),
		sessions: map[string]string{}, raw: map[string]string{}}
	f.next.Store(f.rig.newServer(t))
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(func() {
		f.next.Load().Close()
		f.srv.Close()
	})
	f.url = f.srv.URL + "/mcp"
	return f
}

func (f *front) serve(w http.ResponseWriter, r *http.Request) {
	m := wireReq{Verb: r.Method}
	if r.Method == http.MethodPost {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body", http.StatusBadRequest)
			return
		}
		var msg struct {
			Method string `json:"method"`
		}
		json.Unmarshal(body, &msg)
		m.Method = msg.Method
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	if sid := r.Header.Get(mcp.HeaderSessionID); sid != "" {
		f.mu.Lock()
		label, ok := f.sessions[sid]
		if !ok {
			label = fmt.Sprintf("s%d", len(f.sessions)+1)
			f.sessions[sid], f.raw[label] = label, sid
		}
		f.mu.Unlock()
		m.Session = label
	}
	// Recorded on arrival, the status as soon as it is written: a client
	// has seen every status it acted on, and long streams are in the record
	// before they end.
	m.Status = http.StatusOK
	f.mu.Lock()
	f.seen = append(f.seen, m)
	sw := &statusWriter{ResponseWriter: w, f: f, i: len(f.seen) - 1}
	f.mu.Unlock()
	if f.intercept == nil || !f.intercept(sw, r, m) {
		f.next.Load().ServeHTTP(sw, r)
	}
	if f.answered != nil {
		f.mu.Lock()
		m = f.seen[sw.i]
		f.mu.Unlock()
		f.answered(m)
	}
}

// requests returns what the front saw with the given HTTP method.
func (f *front) requests(verb string) []wireReq {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []wireReq
	for _, m := range f.seen {
		if m.Verb == verb {
			out = append(out, m)
		}
	}
	return out
}

// initializes counts the initialize requests the front saw.
func (f *front) initializes() int {
	n := 0
	for _, m := range f.requests(http.MethodPost) {
		if m.Method == mcp.MethodInitialize {
			n++
		}
	}
	return n
}

// endSession ends a session on the server with DELETE over loopback, as
// the server's own expiry (idle timeout, lifetime) or another holder of
// the ID would; the front records it.
func (f *front) endSession(t *testing.T, label string) {
	t.Helper()
	f.mu.Lock()
	sid := f.raw[label]
	f.mu.Unlock()
	req, err := http.NewRequestWithContext(testContext(t), http.MethodDelete, f.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(mcp.HeaderSessionID, sid)
	req.Close = true // no idle connection left behind for goleak
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE %s: %d", label, resp.StatusCode)
	}
}

// restart replaces the server with a new one: every session is unknown.
func (f *front) restart(t *testing.T) {
	f.next.Swap(f.rig.newServer(t)).Close()
}

// statusWriter records the status of a response in the front's record i;
// Unwrap keeps the server's flushes, deadlines and hijacks working.
type statusWriter struct {
	http.ResponseWriter
	f *front
	i int
}

func (w *statusWriter) WriteHeader(code int) {
	w.f.mu.Lock()
	w.f.seen[w.i].Status = code
	w.f.mu.Unlock()
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// notFound answers like a server that does not know the session.
func notFound(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusNotFound)
	io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}`)
}

func legacyClient(t *testing.T, url string) *client.Client {
	return newClient(t, url, client.Options{ProtocolVersions: []string{mcp.ProtocolVersion20251125}})
}

func add(ctx context.Context, c *client.Client) error {
	res, err := c.Call(ctx, "add", map[string]int{"a": 1, "b": 2})
	if err != nil {
		return err
	}
	if got := string(res.Result.StructuredContent); got != `{"sum":3}` {
		return fmt.Errorf("result %s", got)
	}
	return nil
}

func post(method, session string, status int) wireReq {
	return wireReq{Verb: http.MethodPost, Method: method, Session: session, Status: status}
}

// opened is what a client sends to open a session: initialize without a
// session ID, then notifications/initialized in the new session.
func opened(session string) []wireReq {
	return []wireReq{post(mcp.MethodInitialize, "", 200), post(mcp.NotificationInitialized, session, 202)}
}

func seq(parts ...any) []wireReq {
	var out []wireReq
	for _, p := range parts {
		switch p := p.(type) {
		case wireReq:
			out = append(out, p)
		case []wireReq:
			out = append(out, p...)
		}
	}
	return out
}

// TestSessionRenewedAfter404: a 2025-era session that the server no longer
// knows between two calls is replaced by a new one (initialize without a
// session ID) and the failed call is sent once more in it.
func TestSessionRenewedAfter404(t *testing.T) {
	get := func(session string, status int) wireReq {
		return wireReq{Verb: http.MethodGet, Session: session, Status: status}
	}
	del := wireReq{Verb: http.MethodDelete, Session: "s1", Status: 200}
	for _, tc := range []struct {
		name    string
		expire  func(*testing.T, *front, <-chan struct{})
		deletes []wireReq // the test's own DELETE, then Close's
		gets    []wireReq // nil: only the new session's stream is checked
	}{{
		name:    "ended by the server",
		expire:  func(t *testing.T, f *front, _ <-chan struct{}) { f.endSession(t, "s1") },
		deletes: []wireReq{del, {Verb: http.MethodDelete, Session: "s2", Status: 200}},
	}, {
		name:    "server restarted",
		expire:  func(t *testing.T, f *front, _ <-chan struct{}) { f.restart(t) },
		deletes: []wireReq{{Verb: http.MethodDelete, Session: "s2", Status: 200}},
	}, {
		// The session stream ends with the session; its reconnection gets
		// 404 and ends quietly, and the next call renews the session.
		name: "stream got 404 first",
		expire: func(t *testing.T, f *front, streamGone <-chan struct{}) {
			f.endSession(t, "s1")
			select {
			case <-streamGone:
			case <-testContext(t).Done():
				t.Fatal("the session stream did not reconnect")
			}
		},
		deletes: []wireReq{del, {Verb: http.MethodDelete, Session: "s2", Status: 200}},
		gets:    []wireReq{get("s1", 200), get("s1", 404), get("s2", 200)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFront(t)
			streamGone := make(chan struct{}, 1)
			f.answered = func(m wireReq) {
				if m.Verb == http.MethodGet && m.Status == http.StatusNotFound {
					select {
					case streamGone <- struct{}{}:
					default:
					}
				}
			}
			c := legacyClient(t, f.url)
			ctx := testContext(t)
			if err := add(ctx, c); err != nil {
				t.Fatal(err)
			}
			tc.expire(t, f, streamGone)
			if err := add(ctx, c); err != nil {
				t.Fatalf("call after the session ended: %v", err)
			}
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			want := seq(opened("s1"), post(mcp.MethodToolsList, "s1", 200), post(mcp.MethodToolsCall, "s1", 200),
				post(mcp.MethodToolsCall, "s1", 404), opened("s2"), post(mcp.MethodToolsCall, "s2", 200))
			if diff := cmp.Diff(want, f.requests(http.MethodPost)); diff != "" {
				t.Errorf("POSTs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.deletes, f.requests(http.MethodDelete)); diff != "" {
				t.Errorf("DELETEs (-want +got):\n%s", diff)
			}
			gets := f.requests(http.MethodGet)
			if tc.gets == nil {
				tc.gets = []wireReq{get("s2", 200)}
				gets = slices.DeleteFunc(gets, func(m wireReq) bool { return m.Session != "s2" })
			}
			if diff := cmp.Diff(tc.gets, gets); diff != "" {
				t.Errorf("GETs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConcurrentCallsShareOneRenewal: calls that all get 404 for the same
// ended session open one new session; the others retry in it.
func TestConcurrentCallsShareOneRenewal(t *testing.T) {
	const n = 8
	f := newFront(t)
	var inits, notFounds atomic.Int32
	all404 := make(chan struct{})
	f.intercept = func(_ http.ResponseWriter, r *http.Request, m wireReq) bool {
		if m.Method == mcp.MethodInitialize && inits.Add(1) == 2 {
			// Hold the renewal until every call has had its 404, so that
			// all of them carried the ended session.
			select {
			case <-all404:
			case <-r.Context().Done():
			}
		}
		return false
	}
	f.answered = func(m wireReq) {
		if m.Method == mcp.MethodToolsCall && m.Status == http.StatusNotFound && notFounds.Add(1) == n {
			close(all404)
		}
	}
	c := legacyClient(t, f.url)
	ctx := testContext(t)
	if err := add(ctx, c); err != nil {
		t.Fatal(err)
	}
	f.endSession(t, "s1")
	errs := make(chan error, n)
	for range n {
		go func() { errs <- add(ctx, c) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("call: %v", err)
		}
	}
	if got := f.initializes(); got != 2 {
		t.Errorf("initialize sent %d times, want 2", got)
	}
	calls := map[wireReq]int{}
	for _, m := range f.requests(http.MethodPost) {
		if m.Method == mcp.MethodToolsCall {
			calls[m]++
		}
	}
	want := map[wireReq]int{post(mcp.MethodToolsCall, "s1", 200): 1, post(mcp.MethodToolsCall, "s1", 404): n, post(mcp.MethodToolsCall, "s2", 200): n}
	if diff := cmp.Diff(want, calls); diff != "" {
		t.Errorf("tools/call (-want +got):\n%s", diff)
	}
}

// TestSessionRenewalFails: when the retry or the new initialize gets 404
// too, the call fails with that answer; nothing loops.
func TestSessionRenewalFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		// arm runs after a first successful call; fake answers 404 to
		// the requests it picks from then on.
		arm     func(*testing.T, *front)
		fake    func(m wireReq, initializes int32) bool
		want    []wireReq
		wantErr *client.RPCError
	}{{
		name: "the retry gets 404",
		arm:  func(*testing.T, *front) {},
		fake: func(m wireReq, _ int32) bool { return m.Method == mcp.MethodToolsCall },
		want: seq(post(mcp.MethodToolsCall, "s1", 404), opened("s2"), post(mcp.MethodToolsCall, "s2", 404)),
		wantErr: &client.RPCError{Code: -32001, Message: "Session not found", HTTPStatus: 404,
			Method: mcp.MethodToolsCall},
	}, {
		name: "the new initialize gets 404",
		arm:  func(t *testing.T, f *front) { f.endSession(t, "s1") },
		fake: func(m wireReq, inits int32) bool { return m.Method == mcp.MethodInitialize && inits == 2 },
		want: seq(post(mcp.MethodToolsCall, "s1", 404), post(mcp.MethodInitialize, "", 404)),
		wantErr: &client.RPCError{Code: -32001, Message: "Session not found", HTTPStatus: 404,
			Method: mcp.MethodInitialize},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFront(t)
			var armed atomic.Bool
			var inits atomic.Int32
			f.intercept = func(w http.ResponseWriter, _ *http.Request, m wireReq) bool {
				if m.Method == mcp.MethodInitialize {
					inits.Add(1)
				}
				if armed.Load() && tc.fake(m, inits.Load()) {
					notFound(w)
					return true
				}
				return false
			}
			c := legacyClient(t, f.url)
			ctx := testContext(t)
			if err := add(ctx, c); err != nil {
				t.Fatal(err)
			}
			tc.arm(t, f)
			armed.Store(true)
			err := add(ctx, c)
			var rpc *client.RPCError
			if !errors.As(err, &rpc) {
				t.Fatalf("call: %v, want an *RPCError", err)
			}
			if diff := cmp.Diff(tc.wantErr, rpc); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			c.Close()
			want := seq(opened("s1"), post(mcp.MethodToolsList, "s1", 200), post(mcp.MethodToolsCall, "s1", 200), tc.want)
			if diff := cmp.Diff(want, f.requests(http.MethodPost)); diff != "" {
				t.Errorf("POSTs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCloseDuringRenewal: Close while a new session is being opened ends
// the call and leaves no goroutine behind.
func TestCloseDuringRenewal(t *testing.T) {
	f := newFront(t)
	var armed atomic.Bool
	reached := make(chan struct{})
	f.intercept = func(_ http.ResponseWriter, r *http.Request, m wireReq) bool {
		if armed.Load() && m.Method == mcp.MethodInitialize {
			close(reached) // one renewal only
			<-r.Context().Done()
			return true
		}
		return false
	}
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	c, err := client.New(f.url, client.Options{ProtocolVersions: []string{mcp.ProtocolVersion20251125}})
	if err != nil {
		t.Fatal(err)
	}
	if err := add(testContext(t), c); err != nil {
		t.Fatal(err)
	}
	f.endSession(t, "s1")
	armed.Store(true)
	done := make(chan error, 1)
	go func() { done <- add(context.Background(), c) }()
	select {
	case <-reached:
	case err := <-done:
		t.Fatalf("the call ended without renewing the session: %v", err)
	}
	c.Close()
	if err := <-done; !errors.Is(err, context.Canceled) && !errors.Is(err, client.ErrClosed) {
		t.Fatalf("call during Close: %v", err)
	}
}
