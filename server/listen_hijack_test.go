package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// hijackRig serves r over real loopback HTTP/1.1 and reports every
// connection net/http hands over (http.StateHijacked).
func hijackRig(t *testing.T, h http.Handler) (*httptest.Server, <-chan struct{}) {
	t.Helper()
	hijacked := make(chan struct{}, 16)
	ts := httptest.NewUnstartedServer(h)
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateHijacked {
			hijacked <- struct{}{}
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	return ts, hijacked
}

// takenOverListen serves r over real loopback HTTP/1.1, opens listen
// rpcID for ids and waits until its connection is taken over. The body is
// closed at the end of the test.
func takenOverListen(t *testing.T, r *taskRig, rpcID string, ids ...string) (*http.Response, *bufio.Reader) {
	t.Helper()
	ts, hijacked := hijackRig(t, r.srv)
	resp, br := openRawListen(t, ts.Client(), ts.URL+"/mcp", rpcID, "", ids...)
	t.Cleanup(func() { resp.Body.Close() })
	waitFor(t, "the listen's connection to be taken over", hijacked)
	return resp, br
}

// openRawListen opens a listen over HTTP/1.1 and returns the response and
// a reader of its body positioned after the acknowledgement's line.
func openRawListen(t *testing.T, hc *http.Client, url, rpcID, bearer string, ids ...string) (*http.Response, *bufio.Reader) {
	t.Helper()
	resp := openHTTPListenBody(t, hc, url, rpcID, bearer, ids...)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		t.Fatalf("listen %s: HTTP %d %s", rpcID, resp.StatusCode, b)
	}
	br := bufio.NewReader(resp.Body)
	if m := nextData(t, br); m.Method != mcp.NotificationSubscriptionsAcknowledged || m.Params.Notifications == nil ||
		len(m.Params.Notifications.TaskIDs) != len(ids) {
		t.Fatalf("listen %s: first message %s", rpcID, m.raw)
	}
	return resp, br
}

// openHTTPListenBody sends a listen over real HTTP as bearer (none when
// empty) and returns the response with its body unread.
func openHTTPListenBody(t *testing.T, hc *http.Client, url, rpcID, bearer string, ids ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(listenBody(rpcID, idsFilter(ids...), taskCaps)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", mcp.MethodSubscriptionsListen)
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// nextData returns the next SSE data message of br, skipping comments.
func nextData(t *testing.T, br *bufio.Reader) lmsg {
	t.Helper()
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		var m lmsg
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("message %q: %v", data, err)
		}
		m.raw = json.RawMessage(data)
		return m
	}
}

func waitFor(t *testing.T, what string, ch <-chan struct{}) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func waitOutcome(t *testing.T, finished <-chan server.Outcome) server.Outcome {
	t.Helper()
	select {
	case out := <-finished:
		return out
	case <-time.After(20 * time.Second):
		t.Fatal("the listen did not finish")
		return ""
	}
}

// TestListenHTTP1StreamOutlivesHandler: over HTTP/1.1, a listen stream is
// taken over from net/http once its acknowledgement is sent, so that an
// idle stream holds neither a handler nor net/http's buffers. It still
// carries its notifications, is observed as finished only when it really
// ends, and on Server.Close ends its chunked body properly with the final
// result, before Close returns.
func TestListenHTTP1StreamOutlivesHandler(t *testing.T) {
	finished := make(chan server.Outcome, 4)
	r, _ := newListenRig(t, nil, func(r *taskRig, o *server.Options) {
		o.Observer = &listenObserver{taskObserver: r.obs, finished: finished}
		o.KeepAliveInterval = time.Hour
	})
	id := r.createTask(t, `{"n":1}`, nil)
	_, br := takenOverListen(t, r, "7", id)

	taskMust(t)(r.mem.MarkWorking(id, "on its way"))
	if m := nextData(t, br); m.Method != mcp.NotificationTasks || m.Params.TaskID != id || m.Params.Status != "working" {
		t.Fatalf("notification: %s", m.raw)
	}
	select {
	case out := <-finished:
		t.Fatalf("the listen was reported finished (%s) while its stream is open", out)
	default:
	}

	r.srv.Close()
	final := nextData(t, br)
	if string(final.ID) != "7" || !strings.Contains(string(final.raw), `"result":{"resultType":"complete"`) ||
		!strings.Contains(string(final.raw), `"io.modelcontextprotocol/subscriptionId":7`) {
		t.Errorf("final message: %s", final.raw)
	}
	// Close has returned: the body is complete (a well-formed last
	// chunk) and the connection closed, so reading reaches its end.
	done := make(chan error, 1)
	go func() { // ends with the body
		_, err := io.Copy(io.Discard, br)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after the final result: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stream stayed open after Server.Close")
	}
	if out := waitOutcome(t, finished); out != server.OutcomeComplete {
		t.Errorf("the listen finished %s, want complete", out)
	}
}

// TestListenHTTP1RetriesFailedLookup, over real loopback HTTP/1.1, where
// the fan-out writes the stream: a completion whose lookups fail at first
// is handed back to the listen, which retries it and delivers the terminal
// notification on the open stream.
func TestListenHTTP1RetriesFailedLookup(t *testing.T) {
	r, _ := newListenRig(t, nil, func(_ *taskRig, o *server.Options) {
		o.KeepAliveInterval = time.Hour
	})
	id := r.createTask(t, `{"n":1}`, nil)
	resp, br := takenOverListen(t, r, "7", id)

	failed := failingFinds(r, id, 2)
	completeTask(t, r, id)
	// Without the notification, closing the body ends the read below.
	giveUp := time.AfterFunc(listenWait, func() { resp.Body.Close() })
	defer giveUp.Stop()
	if m := nextData(t, br); m.Method != mcp.NotificationTasks || m.Params.TaskID != id || m.Params.Status != "completed" {
		t.Fatalf("notification: %s", m.raw)
	}
	if n := failed.Load(); n != 2 {
		t.Errorf("%d lookups failed before the notification, want 2", n)
	}
	r.srv.Close()
	if final := nextData(t, br); string(final.ID) != "7" {
		t.Errorf("final message: %s", final.raw)
	}
}

// TestListenHTTP1ClientLeaves: a client that closes its HTTP/1.1 listen
// connection, once the stream has been taken over from net/http, ends the
// listen at once (outcome canceled) and gives its capacity back, without
// a write to find out.
func TestListenHTTP1ClientLeaves(t *testing.T) {
	finished := make(chan server.Outcome, 4)
	r, _ := newListenRig(t, &server.SubscriptionOptions{MaxPerPrincipal: 1}, func(r *taskRig, o *server.Options) {
		o.Observer = &listenObserver{taskObserver: r.obs, finished: finished}
		o.KeepAliveInterval = time.Hour
	})
	id := r.createTask(t, `{"n":1}`, map[string]string{"Authorization": "Bearer mallory"})
	ts, hijacked := hijackRig(t, r.srv)
	defer r.srv.Close() // before ts.Close
	hc := ts.Client()
	resp, _ := openRawListen(t, hc, ts.URL+"/mcp", "1", "mallory", id)
	waitFor(t, "the listen's connection to be taken over", hijacked)
	if again := openHTTPListenBody(t, hc, ts.URL+"/mcp", "2", "mallory", id); again.StatusCode != http.StatusTooManyRequests {
		again.Body.Close()
		t.Fatalf("a second listen of mallory: HTTP %d, want 429", again.StatusCode)
	} else {
		again.Body.Close()
	}
	if out := waitOutcome(t, finished); out != server.OutcomeRateLimited {
		t.Errorf("the second listen finished %s, want rate_limited", out)
	}

	resp.Body.Close()
	if out := waitOutcome(t, finished); out != server.OutcomeCanceled {
		t.Errorf("the listen finished %s, want canceled", out)
	}
	resp, br := openRawListen(t, hc, ts.URL+"/mcp", "3", "mallory", id)
	defer resp.Body.Close()
	taskMust(t)(r.mem.MarkWorking(id, "still followed"))
	if m := nextData(t, br); m.Params.TaskID != id || m.Params.Status != "working" {
		t.Errorf("notification on the new listen: %s", m.raw)
	}
}

// TestListenHTTP10NotTakenOver: an HTTP/1.0 response is not chunked, so
// an HTTP/1.0 listen stays with net/http, and its later events arrive as
// plain SSE lines, not chunk-framed.
func TestListenHTTP10NotTakenOver(t *testing.T) {
	r, _ := newListenRig(t, nil, func(_ *taskRig, o *server.Options) { o.KeepAliveInterval = time.Hour })
	id := r.createTask(t, `{"n":1}`, nil)
	ts, hijacked := hijackRig(t, r.srv)
	defer r.srv.Close() // before ts.Close
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(time.Minute))
	body := listenBody("1", idsFilter(id), taskCaps)
	fmt.Fprintf(conn, "POST /mcp HTTP/1.0\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nContent-Length: %d\r\n\r\n%s", ts.Listener.Addr(), len(body), body)
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || len(resp.TransferEncoding) != 0 {
		t.Fatalf("HTTP %d, transfer encoding %v", resp.StatusCode, resp.TransferEncoding)
	}
	lines := bufio.NewReader(resp.Body)
	if m := nextData(t, lines); m.Method != mcp.NotificationSubscriptionsAcknowledged {
		t.Fatalf("first message: %s", m.raw)
	}
	taskMust(t)(r.mem.MarkWorking(id, "over HTTP/1.0"))
	for {
		line, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if line == "\n" {
			continue
		}
		if !strings.HasPrefix(line, "data: ") || !strings.Contains(line, `"status":"working"`) {
			t.Fatalf("line after the acknowledgement: %q", line)
		}
		break
	}
	select {
	case <-hijacked:
		t.Error("the HTTP/1.0 connection was taken over")
	default:
	}
}

// TestListenDeliversWhileRenewing, over real loopback HTTP/1.1: while a
// listen's renewal waits for the authorizer, the current grant holds and
// the fan-out keeps delivering its notifications; the renewal's end
// (here: the authorizer's refusal) then ends the listen gracefully.
func TestListenDeliversWhileRenewing(t *testing.T) {
	renewing, release := make(chan struct{}), make(chan struct{})
	auth := &testAuthorizer{fn: func(ctx context.Context, req *server.SubscriptionRequest) (server.SubscriptionGrant, error) {
		if !req.Renewal {
			return server.SubscriptionGrant{Until: time.Now().Add(6 * time.Second)}, nil
		}
		close(renewing)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return server.SubscriptionGrant{}, errors.New("no renewal")
	}}
	finished := make(chan server.Outcome, 4)
	r, _ := newListenRig(t, &server.SubscriptionOptions{Authorizer: auth, AuthorizationTimeout: 10 * time.Second},
		func(r *taskRig, o *server.Options) {
			o.Observer = &listenObserver{taskObserver: r.obs, finished: finished}
			o.KeepAliveInterval = time.Hour
		})
	id := r.createTask(t, `{"n":1}`, nil)
	ts, hijacked := hijackRig(t, r.srv)
	defer r.srv.Close() // before ts.Close
	resp, br := openRawListen(t, ts.Client(), ts.URL+"/mcp", "7", "", id)
	defer resp.Body.Close()
	waitFor(t, "the listen's connection to be taken over", hijacked)
	waitFor(t, "the renewal", renewing)

	taskMust(t)(r.mem.MarkWorking(id, "during the renewal"))
	if m := nextData(t, br); m.Method != mcp.NotificationTasks || m.Params.TaskID != id || m.Params.Status != "working" {
		t.Fatalf("while renewing: %s", m.raw)
	}
	close(release)
	if final := nextData(t, br); string(final.ID) != "7" || !strings.Contains(string(final.raw), `"result":`) {
		t.Errorf("after the refused renewal: %s", final.raw)
	}
	if out := waitOutcome(t, finished); out != server.OutcomeComplete {
		t.Errorf("the listen finished %s, want complete", out)
	}
}
