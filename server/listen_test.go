package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/internal/schemacheck"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// Tests of subscriptions/listen with task notifications. They run the real
// pipeline in process: the handler writes into sseRecorder, which splits
// the stream into events as they are written, and every data event a test
// reads passes the listen invariants (listenConn.next): the first message
// is the acknowledgement, every message carries the subscription ID, and
// nothing but the acknowledgement, notifications/tasks and the final
// response ever appears on the stream.

var (
	asAlice = map[string]string{"Authorization": "Bearer alice"}
	asBob   = map[string]string{"Authorization": "Bearer bob"}
)

// listenWait bounds every wait for a stream event. Inside a synctest bubble
// it is fake time, and fires only once every goroutine is blocked.
const listenWait = 20 * time.Second

// sseItem is one SSE event: a data message or a comment.
type sseItem struct {
	comment string
	data    json.RawMessage
}

// sseRecorder is an http.ResponseWriter for streaming responses. Writes
// never block.
type sseRecorder struct {
	header  http.Header
	started chan struct{}
	once    sync.Once
	status  int

	mu      sync.Mutex
	raw     bytes.Buffer
	partial []byte
	items   chan sseItem
}

func newSSERecorder() *sseRecorder {
	return &sseRecorder{header: http.Header{}, started: make(chan struct{}), items: make(chan sseItem, 1<<14)}
}

func (w *sseRecorder) Header() http.Header { return w.header }

func (w *sseRecorder) WriteHeader(status int) {
	w.once.Do(func() {
		w.status = status
		close(w.started)
	})
}

func (w *sseRecorder) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.raw.Write(b)
	if !strings.HasPrefix(w.header.Get("Content-Type"), "text/event-stream") {
		return len(b), nil
	}
	w.partial = append(w.partial, b...)
	for {
		i := bytes.Index(w.partial, []byte("\n\n"))
		if i < 0 {
			return len(b), nil
		}
		event := string(w.partial[:i])
		w.partial = w.partial[i+2:]
		for line := range strings.SplitSeq(event, "\n") {
			var it sseItem
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				it.data = json.RawMessage(data)
			} else if c, ok := strings.CutPrefix(line, ":"); ok {
				it.comment = strings.TrimSpace(c)
			} else {
				it.comment = "UNEXPECTED LINE " + line
			}
			select {
			case w.items <- it:
			default:
				return 0, errors.New("sseRecorder: too many unread events")
			}
		}
	}
}

func (w *sseRecorder) Flush()                           {}
func (w *sseRecorder) SetWriteDeadline(time.Time) error { return nil }

func (w *sseRecorder) bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return bytes.Clone(w.raw.Bytes())
}

// listenConn is one subscriptions/listen request served in process.
type listenConn struct {
	id     string // the request's JSON-RPC id, as JSON
	rec    *sseRecorder
	cancel context.CancelFunc
	done   chan struct{}
	n      int // data messages read
	ended  bool
}

// listenBody is a listen request with the raw filter and capabilities.
func listenBody(id, filter, caps string) string {
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":` + filter + `,"_meta":` + taskMeta(caps) + `}}`
}

// idsFilter is {"taskIds":[...]}.
func idsFilter(ids ...string) string {
	b, _ := json.Marshal(map[string][]string{"taskIds": ids})
	return string(b)
}

// startListen sends a listen request without waiting for any answer.
func startListen(h http.Handler, id, filter, caps string, hdr map[string]string) *listenConn {
	ctx, cancel := context.WithCancel(context.Background())
	req := rawPost(listenBody(id, filter, caps), mcp.MethodSubscriptionsListen, hdr).WithContext(ctx)
	lc := &listenConn{id: id, rec: newSSERecorder(), cancel: cancel, done: make(chan struct{})}
	go func() { // ends with the handler
		defer close(lc.done)
		defer close(lc.rec.items)
		h.ServeHTTP(lc.rec, req)
	}()
	return lc
}

// open waits for the response to start. It returns nil for a stream, or
// the complete response when the server answered with plain JSON.
func (lc *listenConn) open(t *testing.T) *mcptest.Response {
	t.Helper()
	select {
	case <-lc.rec.started:
	case <-lc.done:
	case <-time.After(listenWait):
		t.Fatal("the listen response did not start")
	}
	if strings.HasPrefix(lc.rec.header.Get("Content-Type"), "text/event-stream") {
		return nil
	}
	lc.wait(t)
	res, err := mcptest.ParseResponse(lc.rec.status, lc.rec.header, lc.rec.bytes())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// listen opens a stream as the given caller for ids, with the Tasks
// capability, and returns it with the acknowledged IDs.
func listen(t *testing.T, h http.Handler, id string, hdr map[string]string, ids ...string) (*listenConn, []string) {
	t.Helper()
	return listenCaps(t, h, id, taskCaps, hdr, ids...)
}

func listenCaps(t *testing.T, h http.Handler, id, caps string, hdr map[string]string, ids ...string) (*listenConn, []string) {
	t.Helper()
	lc := startListen(h, id, idsFilter(ids...), caps, hdr)
	if res := lc.open(t); res != nil {
		t.Fatalf("listen answered HTTP %d %s", res.Status, res.Body)
	}
	return lc, lc.ack(t)
}

// ack reads the first message, which must be the acknowledgement.
func (lc *listenConn) ack(t *testing.T) []string {
	t.Helper()
	m := lc.next(t)
	if m.Method != mcp.NotificationSubscriptionsAcknowledged {
		t.Fatalf("first message is %s", m.raw)
	}
	return m.Params.Notifications.TaskIDs
}

// lmsg is a decoded message of a listen stream.
type lmsg struct {
	raw    json.RawMessage
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Params struct {
		Meta          map[string]json.RawMessage `json:"_meta"`
		Notifications *mcp.SubscriptionFilter    `json:"notifications"`
		TaskID        string                     `json:"taskId"`
		Status        string                     `json:"status"`
		StatusMessage string                     `json:"statusMessage"`
		LastUpdatedAt string                     `json:"lastUpdatedAt"`
		InputRequests json.RawMessage            `json:"inputRequests"`
		Result        json.RawMessage            `json:"result"`
	} `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *mcp.Error      `json:"error"`
}

// String summarizes m: "ack ID,ID", "ID STATUS MESSAGE", "end" for the
// graceful result, or "error CODE".
func (m lmsg) String() string {
	switch {
	case m.Method == mcp.NotificationSubscriptionsAcknowledged:
		return "ack " + strings.Join(m.Params.Notifications.TaskIDs, ",")
	case m.Method == mcp.NotificationTasks:
		return strings.TrimSpace(m.Params.TaskID + " " + m.Params.Status + " " + m.Params.StatusMessage)
	case m.Error != nil:
		return fmt.Sprintf("error %d", m.Error.Code)
	case m.Result != nil:
		return "end"
	}
	return "UNKNOWN " + string(m.raw)
}

// note is the summary of a task notification.
func note(id, status, msg string) string { return strings.TrimSpace(id + " " + status + " " + msg) }

func sameJSON(a, b json.RawMessage) bool {
	var x, y bytes.Buffer
	return json.Compact(&x, a) == nil && json.Compact(&y, b) == nil && x.String() == y.String()
}

// next returns the next data message, skipping comments, and checks the
// listen invariants on it.
func (lc *listenConn) next(t *testing.T) lmsg {
	t.Helper()
	m, ok := lc.tryNext(t)
	if !ok {
		t.Fatalf("stream %s ended after %d messages", lc.id, lc.n)
	}
	return m
}

func (lc *listenConn) tryNext(t *testing.T) (lmsg, bool) {
	t.Helper()
	timeout := time.After(listenWait)
	for {
		var it sseItem
		var ok bool
		select {
		case it, ok = <-lc.rec.items:
		case <-timeout:
			t.Fatalf("stream %s: no message within %v (after %d messages)", lc.id, listenWait, lc.n)
		}
		if !ok {
			return lmsg{}, false
		}
		if it.data == nil {
			if it.comment != "keep-alive" {
				t.Errorf("stream %s: unexpected comment %q", lc.id, it.comment)
			}
			continue
		}
		return lc.check(t, it.data), true
	}
}

// check decodes and validates one data message of the stream.
func (lc *listenConn) check(t *testing.T, raw json.RawMessage) lmsg {
	t.Helper()
	var m lmsg
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("stream %s: %v: %s", lc.id, err, raw)
	}
	m.raw = raw
	lc.n++
	if lc.ended {
		t.Errorf("stream %s: message after the final response: %s", lc.id, raw)
	}
	if lc.n == 1 && m.Method != mcp.NotificationSubscriptionsAcknowledged {
		t.Errorf("stream %s: the first message is not the acknowledgement: %s", lc.id, raw)
	}
	subID := m.Params.Meta[mcp.MetaSubscriptionID]
	switch m.Method {
	case mcp.NotificationSubscriptionsAcknowledged:
		if lc.n != 1 {
			t.Errorf("stream %s: a second acknowledgement: %s", lc.id, raw)
		}
		if err := schemacheck.Validate("SubscriptionsAcknowledgedNotification", raw); err != nil {
			t.Errorf("stream %s: acknowledgement: %v: %s", lc.id, err, raw)
		}
	case mcp.NotificationTasks:
		if err := schemacheck.ValidateTasks("TaskStatusNotification", raw); err != nil {
			t.Errorf("stream %s: notification: %v: %s", lc.id, err, raw)
		}
	case "":
		lc.ended = true
		if !sameJSON(m.ID, json.RawMessage(lc.id)) {
			t.Errorf("stream %s: final response id %s", lc.id, m.ID)
		}
		if m.Result != nil {
			var res struct {
				ResultType string                     `json:"resultType"`
				Meta       map[string]json.RawMessage `json:"_meta"`
			}
			json.Unmarshal(m.Result, &res)
			subID = res.Meta[mcp.MetaSubscriptionID]
			if res.ResultType != "complete" {
				t.Errorf("stream %s: final result %s", lc.id, m.Result)
			}
			if err := schemacheck.Validate("SubscriptionsListenResultResponse", raw); err != nil {
				t.Errorf("stream %s: final result: %v: %s", lc.id, err, raw)
			}
		} else {
			subID = json.RawMessage(lc.id)
		}
	default: // notifications/progress, notifications/message, anything else
		t.Errorf("stream %s: %s must never appear on a listen stream: %s", lc.id, m.Method, raw)
	}
	if !sameJSON(subID, json.RawMessage(lc.id)) {
		t.Errorf("stream %s: subscriptionId %s in %s", lc.id, subID, raw)
	}
	return m
}

// rest reads every remaining message until the handler returns.
func (lc *listenConn) rest(t *testing.T) []string {
	t.Helper()
	var out []string
	for {
		m, ok := lc.tryNext(t)
		if !ok {
			return out
		}
		out = append(out, m.String())
	}
}

// expect reads the next messages and compares their summaries.
func (lc *listenConn) expect(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	for range want {
		got = append(got, lc.next(t).String())
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stream %s (-want +got):\n%s", lc.id, diff)
	}
}

// expectEnd reads until the handler returns and compares the summaries.
func (lc *listenConn) expectEnd(t *testing.T, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, lc.rest(t)); diff != "" {
		t.Errorf("stream %s to its end (-want +got):\n%s", lc.id, diff)
	}
}

// wait waits for the handler to return.
func (lc *listenConn) wait(t *testing.T) {
	t.Helper()
	select {
	case <-lc.done:
	case <-time.After(listenWait):
		t.Fatalf("stream %s: the handler did not return", lc.id)
	}
}

// close disconnects the client and waits for the handler to return.
func (lc *listenConn) close(t *testing.T) {
	t.Helper()
	lc.cancel()
	lc.wait(t)
}

// testAuthorizer records every authorization; fn decides (nil: allow for
// lease, which defaults to an hour).
type testAuthorizer struct {
	mu    sync.Mutex
	lease time.Duration
	fn    func(ctx context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error)
	calls []authCall
}

type authCall struct {
	At  time.Time
	Req server.SubscriptionRequest
}

func (a *testAuthorizer) AuthorizeSubscription(ctx context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
	a.mu.Lock()
	a.calls = append(a.calls, authCall{At: time.Now(), Req: *req})
	fn, lease := a.fn, a.lease
	a.mu.Unlock()
	if fn != nil {
		return fn(ctx, req)
	}
	if lease == 0 {
		lease = time.Hour
	}
	return server.SubscriptionGrant{Until: time.Now().Add(lease)}, nil
}

func (a *testAuthorizer) set(fn func(ctx context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fn = fn
}

func (a *testAuthorizer) take() []authCall {
	a.mu.Lock()
	defer a.mu.Unlock()
	c := a.calls
	a.calls = nil
	return c
}

// newListenRig is a task rig with subscriptions enabled. sub may be nil;
// a nil Authorizer becomes a testAuthorizer, returned too.
func newListenRig(t *testing.T, sub *server.SubscriptionOptions, mutate func(r *taskRig, o *server.Options)) (*taskRig, *testAuthorizer) {
	t.Helper()
	if sub == nil {
		sub = &server.SubscriptionOptions{}
	}
	auth, _ := sub.Authorizer.(*testAuthorizer)
	if sub.Authorizer == nil {
		auth = &testAuthorizer{}
		sub.Authorizer = auth
	}
	r := newTaskRig(t, func(r *taskRig, o *server.Options, _ *server.Endpoint) {
		o.Subscriptions = sub
		if mutate != nil {
			mutate(r, o)
		}
	})
	t.Cleanup(func() { r.srv.Close() })
	return r, auth
}

// completeTask completes id with the build tool's result {"sum":3}.
func completeTask(t *testing.T, r *taskRig, id string) {
	t.Helper()
	taskMust(t)(r.mem.Complete(id, &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"sum":3}`)}, "done"))
}

func diffCalls(t *testing.T, what string, want, got taskCalls) {
	t.Helper()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: calls (-want +got):\n%s", what, diff)
	}
}

func diffLifecycle(t *testing.T, r *taskRig, want ...string) {
	t.Helper()
	if diff := cmp.Diff(want, r.obs.take()); diff != "" {
		t.Errorf("lifecycle (-want +got):\n%s", diff)
	}
}

// TestListenAcknowledgesHonouredSubset: the first message acknowledges the
// requested IDs the manager finds for the listener, in request order and
// without duplicates; unknown IDs, another tenant's tasks and input_required
// tasks whose input the listener cannot answer are left out, and one
// lookup's failure does not reject the others. Each unique ID is looked up
// once under the listener's own identity; the lookups render nothing, so the
// catalog policy and the sanitizer are not called, and the listen is
// authorized exactly once.
func TestListenAcknowledgesHonouredSubset(t *testing.T) {
	r, auth := newListenRig(t, nil, nil)
	working := r.createTask(t, `{"n":1}`, asAlice)
	urlInput := r.createTask(t, `{"n":2}`, asAlice)
	formInput := r.createTask(t, `{"n":3}`, asAlice)
	done := r.createTask(t, `{"n":4}`, asAlice)
	broken := r.createTask(t, `{"n":5}`, asAlice)
	bobs := r.createTask(t, `{"n":6}`, asBob)
	taskMust(t)(r.mem.RequestInput(urlInput, mcp.InputRequests{"login": taskURLRequest()}, ""))
	taskMust(t)(r.mem.RequestInput(formInput, mcp.InputRequests{"confirm": taskFormRequest()}, ""))
	completeTask(t, r, done)
	r.set(func() { r.hide = true }) // a hidden tool does not hide the task from the acknowledgement
	r.set(func() {
		r.mgr.find = func(rc task.RequestContext) (task.Task, bool, error) {
			if rc.TaskID == broken {
				return task.Task{}, false, errors.New("storage down")
			}
			return r.mem.FindTask(context.Background(), rc)
		}
	})
	r.takeCalls()
	r.obs.take()
	r.set(func() { r.mgr.seen = nil })

	formOnly := `{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	requested := []string{working, "tid-unknown", bobs, urlInput, working, formInput, done, broken, done}
	lc := startListen(r.srv, "7", idsFilter(requested...), formOnly, asAlice)
	if res := lc.open(t); res != nil {
		t.Fatalf("listen: HTTP %d %s", res.Status, res.Body)
	}
	if ct := lc.rec.header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type = %q", ct)
	}
	if cc := lc.rec.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control = %q", cc)
	}
	ack := lc.next(t)
	wantAck := `{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"taskIds":["` +
		working + `","` + formInput + `","` + done + `"]},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`
	if diff := cmp.Diff(wantAck, string(ack.raw)); diff != "" {
		t.Errorf("acknowledgement (-want +got):\n%s", diff)
	}
	if err := schemacheck.ValidateTasks("TaskSubscriptionAcknowledgedNotifications", mustMarshal(t, ack.Params.Notifications)); err != nil {
		t.Error(err)
	}
	unique := []string{working, "tid-unknown", bobs, urlInput, formInput, done, broken}
	diffCalls(t, "acknowledgement", taskCalls{Admit: 1, Find: len(unique)}, r.takeCalls())
	var lookedUp []string
	r.set(func() {
		for _, rc := range r.mgr.seen {
			if rc.Tenant != "alice" || rc.Principal != "alice" || rc.Endpoint != "tasks" ||
				rc.ProtocolVersion != mcp.LatestProtocolVersion || !sameJSON(mustMarshal(t, rc.Capabilities), json.RawMessage(formOnly)) {
				t.Errorf("lookup context %+v is not the listener's", rc)
			}
			lookedUp = append(lookedUp, rc.TaskID)
		}
		r.mgr.seen = nil
	})
	if diff := cmp.Diff(unique, lookedUp); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
	calls := auth.take()
	if len(calls) != 1 {
		t.Fatalf("authorizer calls = %d", len(calls))
	}
	wantReq := server.SubscriptionRequest{Identity: server.Identity{Principal: "alice", Tenant: "alice"}, Endpoint: "tasks", TaskIDs: unique}
	if diff := cmp.Diff(wantReq, calls[0].Req); diff != "" {
		t.Errorf("authorization request (-want +got):\n%s", diff)
	}
	r.srv.Close()
	lc.expectEnd(t, "end")
	diffLifecycle(t, r, "start subscriptions/listen", "finish subscriptions/listen complete")
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestListenSubscriptionID: every message after the acknowledgement carries
// _meta["io.modelcontextprotocol/subscriptionId"] equal to the listen
// request's id, number or string, including the final result that ends the
// stream gracefully on Server.Close.
func TestListenSubscriptionID(t *testing.T) {
	for _, id := range []string{`7`, `"sub-1"`, `-3`, `"7"`} {
		t.Run(id, func(t *testing.T) {
			r, _ := newListenRig(t, nil, nil)
			tid := r.createTask(t, `{"n":1}`, nil)
			lc, acked := listen(t, r.srv, id, nil, tid)
			if !slices.Equal(acked, []string{tid}) {
				t.Fatalf("acknowledged %q", acked)
			}
			taskMust(t)(r.mem.MarkWorking(tid, "step 1"))
			n := lc.next(t)
			if got := string(n.Params.Meta[mcp.MetaSubscriptionID]); got != id {
				t.Errorf("notification subscriptionId = %s, want %s", got, id)
			}
			completeTask(t, r, tid)
			lc.expect(t, note(tid, "completed", "done"))
			r.srv.Close()
			final := lc.next(t)
			want := `{"jsonrpc":"2.0","id":` + id + `,"result":{"resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"tasks","version":"1.0.0"},"io.modelcontextprotocol/subscriptionId":` + id + `}}}`
			if diff := cmp.Diff(want, string(final.raw)); diff != "" {
				t.Errorf("final result (-want +got):\n%s", diff)
			}
			lc.expectEnd(t)
			raw := string(lc.rec.bytes())
			if !strings.HasSuffix(raw, "data: "+want+"\n\n") {
				t.Errorf("the final result is not the last event:\n%s", raw)
			}
		})
	}
}

// TestListenFilterLimits: notifications.taskIds is checked before
// admission: more than 256 distinct IDs and malformed IDs are 400 -32602,
// task IDs without the Tasks capability are 400 -32021; duplicates are
// removed first, so 256 distinct IDs in a longer list are accepted.
func TestListenFilterLimits(t *testing.T) {
	r, auth := newListenRig(t, nil, nil)
	many := func(n, distinct int) []string {
		ids := make([]string, n)
		for i := range ids {
			ids[i] = fmt.Sprintf("tid-%03d", i%distinct)
		}
		return ids
	}
	const tooMany = `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: too many task IDs in notifications.taskIds"}}`
	const malformedID = `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: malformed task ID in notifications.taskIds"}}`
	const malformedFilter = `{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"Invalid params: malformed notifications filter"}}`
	tests := []struct {
		name   string
		filter string
		caps   string
		body   string // "" when the stream opens
	}{
		{"257 distinct IDs", idsFilter(many(257, 257)...), taskCaps, tooMany},
		{"257 distinct IDs among 600", idsFilter(many(600, 257)...), taskCaps, tooMany},
		{"256 distinct IDs among 600", idsFilter(many(600, 256)...), taskCaps, ""},
		{"CR LF in an ID", idsFilter("tid-1", "tid\r\nX-Injected: 1"), taskCaps, malformedID},
		{"LF in an ID", idsFilter("tid\n2"), taskCaps, malformedID},
		{"space in an ID", idsFilter("tid 3"), taskCaps, malformedID},
		{"leading space", idsFilter(" tid-4"), taskCaps, malformedID},
		{"empty ID", idsFilter(""), taskCaps, malformedID},
		{"blank ID", idsFilter("   "), taskCaps, malformedID},
		{"non-ASCII ID", idsFilter("tid-é"), taskCaps, malformedID},
		{"ID of 129 characters", idsFilter(strings.Repeat("x", 129)), taskCaps, malformedID},
		{"taskIds not an array", `{"taskIds":"tid-1"}`, taskCaps, malformedFilter},
		{"an ID not a string", `{"taskIds":[1]}`, taskCaps, malformedFilter},
		{"task IDs without the Tasks capability", idsFilter("tid-1"), `{}`, taskMissingCaps(taskNeedsTasks)},
		{"too many IDs without the Tasks capability", idsFilter(many(300, 300)...), `{}`, taskMissingCaps(taskNeedsTasks)},
		{"no task IDs without the Tasks capability", `{"toolsListChanged":true}`, `{}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lc := startListen(r.srv, "7", tt.filter, tt.caps, nil)
			res := lc.open(t)
			if tt.body == "" {
				if res != nil {
					t.Fatalf("HTTP %d %s", res.Status, res.Body)
				}
				acked := lc.ack(t)
				if len(acked) != 0 {
					t.Errorf("acknowledged unknown IDs %q", acked)
				}
				calls := r.takeCalls()
				if calls.Admit != 1 {
					t.Errorf("admissions = %d", calls.Admit)
				}
				lc.close(t)
				auth.take()
				r.obs.take()
				return
			}
			if res == nil {
				t.Fatal("the stream opened")
			}
			r.expect(t, res, 400, tt.body, taskCalls{})
			if len(auth.take()) != 0 {
				t.Error("the authorizer was asked")
			}
			diffLifecycle(t, r)
		})
	}
	// Duplicates are removed: one lookup per unique ID, each acknowledged once.
	a := r.createTask(t, `{"n":1}`, nil)
	b := r.createTask(t, `{"n":2}`, nil)
	lc, acked := listen(t, r.srv, "7", nil, a, b, a, b, a)
	if diff := cmp.Diff([]string{a, b}, acked); diff != "" {
		t.Errorf("acknowledged (-want +got):\n%s", diff)
	}
	diffCalls(t, "duplicates", taskCalls{Admit: 1, Find: 2}, r.takeCalls())
	lc.close(t)
}

// TestListenNeedsSubscriptionOptions: without Options.Subscriptions the
// method does not exist (404 -32601, before admission); subscription
// options without an Authorizer, or with negative limits, fail New.
func TestListenNeedsSubscriptionOptions(t *testing.T) {
	r := newTaskRig(t, nil)
	res := r.do(t, rawPost(listenBody("7", idsFilter("tid-1"), taskCaps), mcp.MethodSubscriptionsListen, nil))
	r.expect(t, res, 404, taskNoMethod, taskCalls{})
	res = r.do(t, rawPost(listenBody("7", `{}`, `{}`), mcp.MethodSubscriptionsListen, nil))
	r.expect(t, res, 404, taskNoMethod, taskCalls{})

	for name, sub := range map[string]*server.SubscriptionOptions{
		"no authorizer":              {},
		"no authorizer, with limits": {MaxSubscriptions: 10, MaxLifetime: time.Minute},
		"negative write timeout":     {Authorizer: server.AllowSubscriptions(time.Minute), WriteTimeout: -1},
		"negative capacity":          {Authorizer: server.AllowSubscriptions(time.Minute), MaxSubscriptions: -1},
		"negative tenant capacity":   {Authorizer: server.AllowSubscriptions(time.Minute), MaxPerTenant: -1},
		"negative lifetime":          {Authorizer: server.AllowSubscriptions(time.Minute), MaxLifetime: -1},
		"negative timeout":           {Authorizer: server.AllowSubscriptions(time.Minute), AuthorizationTimeout: -1},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := server.New(server.Options{Endpoints: []*server.Endpoint{taskEndpoint()}, TaskManager: r.mgr, Subscriptions: sub})
			if err == nil {
				t.Fatal("server.New accepted the options")
			}
			if sub.Authorizer == nil && !strings.Contains(err.Error(), "Authorizer") {
				t.Errorf("error %q does not name the Authorizer", err)
			}
		})
	}
}

// TestListenAuthorizerDenial: a refusal, an error, an expired grant and an
// authorizer that outlives AuthorizationTimeout are HTTP 403 before the
// stream opens, with no manager lookup; the reserved capacity is returned.
func TestListenAuthorizerDenial(t *testing.T) {
	const denied = `{"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Subscription not authorized"}}`
	tests := map[string]func(ctx context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error){
		"error": func(context.Context, *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
			return server.SubscriptionGrant{}, errors.New("no such grant " + taskCanary)
		},
		"expired grant": func(context.Context, *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
			return server.SubscriptionGrant{Until: time.Now().Add(-time.Second)}, nil
		},
		"zero grant": func(context.Context, *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
			return server.SubscriptionGrant{}, nil
		},
		"timeout": func(ctx context.Context, _ *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
			<-ctx.Done() // honours cancellation, late
			return server.SubscriptionGrant{Until: time.Now().Add(time.Hour)}, nil
		},
	}
	for name, fn := range tests {
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, auth := newListenRig(t, &server.SubscriptionOptions{MaxSubscriptions: 1, AuthorizationTimeout: time.Second}, nil)
				tid := r.createTask(t, `{"n":1}`, nil)
				auth.set(fn)
				start := time.Now()
				lc := startListen(r.srv, "7", idsFilter(tid), taskCaps, nil)
				res := lc.open(t)
				if res == nil {
					t.Fatal("the stream opened")
				}
				r.expect(t, res, 403, denied, taskCalls{Admit: 1}, tid)
				if name == "timeout" && time.Since(start) != time.Second {
					t.Errorf("refused after %v, want AuthorizationTimeout", time.Since(start))
				}
				diffLifecycle(t, r, "start subscriptions/listen", "finish subscriptions/listen protocol_error")
				// The capacity of one is free again.
				auth.set(nil)
				lc2, acked := listen(t, r.srv, "8", nil, tid)
				if !slices.Equal(acked, []string{tid}) {
					t.Errorf("acknowledged %q", acked)
				}
				lc2.close(t)
			})
		})
	}
}

// TestListenKeepAlive: an idle listen stream carries SSE comments every
// KeepAliveInterval, from one source only.
func TestListenKeepAlive(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := newListenRig(t, nil, func(_ *taskRig, o *server.Options) { o.KeepAliveInterval = 10 * time.Second })
		tid := r.createTask(t, `{"n":1}`, nil)
		lc, _ := listen(t, r.srv, "7", nil, tid)
		time.Sleep(35 * time.Second)
		synctest.Wait()
		taskMust(t)(r.mem.MarkWorking(tid, "busy"))
		lc.expect(t, note(tid, "working", "busy"))
		time.Sleep(10 * time.Second)
		synctest.Wait()
		r.srv.Close()
		lc.expectEnd(t, "end")
		raw := string(lc.rec.bytes())
		events := strings.Split(strings.TrimSuffix(raw, "\n\n"), "\n\n")
		var shape []string
		for _, e := range events {
			if strings.HasPrefix(e, "data: ") {
				shape = append(shape, "data")
			} else {
				shape = append(shape, e)
			}
		}
		want := []string{"data", ": keep-alive", ": keep-alive", ": keep-alive", "data", ": keep-alive", "data"}
		if diff := cmp.Diff(want, shape); diff != "" {
			t.Errorf("stream events (-want +got):\n%s", diff)
		}
	})
}

// TestListenGracefulEnd: Server.Close and MaxLifetime end a listen with the
// final result as its last event (outcome complete); after Close new
// listens are refused with 503, while other requests are served.
func TestListenGracefulEnd(t *testing.T) {
	t.Run("Server.Close", func(t *testing.T) {
		r, _ := newListenRig(t, nil, nil)
		tid := r.createTask(t, `{"n":1}`, nil)
		a, _ := listen(t, r.srv, "7", nil, tid)
		b, _ := listen(t, r.srv, `"b"`, asAlice)
		r.obs.take()
		r.srv.Close()
		a.expectEnd(t, "end")
		b.expectEnd(t, "end")
		diffLifecycle(t, r, "finish subscriptions/listen complete", "finish subscriptions/listen complete")
		lc := startListen(r.srv, "9", idsFilter(tid), taskCaps, nil)
		if res := lc.open(t); res == nil || res.Status != 503 {
			t.Fatalf("listen after Close: %+v", res)
		}
		res := r.do(t, taskReq("tasks/get", tid, taskCaps, "", nil))
		if res.Status != 200 {
			t.Errorf("tasks/get after Close: HTTP %d", res.Status)
		}
	})
	t.Run("MaxLifetime", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r, _ := newListenRig(t, &server.SubscriptionOptions{MaxLifetime: 90 * time.Second}, nil)
			tid := r.createTask(t, `{"n":1}`, nil)
			start := time.Now()
			lc, _ := listen(t, r.srv, "7", nil, tid)
			time.Sleep(time.Minute)
			taskMust(t)(r.mem.MarkWorking(tid, "still here"))
			lc.expect(t, note(tid, "working", "still here"))
			time.Sleep(29 * time.Second)
			synctest.Wait()
			select {
			case <-lc.done:
				t.Fatal("the listen ended before MaxLifetime")
			default:
			}
			lc.expectEnd(t, "end")
			if d := time.Since(start); d != 90*time.Second {
				t.Errorf("ended after %v, want MaxLifetime", d)
			}
			diffLifecycle(t, r, "start subscriptions/listen", "finish subscriptions/listen complete")
		})
	})
}

// TestListenNeverCarriesProgressOrLog: a listen request with a progress
// token still gets only the acknowledgement, task notifications and the
// final result (checked by listenConn on every message).
func TestListenNeverCarriesProgressOrLog(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	tid := r.createTask(t, `{"n":1}`, nil)
	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":` + idsFilter(tid) +
		`,"_meta":{"progressToken":"p-1","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + taskCaps + `}}}`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lc := &listenConn{id: "7", rec: newSSERecorder(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(lc.done)
		defer close(lc.rec.items)
		r.srv.ServeHTTP(lc.rec, rawPost(body, mcp.MethodSubscriptionsListen, nil).WithContext(ctx))
	}()
	if res := lc.open(t); res != nil {
		t.Fatalf("HTTP %d %s", res.Status, res.Body)
	}
	lc.ack(t)
	for i := range 3 {
		taskMust(t)(r.mem.MarkWorking(tid, fmt.Sprint("step ", i)))
		lc.expect(t, note(tid, "working", fmt.Sprint("step ", i)))
	}
	completeTask(t, r, tid)
	lc.expect(t, note(tid, "completed", "done"))
	r.srv.Close()
	lc.expectEnd(t, "end")
	for _, bad := range []string{"notifications/progress", "notifications/message"} {
		if strings.Contains(string(lc.rec.bytes()), bad) {
			t.Errorf("the stream carries %s", bad)
		}
	}
}

// TestListenKeepsHintsDuringAuthorization: hints published while the
// listen is being authorized are kept and projected after the
// acknowledgement, for the accepted IDs only.
func TestListenKeepsHintsDuringAuthorization(t *testing.T) {
	r, auth := newListenRig(t, nil, nil)
	a := r.createTask(t, `{"n":1}`, nil)
	b := r.createTask(t, `{"n":2}`, nil)
	c := r.createTask(t, `{"n":3}`, nil)
	entered, release := make(chan struct{}), make(chan struct{})
	auth.set(func(_ context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
		close(entered)
		<-release
		return server.SubscriptionGrant{Until: time.Now().Add(time.Hour), TaskIDs: []string{a, c}}, nil
	})
	lc := startListen(r.srv, "7", idsFilter(a, b, c), taskCaps, nil)
	select {
	case <-entered:
	case <-time.After(listenWait):
		t.Fatal("the authorizer was not asked")
	}
	taskMust(t)(r.mem.MarkWorking(a, "during authorization"))
	taskMust(t)(r.mem.MarkWorking(b, "during authorization"))
	close(release)
	if res := lc.open(t); res != nil {
		t.Fatalf("HTTP %d %s", res.Status, res.Body)
	}
	lc.expect(t, "ack "+a+","+c, note(a, "working", "during authorization"))
	// c had no hint: nothing is sent for it (no initial snapshot).
	taskMust(t)(r.mem.MarkWorking(b, "after"))
	taskMust(t)(r.mem.MarkWorking(c, "after"))
	lc.expect(t, note(c, "working", "after"))
	r.srv.Close()
	lc.expectEnd(t, "end")
}

// TestListenNoSnapshotNoReplay: a listen sends no initial snapshot: a task
// completed before it produces nothing until a new hint; a new listen after
// a reconnect has its own subscription ID and replays nothing.
func TestListenNoSnapshotNoReplay(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	done := r.createTask(t, `{"n":1}`, nil)
	w := r.createTask(t, `{"n":2}`, nil)
	completeTask(t, r, done)
	taskMust(t)(r.mem.MarkWorking(w, "before the listen"))
	r.takeCalls()
	first, acked := listen(t, r.srv, "1", nil, done, w)
	if !slices.Equal(acked, []string{done, w}) {
		t.Fatalf("acknowledged %q", acked)
	}
	taskMust(t)(r.mem.MarkWorking(w, "one"))
	first.expect(t, note(w, "working", "one")) // not the completed task, not "before the listen"
	diffCalls(t, "first listen", taskCalls{Admit: 1, Find: 3}, r.takeCalls())
	r.mem.EventPublisher().Publish(done) // a new hint
	first.expect(t, note(done, "completed", "done"))
	diffCalls(t, "hint for the completed task", taskCalls{Find: 1, Policy: 1, Sanitize: 1}, r.takeCalls())
	first.close(t)

	second, _ := listen(t, r.srv, "2", nil, done, w)
	taskMust(t)(r.mem.MarkWorking(w, "two"))
	second.expect(t, note(w, "working", "two"))
	r.srv.Close()
	second.expectEnd(t, "end")
	diffLifecycle(t, r, "start subscriptions/listen", "finish subscriptions/listen canceled",
		"start subscriptions/listen", "finish subscriptions/listen complete")
}

// TestListenProjectsUnderOwnIdentity: a hint carries only a task ID; every
// projection is a fresh lookup under the subscription's own identity, so
// another tenant's change to a task with the same ID never reaches it, and
// another tenant's task is neither acknowledged nor projected.
func TestListenProjectsUnderOwnIdentity(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	bobs := r.createTask(t, `{"n":1}`, asBob)
	o := taskOrigin(t, "build", `{"n":1}`)
	var mu sync.Mutex
	shared := map[string]string{"alice": "alice v1", "bob": "bob v1"}
	r.set(func() {
		r.mgr.find = func(rc task.RequestContext) (task.Task, bool, error) {
			if rc.TaskID != "tid-shared" {
				return r.mem.FindTask(context.Background(), rc)
			}
			mu.Lock()
			defer mu.Unlock()
			msg, ok := shared[rc.Tenant]
			if !ok {
				return task.Task{}, false, nil
			}
			return taskSnap(t, task.Params{ID: rc.TaskID, Origin: o, Status: task.Working, StatusMessage: msg}), true, nil
		}
	})
	alice, acked := listen(t, r.srv, "7", asAlice, "tid-shared", bobs)
	if !slices.Equal(acked, []string{"tid-shared"}) {
		t.Fatalf("alice acknowledged %q", acked)
	}
	bob, _ := listen(t, r.srv, "8", asBob, "tid-shared", bobs)
	carol, acked := listen(t, r.srv, "9", map[string]string{"Authorization": "Bearer carol"}, "tid-shared")
	if len(acked) != 0 {
		t.Fatalf("carol acknowledged %q", acked)
	}
	// Bob's task changes twice: only bob hears of it.
	taskMust(t)(r.mem.MarkWorking(bobs, "bob only"))
	bob.expect(t, note(bobs, "working", "bob only"))
	// Bob's copy of the shared ID changes: alice's lookup shows alice's state.
	mu.Lock()
	shared["bob"] = "bob v2"
	mu.Unlock()
	r.mem.EventPublisher().Publish("tid-shared")
	bob.expect(t, note("tid-shared", "working", "bob v2"))
	alice.expect(t, note("tid-shared", "working", "alice v1"))
	mu.Lock()
	shared["alice"] = "alice v2"
	mu.Unlock()
	r.mem.EventPublisher().Publish("tid-shared")
	alice.expect(t, note("tid-shared", "working", "alice v2"))
	r.set(func() {
		for _, rc := range r.mgr.seen {
			if rc.TaskID == "tid-shared" && rc.Tenant != rc.Principal {
				t.Errorf("lookup under a foreign identity: %+v", rc)
			}
		}
	})
	r.srv.Close()
	alice.expectEnd(t, "end")
	bob.expectEnd(t, "end")
	carol.expectEnd(t, "end")
}

// TestListenCompletedLikePolling: a completed notification goes through the
// catalog policy and the sanitizer with the listener's identity and the
// origin's tool and arguments, and carries exactly the result tasks/get
// returns.
func TestListenCompletedLikePolling(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	tid := r.createTask(t, `{"n":1,"b":"x"}`, asAlice)
	r.set(func() {
		r.sanitize = func(_ context.Context, _ *server.SanitizeRequest, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
			c := *res
			c.StructuredContent = json.RawMessage(`{"sum":42}`)
			return &c, nil
		}
	})
	lc, _ := listen(t, r.srv, "7", asAlice, tid)
	r.takeCalls()
	r.set(func() { r.sanitized, r.policySeen = nil, nil })
	completeTask(t, r, tid)
	n := lc.next(t)
	if n.String() != note(tid, "completed", "done") {
		t.Fatalf("notification %s", n.raw)
	}
	diffCalls(t, "projection", taskCalls{Find: 1, Policy: 1, Sanitize: 1}, r.takeCalls())
	r.set(func() {
		if diff := cmp.Diff([]string{"alice@alice tasks/build"}, r.policySeen); diff != "" {
			t.Errorf("policy (-want +got):\n%s", diff)
		}
		want := []server.SanitizeRequest{{Identity: server.Identity{Principal: "alice", Tenant: "alice"}, Endpoint: "tasks", ToolName: "build", Arguments: json.RawMessage(`{"n":1,"b":"x"}`)}}
		if diff := cmp.Diff(want, r.sanitized); diff != "" {
			t.Errorf("sanitizer (-want +got):\n%s", diff)
		}
	})
	res := r.do(t, taskReq("tasks/get", tid, taskCaps, "", asAlice))
	got, err := res.Task()
	if err != nil {
		t.Fatal(err)
	}
	if !sameJSON(got.Result, n.Params.Result) {
		t.Errorf("notification result %s, tasks/get result %s", n.Params.Result, got.Result)
	}
	if !strings.Contains(string(n.Params.Result), `"structuredContent":{"sum":42}`) {
		t.Errorf("the sanitizer's result is not delivered: %s", n.Params.Result)
	}
	stored, _ := r.mem.Find(tid)
	if string(stored.Result().StructuredContent) != `{"sum":3}` {
		t.Errorf("the stored result changed: %s", stored.Result().StructuredContent)
	}
}

// TestListenHiddenToolSuppressed: while the origin tool is hidden from the
// listener, its completed notification is suppressed without calling the
// sanitizer, other tasks carry on, and a later hint once the tool is
// visible again projects it. A sanitizer failure suppresses likewise.
func TestListenHiddenToolSuppressed(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	c := r.createTask(t, `{"n":1}`, nil)
	w := r.createTask(t, `{"n":2}`, nil)
	s := r.createTask(t, `{"n":3}`, nil)
	lc, _ := listen(t, r.srv, "7", nil, c, w, s)
	r.takeCalls()
	r.set(func() { r.hide = true })
	completeTask(t, r, c)
	taskMust(t)(r.mem.MarkWorking(w, "carrying on"))
	lc.expect(t, note(w, "working", "carrying on"))
	diffCalls(t, "hidden", taskCalls{Find: 2, Policy: 1}, r.takeCalls())

	r.set(func() { r.hide = false })
	r.mem.EventPublisher().Publish(c)
	lc.expect(t, note(c, "completed", "done"))
	diffCalls(t, "visible again", taskCalls{Find: 1, Policy: 1, Sanitize: 1}, r.takeCalls())

	r.set(func() {
		r.sanitize = func(context.Context, *server.SanitizeRequest, *mcp.CallToolResult) (*mcp.CallToolResult, error) {
			return nil, errors.New("sanitizer down")
		}
	})
	completeTask(t, r, s)
	taskMust(t)(r.mem.MarkWorking(w, "still carrying on"))
	lc.expect(t, note(w, "working", "still carrying on"))
	r.set(func() { r.sanitize = nil })
	r.mem.EventPublisher().Publish(s)
	lc.expect(t, note(s, "completed", "done"))
	r.srv.Close()
	lc.expectEnd(t, "end")
	res := r.do(t, taskReq("tasks/get", c, taskCaps, "", nil))
	if res.Status != 200 || !strings.Contains(string(res.Result), `"status":"completed"`) {
		t.Errorf("tasks/get: HTTP %d %s", res.Status, res.Body)
	}
}

// TestListenInputCapabilities: an input_required notification is sent
// only when the listen request declared every elicitation mode its input
// requests need; a suppressed one does not block later states.
func TestListenInputCapabilities(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	a := r.createTask(t, `{"n":1}`, nil)
	b := r.createTask(t, `{"n":2}`, nil)
	formOnly := `{"elicitation":{"form":{}},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	lc, _ := listenCaps(t, r.srv, "7", formOnly, nil, a, b)
	full, _ := listenCaps(t, r.srv, "8", taskFullCaps, nil, a, b)
	none, _ := listen(t, r.srv, "9", nil, a, b)
	taskMust(t)(r.mem.RequestInput(a, mcp.InputRequests{"login": taskURLRequest()}, "sign in"))
	taskMust(t)(r.mem.RequestInput(b, mcp.InputRequests{"confirm": taskFormRequest()}, "confirm"))
	n := lc.next(t)
	if n.String() != note(b, "input_required", "confirm") || !sameJSON(n.Params.InputRequests, json.RawMessage(`{"confirm":`+taskFormJSON+`}`)) {
		t.Errorf("form-capable listener got %s", n.raw)
	}
	full.expect(t, note(a, "input_required", "sign in"), note(b, "input_required", "confirm"))
	taskMust(t)(r.mem.MarkWorking(a, "signed in"))
	lc.expect(t, note(a, "working", "signed in"))
	full.expect(t, note(a, "working", "signed in"))
	none.expect(t, note(a, "working", "signed in"))
	r.srv.Close()
	lc.expectEnd(t, "end")
	full.expectEnd(t, "end")
	none.expectEnd(t, "end")
}

// TestListenChangeComparison: nothing is sent after a terminal snapshot,
// even if a broken manager later reports another state; a snapshot with
// the same lastUpdatedAt but other content is sent, an older one is
// suppressed, and an identical one collapses.
func TestListenChangeComparison(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	o := taskOrigin(t, "build", `{"n":1}`)
	var mu sync.Mutex
	snaps := map[string]task.Task{}
	setSnap := func(id string, st task.Status, msg string, updated time.Duration) {
		p := task.Params{ID: id, Origin: o, Status: st, StatusMessage: msg, CreatedAt: taskEpoch, LastUpdatedAt: taskEpoch.Add(updated)}
		if st == task.Failed {
			p.Error = &mcp.Error{Code: mcp.CodeInternalError, Message: "gave up"}
		}
		mu.Lock()
		snaps[id] = taskSnap(t, p)
		mu.Unlock()
		r.mem.EventPublisher().Publish(id)
	}
	r.set(func() {
		r.mgr.find = func(rc task.RequestContext) (task.Task, bool, error) {
			mu.Lock()
			defer mu.Unlock()
			s, ok := snaps[rc.TaskID]
			return s, ok, nil
		}
	})
	setSnap("tid-t", task.Working, "v1", 0)
	setSnap("tid-s", task.Working, "v1", time.Second)
	setSnap("tid-barrier", task.Working, "v0", 0)
	lc, _ := listen(t, r.srv, "7", nil, "tid-t", "tid-s", "tid-barrier")
	barrier := func(n int) string {
		setSnap("tid-barrier", task.Working, fmt.Sprint("v", n), 0)
		return note("tid-barrier", "working", fmt.Sprint("v", n))
	}

	setSnap("tid-t", task.Failed, "gave up", time.Second)
	lc.expect(t, note("tid-t", "failed", "gave up"))
	setSnap("tid-t", task.Working, "regressed", 2*time.Second) // a broken manager
	lc.expect(t, barrier(1))

	setSnap("tid-s", task.Working, "v1", time.Second)
	lc.expect(t, note("tid-s", "working", "v1"))
	setSnap("tid-s", task.Working, "v2 same time", time.Second)
	lc.expect(t, note("tid-s", "working", "v2 same time"))
	setSnap("tid-s", task.Working, "v3 older", 0)
	setSnap("tid-s", task.Working, "v2 same time", time.Second)
	lc.expect(t, barrier(2))
	for range 10 {
		r.mem.EventPublisher().Publish("tid-s") // duplicate hints collapse
	}
	lc.expect(t, barrier(3))
	setSnap("tid-s", task.Working, "v4", 2*time.Second)
	lc.expect(t, note("tid-s", "working", "v4"))
	r.srv.Close()
	lc.expectEnd(t, "end")
}

// TestListenDuplicatesCollapse: with the in-memory manager, a burst of
// hints for an unchanged task sends it once.
func TestListenDuplicatesCollapse(t *testing.T) {
	r, _ := newListenRig(t, nil, nil)
	a := r.createTask(t, `{"n":1}`, nil)
	b := r.createTask(t, `{"n":2}`, nil)
	lc, _ := listen(t, r.srv, "7", nil, a, b)
	taskMust(t)(r.mem.MarkWorking(a, "once"))
	for range 50 {
		r.mem.EventPublisher().Publish(a)
	}
	taskMust(t)(r.mem.MarkWorking(b, "barrier"))
	lc.expect(t, note(a, "working", "once"), note(b, "working", "barrier"))
	r.srv.Close()
	lc.expectEnd(t, "end")
}

// failingFinds makes the rig's manager fail the first n lookups of id
// (every one when n < 0) with a storage error, and otherwise look the
// task up in the real memory store. It returns the count of failed
// lookups.
func failingFinds(r *taskRig, id string, n int) *atomic.Int32 {
	var failed atomic.Int32
	r.set(func() {
		r.mgr.find = func(rc task.RequestContext) (task.Task, bool, error) {
			if rc.TaskID == id && (n < 0 || int(failed.Load()) < n) {
				failed.Add(1)
				return task.Task{}, false, errors.New("storage blip")
			}
			return r.mem.FindTask(context.Background(), rc)
		}
	})
	return &failed
}

// TestListenRetriesFailedLookup: a hint whose lookup fails is not dropped.
// The listen looks the task up again with backoff, so a task that
// completes while the store fails still reaches the listener, whose
// stream stays open; when every attempt fails, the listen ends gracefully
// (its final result) so that the client reconnects and polls. Nothing is
// retried for a task that completed; other tasks carry on.
func TestListenRetriesFailedLookup(t *testing.T) {
	for _, tc := range []struct {
		name     string
		failures int // failed lookups of the task before it is found; < 0: all
		want     []string
	}{
		{name: "one failure", failures: 1, want: []string{"A completed done", "B working after"}},
		{name: "three failures", failures: 3, want: []string{"A completed done", "B working after"}},
		{name: "every attempt fails", failures: -1, want: []string{"end"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r, _ := newListenRig(t, nil, nil)
				a := r.createTask(t, `{"n":1}`, nil)
				b := r.createTask(t, `{"n":2}`, nil)
				lc, acked := listen(t, r.srv, "7", nil, a, b)
				if len(acked) != 2 {
					t.Fatalf("acknowledged %q", acked)
				}
				failed := failingFinds(r, a, tc.failures)
				completeTask(t, r, a) // no later hint comes for a
				synctest.Wait()
				if failed.Load() == 0 {
					t.Fatal("the completion's lookup did not fail")
				}
				time.Sleep(10 * time.Second) // past every backoff
				synctest.Wait()
				taskMust(t)(r.mem.MarkWorking(b, "after"))
				synctest.Wait()
				r.srv.Close()
				var got []string
				for _, m := range lc.rest(t) {
					got = append(got, strings.NewReplacer(a, "A", b, "B").Replace(m))
				}
				if tc.failures >= 0 {
					tc.want = append(tc.want, "end")
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("stream (-want +got):\n%s", diff)
				}
				if tc.failures < 0 && failed.Load() != 4 {
					t.Errorf("%d lookups of the task failed, want 4", failed.Load())
				}
				if strings.Contains(r.logs.String(), a) {
					t.Errorf("log leaks the task ID:\n%s", r.logs.String())
				}
			})
		})
	}
}

// TestListenDisconnect: a client that goes away ends its listen (outcome
// canceled) and returns its capacity.
func TestListenDisconnect(t *testing.T) {
	r, _ := newListenRig(t, &server.SubscriptionOptions{MaxSubscriptions: 1}, nil)
	a := r.createTask(t, `{"n":1}`, nil)
	lc, _ := listen(t, r.srv, "7", nil, a)
	lc.close(t)
	diffLifecycle(t, r, "start subscriptions/listen", "finish subscriptions/listen canceled")
	again, _ := listen(t, r.srv, "8", nil, a)
	taskMust(t)(r.mem.MarkWorking(a, "hello"))
	again.expect(t, note(a, "working", "hello"))
	again.close(t)
}

// TestListenWithoutPublisher: on a manager that publishes no events, a
// listen acknowledges no task IDs and makes no lookups.
func TestListenWithoutPublisher(t *testing.T) {
	r, _ := newListenRig(t, nil, func(r *taskRig, _ *server.Options) {})
	tid := r.createTask(t, `{"n":1}`, nil)
	srv, err := server.New(server.Options{
		Endpoints: []*server.Endpoint{taskEndpoint()}, TaskManager: noEvents{r.mgr},
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.takeCalls()
	lc, acked := listen(t, srv, "7", nil, tid)
	if len(acked) != 0 {
		t.Errorf("acknowledged %q", acked)
	}
	diffCalls(t, "listen", taskCalls{}, r.takeCalls())
	srv.Close()
	lc.expectEnd(t, "end")
}

type noEvents struct{ task.Manager }

func (noEvents) EventPublisher() task.EventPublisher { return nil }

// countingPublisher counts subscriptions to a broadcaster.
type countingPublisher struct {
	task.Broadcaster
	mu                       sync.Mutex
	subscribed, unsubscribed int
}

func (p *countingPublisher) Subscribe(fn func(string)) func() {
	p.mu.Lock()
	p.subscribed++
	p.mu.Unlock()
	unsubscribe := p.Broadcaster.Subscribe(fn)
	return func() {
		p.mu.Lock()
		p.unsubscribed++
		p.mu.Unlock()
		unsubscribe()
	}
}

type publishingManager struct {
	task.Manager
	pub *countingPublisher
}

func (m publishingManager) EventPublisher() task.EventPublisher { return m.pub }

// TestListenPublisherSubscription: a server with subscriptions subscribes
// to the manager's publisher once, when built, and unsubscribes on Close
// without closing the publisher, which keeps serving other subscribers; a
// server without subscriptions never subscribes.
func TestListenPublisherSubscription(t *testing.T) {
	r := newTaskRig(t, nil)
	pub := &countingPublisher{}
	mgr := publishingManager{Manager: r.mgr, pub: pub}
	counts := func() [2]int {
		pub.mu.Lock()
		defer pub.mu.Unlock()
		return [2]int{pub.subscribed, pub.unsubscribed}
	}
	if _, err := server.New(server.Options{Endpoints: []*server.Endpoint{taskEndpoint()}, TaskManager: mgr}); err != nil {
		t.Fatal(err)
	}
	if c := counts(); c != [2]int{0, 0} {
		t.Errorf("without subscriptions: %v", c)
	}
	srv, err := server.New(server.Options{Endpoints: []*server.Endpoint{taskEndpoint()}, TaskManager: mgr,
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		lc, _ := listen(t, srv, fmt.Sprint(i), nil, "tid-1")
		lc.close(t)
	}
	if c := counts(); c != [2]int{1, 0} {
		t.Errorf("after three listens: %v", c)
	}
	srv.Close()
	if c := counts(); c != [2]int{1, 1} {
		t.Errorf("after Close: %v", c)
	}
	var got []string
	pub.Subscribe(func(id string) { got = append(got, id) })
	pub.Publish("tid-1")
	if !slices.Equal(got, []string{"tid-1"}) {
		t.Errorf("the publisher no longer works: %q", got)
	}
}
