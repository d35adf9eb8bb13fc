package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/memory"
	"github.com/taskwire/taskwire/store/sqlite"
)

func TestSessionOptionsValidation(t *testing.T) {
	tests := []struct {
		name string
		opts server.Options
		want string
	}{
		{"negative MaxSessions", server.Options{Sessions: &server.SessionOptions{MaxSessions: -1}}, "SessionOptions.MaxSessions must not be negative"},
		{"negative IdleTimeout", server.Options{Sessions: &server.SessionOptions{IdleTimeout: -time.Second}}, "SessionOptions.IdleTimeout must not be negative"},
		{"per principal above the node cap", server.Options{Sessions: &server.SessionOptions{MaxSessions: 5, MaxPerPrincipal: 6}}, "MaxPerPrincipal (6) exceeds MaxSessions (5)"},
		{"idle above lifetime", server.Options{Sessions: &server.SessionOptions{IdleTimeout: 2 * time.Hour, MaxLifetime: time.Hour}}, "IdleTimeout (2h0m0s) exceeds MaxLifetime (1h0m0s)"},
		{"bad node ID", server.Options{NodeID: "a.b"}, "Options.NodeID must be 1 to 32 characters"},
		{"long node ID", server.Options{NodeID: strings.Repeat("n", 33)}, "Options.NodeID must be 1 to 32 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.opts.Endpoints = []*server.Endpoint{server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "e", Version: "1"})}
			_, err := server.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New: %v, want an error containing %q", err, tt.want)
			}
		})
	}
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "e", Version: "1", ProtocolVersions: []string{"2025-03-26"}})
	if _, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}}); err == nil || !strings.Contains(err.Error(), `"2025-03-26" is not implemented`) {
		t.Errorf("New with 2025-03-26: %v", err)
	}
}

// testClock is an injected clock.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newClockedLegacy(t *testing.T, so *server.SessionOptions) (*legacyClient, *testClock) {
	t.Helper()
	clock := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	srv := newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) {
		o.Sessions = so
		server.SetClockForTest(o, clock.Now)
	})
	return newLegacyRig(t, srv), clock
}

func TestSessionExpiry(t *testing.T) {
	c, clock := newClockedLegacy(t, &server.SessionOptions{IdleTimeout: 10 * time.Minute, MaxLifetime: time.Hour})
	ping := func() int { return c.request("ping", "").status }
	c.mustInitialize("2025-11-25", `{}`)
	steps := []struct {
		advance time.Duration
		want    int
	}{
		{0, 200},
		{0, 200}, // from the node's cache
		{9 * time.Minute, 200},
		{9 * time.Minute, 200}, // idle expiry counts from the last use
		{11 * time.Minute, 404},
	}
	for i, s := range steps {
		clock.Advance(s.advance)
		if got := ping(); got != s.want {
			t.Fatalf("step %d (+%v): status %d, want %d", i, s.advance, got, s.want)
		}
	}
	c.mustInitialize("2025-11-25", `{}`)
	for elapsed := time.Duration(0); elapsed < 55*time.Minute; elapsed += 9 * time.Minute {
		if got := ping(); got != 200 {
			t.Fatalf("busy session at +%v: %d", elapsed, got)
		}
		clock.Advance(9 * time.Minute)
	}
	clock.Advance(10 * time.Minute) // past MaxLifetime, though used 9 minutes ago
	if got := ping(); got != 404 {
		t.Errorf("session past its lifetime: %d, want 404", got)
	}
}

func TestSessionCaps(t *testing.T) {
	c, _ := newClockedLegacy(t, &server.SessionOptions{MaxSessions: 3, MaxPerPrincipal: 2})
	alice := func() *legacyClient { d := c.clone(); d.auth = "Bearer alice"; return d }
	a1, a2, a3 := alice(), alice(), alice()
	a1.mustInitialize("2025-11-25", `{}`)
	a2.mustInitialize("2025-11-25", `{}`)
	if rep := a3.initialize("2025-11-25", `{}`); rep.status != http.StatusTooManyRequests || rep.header.Get("Mcp-Session-Id") != "" {
		t.Errorf("third session of a principal: %d %s, want 429", rep.status, rep.body)
	}
	limited := c.clone()
	limited.auth = "Bearer limited" // the catalog's rate limiter refuses this partition
	if rep := limited.initialize("2025-11-25", `{}`); rep.status != http.StatusTooManyRequests || rep.header.Get("Retry-After") == "" {
		t.Errorf("rate-limited initialize: %d %s, want 429 with Retry-After", rep.status, rep.body)
	}
	bob := c.clone()
	bob.auth = "Bearer bob"
	bob.mustInitialize("2025-11-25", `{}`)
	carol := c.clone()
	carol.auth = "Bearer carol"
	if rep := carol.initialize("2025-11-25", `{}`); rep.status != http.StatusServiceUnavailable {
		t.Errorf("session beyond the node's cap: %d %s, want 503", rep.status, rep.body)
	}
	r, _ := http.NewRequest(http.MethodDelete, a1.url, nil)
	r.Header.Set("Mcp-Session-Id", a1.sid)
	r.Header.Set("Authorization", "Bearer alice")
	if res, err := http.DefaultClient.Do(r); err != nil || res.StatusCode != 200 {
		t.Fatalf("DELETE: %v", err)
	}
	a3.mustInitialize("2025-11-25", `{}`)
}

// TestSessionAnonymousCallers: callers without a principal share no
// per-principal bound; only the node's cap applies.
func TestSessionAnonymousCallers(t *testing.T) {
	c, _ := newClockedLegacy(t, &server.SessionOptions{MaxSessions: 4, MaxPerPrincipal: 1})
	for i := range 4 {
		if rep := c.clone().initialize("2025-11-25", `{}`); rep.status != http.StatusOK {
			t.Fatalf("anonymous session %d: %d %s", i, rep.status, rep.body)
		}
	}
	if rep := c.clone().initialize("2025-11-25", `{}`); rep.status != http.StatusServiceUnavailable {
		t.Errorf("anonymous session beyond the node's cap: %d, want 503", rep.status)
	}
}

// memRelay is an in-process AnswerRelay between the servers of one test.
type memRelay struct {
	mu  sync.Mutex
	fns map[string]func([]byte)
}

func (m *memRelay) Forward(_ context.Context, node string, b []byte) error {
	m.mu.Lock()
	fn := m.fns[node]
	m.mu.Unlock()
	if fn != nil {
		fn(append([]byte(nil), b...))
	}
	return nil
}

func (m *memRelay) Receive(node string, fn func([]byte)) (func(), error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.fns[node] = fn
	return func() { m.mu.Lock(); delete(m.fns, node); m.mu.Unlock() }, nil
}

// TestSessionFleet runs two nodes over one store and relay: a session
// opened on one works on the other, an answer posted to the other node
// reaches the call waiting on the first, and a DELETE through one node is
// seen by the other once its cache entry is stale.
func TestSessionFleet(t *testing.T) {
	store, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	relay := &memRelay{fns: map[string]func([]byte){}}
	clock := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	node := func(id string) (*server.Server, *legacyClient) {
		srv := newLegacyCatalog(t, func(o *server.Options, ep *server.Endpoint) {
			addInputTools(ep)
			o.Sessions = &server.SessionOptions{Store: store}
			o.NodeID, o.AnswerRelay = id, relay
			server.SetClockForTest(o, clock.Now)
		})
		return srv, newLegacyRig(t, srv)
	}
	srvA, a := node("n1")
	_, b := node("n2")
	a.mustInitialize("2025-11-25", `{"elicitation":{},"roots":{}}`)
	b.sid = a.sid
	if rep := b.request("ping", ""); rep.status != http.StatusOK {
		t.Fatalf("session of node A on node B: %d", rep.status)
	}
	a.answer = func(m legacyMsg) string {
		ack := b.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"action":"accept","content":{"ok":true}}}`)
		if ack.status != http.StatusAccepted {
			t.Errorf("answer through node B: %d %s", ack.status, ack.body)
		}
		return ""
	}
	rep := a.request("tools/call", `{"name":"confirm","arguments":{"target":"db"}}`)
	if m := rep.final(t); m.Error != nil || !strings.Contains(string(m.Result), "deleted db") {
		t.Errorf("call answered through another node: %s", rep.body)
	}
	// Another session of the same caller, on node B, cannot answer it: B
	// forwards (it cannot tell), A drops the answer, the real one counts.
	intruder := b.clone()
	intruder.mustInitialize("2025-11-25", `{}`)
	a.answer = func(m legacyMsg) string {
		if ack := intruder.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[{"uri":"file:///evil"}]}}`); ack.status != http.StatusAccepted {
			t.Errorf("foreign answer through node B: %d", ack.status)
		}
		if ack := b.send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"roots":[{"uri":"file:///work"}]}}`); ack.status != http.StatusAccepted {
			t.Errorf("answer through node B: %d %s", ack.status, ack.body)
		}
		return ""
	}
	rep = a.request("tools/call", `{"name":"roots","arguments":{}}`)
	if m := rep.final(t); m.Error != nil || !strings.Contains(string(m.Result), "root file:///work") {
		t.Errorf("forwarded answers: %s", rep.body)
	}
	r, _ := http.NewRequest(http.MethodDelete, b.url, nil)
	r.Header.Set("Mcp-Session-Id", b.sid)
	if res, err := http.DefaultClient.Do(r); err != nil || res.StatusCode != 200 {
		t.Fatalf("DELETE on node B: %v", err)
	}
	clock.Advance(3 * time.Second) // beyond the node cache's staleness bound
	if rep := a.request("ping", ""); rep.status != http.StatusNotFound {
		t.Errorf("session deleted on node B, on node A: %d, want 404", rep.status)
	}
	srvA.Close()
	if len(relay.fns) != 1 {
		t.Errorf("Close left %d relay receivers, want 1", len(relay.fns))
	}
}

// failingStore is a real in-process store whose reads can be made to fail.
type failingStore struct {
	*memory.Store
	mu   sync.Mutex
	fail error
}

func (f *failingStore) setFail(err error) { f.mu.Lock(); f.fail = err; f.mu.Unlock() }

func (f *failingStore) Load(ctx context.Context, key string, now time.Time) (session.Record, error) {
	f.mu.Lock()
	err := f.fail
	f.mu.Unlock()
	if err != nil {
		return session.Record{}, err
	}
	return f.Store.Load(ctx, key, now)
}

// TestSessionStoreFailure: a failing store gives the fixed internal error
// (HTTP 500 on GET and DELETE), a store deadline the busy error, and the
// log names neither the session ID nor its key.
func TestSessionStoreFailure(t *testing.T) {
	mem, _ := memory.New(memory.Options{})
	store := &failingStore{Store: mem}
	clock := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	var logs strings.Builder
	var logMu sync.Mutex
	srv := newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) {
		o.Sessions = &server.SessionOptions{Store: store}
		o.Logger = slog.New(slog.NewTextHandler(lockedWriter{&logMu, &logs}, nil))
		server.SetClockForTest(o, clock.Now)
	})
	c := newLegacyRig(t, srv)
	c.mustInitialize("2025-11-25", `{}`)
	clock.Advance(3 * time.Second) // past the cache, so the store is read
	store.setFail(errors.New("disk on fire"))
	rep := c.request("ping", "")
	if m := rep.final(t); rep.status != http.StatusOK || m.Error == nil || m.Error.Code != mcp.CodeInternalError || m.Error.Message != "Internal error" {
		t.Errorf("POST with a failing store: %d %s", rep.status, rep.body)
	}
	if res, _ := openGetStream(t, c); res.StatusCode != http.StatusInternalServerError {
		t.Errorf("GET with a failing store: %d, want 500", res.StatusCode)
	}
	store.setFail(context.DeadlineExceeded)
	if rep := c.request("ping", ""); rep.status != http.StatusServiceUnavailable {
		t.Errorf("POST with a store past its deadline: %d, want 503", rep.status)
	}
	store.setFail(nil)
	if rep := c.request("ping", ""); rep.status != http.StatusOK {
		t.Errorf("POST after the store recovered: %d", rep.status)
	}
	logMu.Lock()
	defer logMu.Unlock()
	out := logs.String()
	if !strings.Contains(out, "session store failed") {
		t.Errorf("store failure not logged: %q", out)
	}
	sum := sha256.Sum256([]byte(c.sid))
	if strings.Contains(out, c.sid) || strings.Contains(out, hex.EncodeToString(sum[:])) || !strings.Contains(out, `err="disk on fire"`) {
		t.Errorf("log carries the session ID or its key, or lacks the store's error text: %q", out)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *strings.Builder
}

func (l lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// TestSessionNodeStateEndsWithSession: a session the store no longer has
// takes its GET stream with it, and node-local state that only
// subscriptions hold is swept once idle, so abandoned sessions cannot
// fill the node.
func TestSessionNodeStateEndsWithSession(t *testing.T) {
	c, clock := newClockedLegacy(t, &server.SessionOptions{MaxSessions: 2, MaxPerPrincipal: 2, IdleTimeout: 30 * time.Minute})
	a := c.clone()
	a.mustInitialize("2025-11-25", `{}`)
	res, events := openGetStream(t, a)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d", res.StatusCode)
	}
	if rep := a.request("resources/subscribe", `{"uri":"file:///readme.md"}`); rep.final(t).Error != nil {
		t.Fatalf("subscribe: %s", rep.body)
	}
	clock.Advance(31 * time.Minute)
	if rep := a.request("ping", ""); rep.status != http.StatusNotFound {
		t.Fatalf("expired session: %d", rep.status)
	}
	for m := range events {
		t.Errorf("event on an expired session's stream: %+v", m)
	}

	b := c.clone()
	b.mustInitialize("2025-11-25", `{}`)
	if rep := b.request("resources/subscribe", `{"uri":"file:///readme.md"}`); rep.final(t).Error != nil {
		t.Fatalf("subscribe: %s", rep.body)
	}
	clock.Advance(31 * time.Minute) // b is abandoned with its subscription
	d := c.clone()
	d.mustInitialize("2025-11-25", `{}`) // sweeps
	e := c.clone()
	e.mustInitialize("2025-11-25", `{}`)
	for _, cl := range []*legacyClient{d, e} {
		if rep := cl.request("resources/subscribe", `{"uri":"file:///readme.md"}`); rep.status != http.StatusOK || rep.final(t).Error != nil {
			t.Errorf("subscribe on a node that held an abandoned session: %d %s", rep.status, rep.body)
		}
	}
}

// TestSessionSurvivesRestartOnSQLite: with a durable store a session (its
// version, capabilities and log level) outlives the node that opened it.
func TestSessionSurvivesRestartOnSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sessions.db")
	quiet := slog.New(slog.DiscardHandler)
	open := func() (*sqlite.Store, *legacyClient) {
		st, err := sqlite.Open(t.Context(), sqlite.Options{Path: path, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		srv := newLegacyCatalog(t, func(o *server.Options, ep *server.Endpoint) {
			addInputTools(ep)
			o.Sessions = &server.SessionOptions{Store: st.Sessions()}
		})
		return st, newLegacyRig(t, srv)
	}
	st, c := open()
	c.mustInitialize("2025-06-18", `{"roots":{}}`)
	if rep := c.request("logging/setLevel", `{"level":"error"}`); rep.final(t).Error != nil {
		t.Fatalf("setLevel: %s", rep.body)
	}
	st.Close()

	st2, c2 := open()
	defer st2.Close()
	c2.sid = c.sid
	c2.answer = answerAll
	rep := c2.request("tools/call", `{"name":"roots","arguments":{}}`)
	if m := rep.final(t); m.Error != nil || !strings.Contains(string(m.Result), "root file:///work") {
		t.Errorf("call after a restart: %d %s", rep.status, rep.body)
	}
	rep = c2.request("tools/list", "")
	if strings.Contains(string(rep.final(t).Result), "execution") {
		t.Errorf("a 2025-06-18 session became another version after a restart: %s", rep.body)
	}
}
