package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/memory"
)

// failAfter bounds how long a test waits for something that must happen;
// it only turns a missing event into a failure (it synchronises nothing).
const failAfter = 20 * time.Second

// blockingTool adds a tool "block" that reports each start on started,
// waits for its call to end and reports that on ended.
func blockingTool(ep *server.Endpoint, started, ended chan<- struct{}) {
	server.AddTool(ep, &mcp.Tool{Name: "block"},
		func(ctx context.Context, _ *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			started <- struct{}{}
			<-ctx.Done()
			ended <- struct{}{}
			return nil, nil, ctx.Err()
		})
}

// postStatus posts body and returns the status and body of the response
// (read to its end); it reports errors instead of failing the test, so
// that goroutines may call it.
func postStatus(c *legacyClient, ctx context.Context, body string) (int, string, error) {
	res, err := http.DefaultClient.Do(c.newPost(ctx, body))
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, string(b), err
}

// A request ID still in flight may be reused (a client may reuse it once
// it has read the response, before the call deregisters), but every call
// counts against the session's in-flight cap (256) and every one of them
// is ended by notifications/cancelled naming the ID and by DELETE.
func TestLegacyReusedIDCountsAgainstInflightCap(t *testing.T) {
	const maxInflight = 256
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"block","arguments":{}}}`
	for _, tc := range []struct {
		name string
		end  func(t *testing.T, c *legacyClient)
	}{
		{"notifications/cancelled", func(t *testing.T, c *legacyClient) {
			if rep := c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":9}}`); rep.status != http.StatusAccepted {
				t.Fatalf("cancel: status %d", rep.status)
			}
		}},
		{"DELETE", func(t *testing.T, c *legacyClient) {
			r, _ := http.NewRequest(http.MethodDelete, c.url, nil)
			r.Header.Set("Mcp-Session-Id", c.sid)
			r.Header.Set("Authorization", c.auth)
			res, err := http.DefaultClient.Do(r)
			if err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("DELETE: %v %v", err, res)
			}
			res.Body.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started := make(chan struct{}, 2*maxInflight)
			ended := make(chan struct{}, 2*maxInflight)
			srv := newLegacyCatalog(t, func(o *server.Options, ep *server.Endpoint) {
				o.RequestTimeout = time.Minute
				o.HandlerConcurrency = 2 * maxInflight // the pool is not the bound under test
				blockingTool(ep, started, ended)
			})
			c := newLegacyRig(t, srv)
			c.auth = "Bearer alice"
			c.mustInitialize("2025-11-25", `{}`)
			var wg sync.WaitGroup
			defer wg.Wait()
			for range maxInflight {
				wg.Add(1)
				go func() {
					defer wg.Done()
					postStatus(c, context.Background(), body)
				}()
			}
			for range maxInflight {
				<-started
			}
			type reply struct {
				status int
				body   string
			}
			got := make(chan reply, 1)
			go func() {
				status, b, _ := postStatus(c, context.Background(), body)
				got <- reply{status, b}
			}()
			select {
			case rep := <-got:
				if rep.status != http.StatusTooManyRequests || !strings.Contains(rep.body, "Too many requests in flight") {
					t.Errorf("call %d with a reused id: status %d, body %s; want 429 too many in flight", maxInflight+1, rep.status, rep.body)
				}
			case <-started:
				t.Errorf("call %d with a reused id ran past the in-flight cap", maxInflight+1)
			}
			tc.end(t, c)
			timeout := time.After(failAfter)
			for i := range maxInflight {
				select {
				case <-ended:
				case <-timeout:
					t.Fatalf("%s ended %d of %d calls with the reused id", tc.name, i, maxInflight)
				}
			}
		})
	}
}

// addFanOutTool adds a tool "sixteen" whose one input round asks the
// client for its roots sixteen times (maxInputRequests).
func addFanOutTool(ep *server.Endpoint) {
	server.AddTool(ep, &mcp.Tool{Name: "sixteen"},
		func(_ context.Context, req *server.Request, _ struct{}) (*mcp.CallToolResult, any, error) {
			if req.RequestState() != nil {
				return &mcp.CallToolResult{Content: textContent("answered")}, nil, nil
			}
			reqs := mcp.InputRequests{}
			for i := range 16 {
				reqs[string(rune('a'+i))] = &mcp.InputRequest{Method: mcp.MethodRootsList}
			}
			return nil, nil, server.InputRequired(reqs, []byte("x"))
		})
}

// openRound posts a call of "sixteen" and reads its sixteen
// server-to-client requests; the call then waits for their answers until
// ctx ends. It returns their IDs.
func openRound(t *testing.T, c *legacyClient, ctx context.Context, id int) []string {
	t.Helper()
	res, err := http.DefaultClient.Do(c.newPost(ctx, `{"jsonrpc":"2.0","id":`+strconv.Itoa(id)+`,"method":"tools/call","params":{"name":"sixteen","arguments":{}}}`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("call %d: status %d, body %s", id, res.StatusCode, b)
	}
	br := bufio.NewReader(res.Body)
	var ids []string
	for len(ids) < 16 {
		data, err := readSSEData(br)
		if err != nil {
			t.Fatalf("call %d: %v", id, err)
		}
		var m legacyMsg
		if err := json.Unmarshal(data, &m); err != nil || m.Method != mcp.MethodRootsList {
			t.Fatalf("call %d: event %s", id, data)
		}
		ids = append(ids, string(m.ID))
	}
	return ids
}

// One session may have at most 64 server-to-client requests waiting for
// answers on a node: a round beyond that is refused whole (429) before any
// of its requests is sent, and another session's requests still go out.
func TestLegacyPendingAnswersBoundedPerSession(t *testing.T) {
	srv := newLegacyCatalog(t, func(o *server.Options, ep *server.Endpoint) {
		o.RequestTimeout = time.Minute
		addInputTools(ep)
		addFanOutTool(ep)
	})
	m := newLegacyRig(t, srv)
	m.auth = "Bearer mallory"
	m.mustInitialize("2025-11-25", `{"roots":{}}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for i := range 4 { // 4 rounds of 16: the session's 64
		openRound(t, m, ctx, 100+i)
	}
	rep := m.send(`{"jsonrpc":"2.0","id":200,"method":"tools/call","params":{"name":"sixteen","arguments":{}}}`)
	if rep.status != http.StatusTooManyRequests || len(rep.msgs) != 1 || rep.msgs[0].Error == nil ||
		rep.msgs[0].Error.Code != server.CodeRateLimited {
		t.Fatalf("fifth round: status %d, body %s; want 429 with one error", rep.status, rep.body)
	}
	a := m.clone()
	a.auth = "Bearer alice"
	a.mustInitialize("2025-11-25", `{"roots":{}}`)
	a.answer = func(legacyMsg) string { return `{"roots":[{"uri":"file:///a"}]}` }
	if got := a.request("tools/call", `{"name":"roots","arguments":{}}`); got.final(t).Error != nil {
		t.Fatalf("alice's roots call: %s", got.body)
	}
}

// Answers to server-to-client requests are bounded: a result beyond 1 MiB
// is refused (400, response too large) without being kept, and the
// answers a waiting call holds stay charged to MaxBufferedBodyBytes, so
// that answers beyond it are refused (503) instead of piling up on the
// heap. A refused answer changes nothing: the request still waits.
func TestLegacyAnswersBounded(t *testing.T) {
	srv := newLegacyCatalog(t, func(o *server.Options, ep *server.Endpoint) {
		o.MaxBodyBytes = 2 << 20
		o.MaxBufferedBodyBytes = 4 << 20
		o.RequestTimeout = time.Minute
		addFanOutTool(ep)
	})
	c := newLegacyRig(t, srv)
	c.auth = "Bearer m"
	c.mustInitialize("2025-11-25", `{"roots":{}}`)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := openRound(t, c, ctx, 7)
	answer := func(id string, pad int) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"roots":[],"_meta":{"pad":"` + strings.Repeat("a", pad) + `"}}}`
	}
	const big = 900 << 10 // four of them pass the 4 MiB budget
	for _, tc := range []struct {
		name   string
		id     string
		pad    int
		status int
		want   string
	}{
		{"beyond 1 MiB", ids[0], 1 << 20, http.StatusBadRequest, "response too large"},
		{"first held", ids[0], big, http.StatusAccepted, ""},
		{"second held", ids[1], big, http.StatusAccepted, ""},
		{"third held", ids[2], big, http.StatusAccepted, ""},
		{"past the body budget", ids[3], big, http.StatusServiceUnavailable, "Server busy"},
		{"a small one still fits", ids[3], 10, http.StatusAccepted, ""},
	} {
		rep := c.send(answer(tc.id, tc.pad))
		if rep.status != tc.status || !strings.Contains(string(rep.body), tc.want) {
			t.Errorf("%s: status %d, body %.200s; want %d %q", tc.name, rep.status, rep.body, tc.status, tc.want)
		}
	}
}

// countingRelay counts the answers a server forwards.
type countingRelay struct{ forwards atomic.Int64 }

func (r *countingRelay) Forward(context.Context, string, []byte) error {
	r.forwards.Add(1)
	return nil
}

func (r *countingRelay) Receive(string, func([]byte)) (func(), error) { return func() {}, nil }

// countingStore counts the session reads of a store.
type countingStore struct {
	session.Store
	loads atomic.Int64
}

func (c *countingStore) Load(ctx context.Context, key string, now time.Time) (session.Record, error) {
	c.loads.Add(1)
	return c.Store.Load(ctx, key, now)
}

// allowN is a request limiter that allows n requests in all.
type allowN struct{ left atomic.Int64 }

func (l *allowN) Allow(string) (bool, time.Duration) { return l.left.Add(-1) >= 0, time.Second }

// Every message in a session (requests, notifications, responses to
// server-to-client requests, GET, DELETE) is charged to the request
// limiter before its session is read from the store: a client past its
// rate can neither guess session IDs at the store's expense nor flood the
// answer relay with responses naming another node.
func TestLegacyMessagesChargeLimiterBeforeLookup(t *testing.T) {
	const allowed, sent = 5, 40
	for _, tc := range []struct {
		name    string
		known   bool // in the session the client opened, or a guessed one
		body    string
		method  string
		forward bool
	}{
		{name: "request, unknown session", body: `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		{name: "notification, unknown session", body: `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`},
		{name: "response, unknown session", body: `{"jsonrpc":"2.0","id":"tw.n1.00000000000000000000000000000000","result":{}}`},
		{name: "GET, unknown session", method: http.MethodGet},
		{name: "DELETE, unknown session", method: http.MethodDelete},
		{name: "response for another node", known: true, forward: true,
			body: `{"jsonrpc":"2.0","id":"tw.victim.00000000000000000000000000000000","result":{"roots":[]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem, err := memory.New(memory.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := &countingStore{Store: mem}
			relay := &countingRelay{}
			lim := &allowN{}
			lim.left.Store(1 << 30) // initialize is not under test
			srv := newLegacyCatalog(t, func(o *server.Options, _ *server.Endpoint) {
				o.Sessions = &server.SessionOptions{Store: st}
				o.RequestLimiter = lim
				o.AnswerRelay = relay
			})
			c := newLegacyRig(t, srv)
			c.auth = "Bearer mallory"
			c.mustInitialize("2025-11-25", `{}`)
			if !tc.known {
				c.sid = strings.Repeat("g", 43)
			}
			lim.left.Store(allowed)
			st.loads.Store(0)
			statuses := map[int]int{}
			for range sent {
				if tc.method != "" {
					r, _ := http.NewRequest(tc.method, c.url, nil)
					r.Header.Set("Mcp-Session-Id", c.sid)
					r.Header.Set("Authorization", c.auth)
					r.Header.Set("Accept", "text/event-stream")
					res, err := http.DefaultClient.Do(r)
					if err != nil {
						t.Fatal(err)
					}
					res.Body.Close()
					statuses[res.StatusCode]++
					continue
				}
				statuses[c.send(tc.body).status]++
			}
			if got := st.loads.Load(); got > allowed {
				t.Errorf("store reads: %d, want at most %d (the limiter's allowance)", got, allowed)
			}
			if got := relay.forwards.Load(); tc.forward && got != allowed || !tc.forward && got != 0 {
				t.Errorf("forwards: %d", got)
			}
			if statuses[http.StatusTooManyRequests] != sent-allowed {
				t.Errorf("statuses %v: want %d of 429", statuses, sent-allowed)
			}
		})
	}
}
