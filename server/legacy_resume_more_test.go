package server_test

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// closedPoll starts the poll call, waits for its close and returns the
// stream token.
func (pr *pollRig) closedPoll(t *testing.T) string {
	t.Helper()
	postDone := make(chan []sseBlock)
	go func() { postDone <- pr.post(t, pr.c) }()
	if err := <-pr.closed; err != nil {
		t.Fatalf("CloseSSEStream: %v", err)
	}
	return tokenOf(t, <-postDone)
}

// TestLegacyResumeRetention: an ended stream's events are kept for
// Retention (server clock), then a resumption is refused.
func TestLegacyResumeRetention(t *testing.T) {
	clock := &testClock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	pr := newPollRigWith(t, &server.ResumeOptions{Retention: time.Minute}, func(o *server.Options) {
		server.SetClockForTest(o, clock.Now)
	})
	pr.c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
	tok := pr.closedPoll(t)
	pr.proceed <- 0
	<-pr.after
	close(pr.finish)
	if status, blocks, body := resume(t, pr.c, tok+".1"); status != http.StatusOK || len(blocks) != 1 {
		t.Fatalf("GET: status %d, %d blocks, body %s", status, len(blocks), body)
	}
	clock.Advance(59 * time.Second)
	if status, _, body := resume(t, pr.c, tok+".1"); status != http.StatusOK {
		t.Fatalf("GET within Retention: status %d, body %s", status, body)
	}
	clock.Advance(time.Second)
	if status, _, body := resume(t, pr.c, tok+".1"); status != http.StatusBadRequest {
		t.Errorf("GET after Retention: status %d, body %s; want 400", status, body)
	}
}

// TestLegacyResumeCancel: after the server closed the stream, the call
// still ends with notifications/cancelled (and the resumed stream ends
// without a result), and DELETE of the session ends a resumed stream.
func TestLegacyResumeCancel(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(c *legacyClient)
	}{
		{"cancelled", func(c *legacyClient) {
			if rep := c.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`); rep.status != http.StatusAccepted {
				t.Errorf("cancel: status %d", rep.status)
			}
		}},
		{"delete", func(c *legacyClient) {
			r, _ := http.NewRequest(http.MethodDelete, c.url, nil)
			r.Header.Set("Mcp-Session-Id", c.sid)
			res, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPollRig(t, nil)
			pr.c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
			tok := pr.closedPoll(t)
			pr.proceed <- 0
			<-pr.after
			getDone := make(chan []sseBlock)
			r, _ := http.NewRequest(http.MethodGet, pr.c.url, nil)
			r.Header.Set("Accept", "text/event-stream")
			r.Header.Set("Mcp-Session-Id", pr.c.sid)
			r.Header.Set("Last-Event-ID", tok+".1")
			res, err := http.DefaultClient.Do(r)
			if err != nil || res.StatusCode != http.StatusOK {
				t.Fatalf("GET: %v %v", res, err)
			}
			go func() {
				defer res.Body.Close()
				getDone <- readBlocks(t, res.Body)
			}()
			tc.end(pr.c)
			close(pr.finish)
			if err := <-pr.ctxErr; err != context.Canceled {
				t.Errorf("the call's ctx.Err() = %v, want Canceled", err)
			}
			if got := summary(t, <-getDone, tok); len(got) != 0 {
				t.Errorf("resumed stream carried %v, want nothing", got)
			}
		})
	}
}

// TestLegacyResumeTakeover: a GET that resumes while the POST still
// carries the stream takes it over: the POST ends, the call goes on, and
// the rest comes on the GET only.
func TestLegacyResumeTakeover(t *testing.T) {
	pr := newPollRig(t, nil)
	c := pr.c
	c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
	// A stream closed once, resumed, and resumed again from the same ID
	// while the first GET is open: the first GET ends, the second carries
	// the rest.
	tok := pr.closedPoll(t)
	first, err := openResume(c, tok+".1")
	if err != nil {
		t.Fatal(err)
	}
	firstDone := make(chan []sseBlock)
	go func() { defer first.Body.Close(); firstDone <- readBlocks(t, first.Body) }()
	second, err := openResume(c, tok+".1")
	if err != nil {
		t.Fatal(err)
	}
	if got := summary(t, <-firstDone, tok); len(got) != 0 {
		t.Errorf("the first GET carried %v", got)
	}
	pr.proceed <- 1
	<-pr.after
	close(pr.finish)
	defer second.Body.Close()
	got := summary(t, readBlocks(t, second.Body), tok)
	want := []string{"2||notifications/message after 0", "3||" + doneResult}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("the second GET carried %v, want %v", got, want)
	}
	if err := <-pr.ctxErr; err != nil {
		t.Errorf("the takeover canceled the call: %v", err)
	}
}

func openResume(c *legacyClient, lastID string) (*http.Response, error) {
	r, _ := http.NewRequest(http.MethodGet, c.url, nil)
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("Mcp-Session-Id", c.sid)
	r.Header.Set("Last-Event-ID", lastID)
	res, err := http.DefaultClient.Do(r)
	if err == nil && res.StatusCode != http.StatusOK {
		res.Body.Close()
		return nil, &statusError{res.StatusCode}
	}
	return res, err
}

type statusError struct{ status int }

func (e *statusError) Error() string { return http.StatusText(e.status) }

// TestLegacyResumeInlinePoll: with InlinePollInterval, an inline wait
// closes each connection of its stream after the interval; the client
// follows with GETs and Last-Event-ID and gets the task's result exactly
// once, and the wait (and the task) go on across the closes.
func TestLegacyResumeInlinePoll(t *testing.T) {
	r := newLTRig(t, func(o *server.Options) {
		o.Sessions = &server.SessionOptions{Resume: &server.ResumeOptions{InlinePollInterval: 20 * time.Millisecond}}
	})
	c := r.client(ltV11, ltNoCaps, "")
	res, err := httpDo(c, inlineCall(""))
	if err != nil {
		t.Fatal(err)
	}
	post := readBlocks(t, res.Body) // ends at the first polling close
	res.Body.Close()
	tok := tokenOf(t, post)
	id := r.nextCreated()
	got := summary(t, post, tok)
	if n := len(got); n < 2 || got[n-1] != "-|1000|" {
		t.Fatalf("POST blocks %v: want a retry field last", got)
	}
	last := post[0].ID
	for _, b := range post {
		if b.ID != "" {
			last = b.ID
		}
	}
	r.mem.Complete(id, ltResult(9), "")
	results := 0
	for i := 0; results == 0 && i < 1000; i++ {
		status, blocks, body := resume(t, c, last)
		if status != http.StatusOK {
			t.Fatalf("GET after %s: status %d, body %s", last, status, body)
		}
		for _, s := range summary(t, blocks, tok) {
			if strings.Contains(s, `"sum":9`) {
				results++
			}
		}
		for _, b := range blocks {
			if b.ID != "" {
				last = b.ID
			}
		}
	}
	if results != 1 {
		t.Errorf("the result arrived %d times, want once", results)
	}
}

// TestLegacyResumeNodeBudget: an event beyond MaxNodeBytes still reaches
// the connection that carries the stream, but is not kept: a later
// resumption from before it is refused.
func TestLegacyResumeNodeBudget(t *testing.T) {
	pr := newPollRig(t, &server.ResumeOptions{MaxNodeBytes: 350})
	c := pr.c
	c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
	tok := pr.closedPoll(t)
	pr.proceed <- 1
	<-pr.after // kept: "before" and "after 0", 311 bytes
	res, err := openResume(c, tok+".0")
	if err != nil {
		t.Fatal(err)
	}
	close(pr.finish) // the result does not fit the node's budget
	got := summary(t, readBlocks(t, res.Body), tok)
	res.Body.Close()
	want := []string{"1||notifications/message before", "2||notifications/message after 0", "3||" + doneResult}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("live GET carried %v, want %v", got, want)
	}
	for _, after := range []string{"0", "2"} {
		if status, _, body := resume(t, c, tok+"."+after); status != http.StatusBadRequest {
			t.Errorf("GET after %s: status %d, body %s; want 400", after, status, body)
		}
	}
}

// TestLegacyResumeHTTP2: over HTTP/2, where a response cannot end before
// its handler returns, the call runs on its own goroutine: the close ends
// the POST, the call goes on, and the GET gets the result once.
func TestLegacyResumeHTTP2(t *testing.T) {
	pr := newPollRig(t, nil)
	var protos http.Protocols
	protos.SetUnencryptedHTTP2(true)
	hs := httptest.NewUnstartedServer(pr.srv)
	hs.Config.Protocols = &protos
	hs.Start()
	t.Cleanup(hs.Close)
	hc := &http.Client{Transport: &http.Transport{Protocols: &protos}}
	t.Cleanup(hc.CloseIdleConnections)
	c := pr.c.clone()
	c.url = hs.URL + "/mcp"
	init := c.newPost(context.Background(), `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"h2","version":"1"}}}`)
	res, err := hc.Do(init)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.ProtoMajor != 2 || res.StatusCode != http.StatusOK {
		t.Fatalf("initialize: %s %d", res.Proto, res.StatusCode)
	}
	c.sid = res.Header.Get("Mcp-Session-Id")
	postDone := make(chan []sseBlock)
	go func() { postDone <- postWith(t, hc, c) }()
	if err := <-pr.closed; err != nil {
		t.Fatalf("CloseSSEStream: %v", err)
	}
	tok := tokenOf(t, <-postDone)
	pr.proceed <- 0
	<-pr.after
	close(pr.finish)
	if err := <-pr.ctxErr; err != nil {
		t.Errorf("the close canceled the call: %v", err)
	}
	status, blocks, body := resumeWith(t, hc, c, tok+".1")
	if status != http.StatusOK {
		t.Fatalf("GET: status %d, body %s", status, body)
	}
	got := summary(t, blocks, tok)
	if len(got) != 1 || got[0] != "2||"+doneResult {
		t.Errorf("GET carried %v", got)
	}
}

// TestLegacyResumeNoHijack: when the POST's connection cannot be taken
// over (a ResponseWriter without Hijack), CloseSSEStream fails with
// ErrNotResumable and the result comes on the POST, once.
func TestLegacyResumeNoHijack(t *testing.T) {
	pr := newPollRig(t, nil)
	post := func(body, sid string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "http://localhost/mcp", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
		}
		w := httptest.NewRecorder()
		pr.srv.ServeHTTP(w, r)
		return w
	}
	sid := post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"r","version":"1"}}}`, "").Header().Get("Mcp-Session-Id")
	done := make(chan *httptest.ResponseRecorder)
	go func() { done <- post(pollCall, sid) }()
	if err := <-pr.closed; err != server.ErrNotResumable {
		t.Errorf("CloseSSEStream = %v, want ErrNotResumable", err)
	}
	pr.proceed <- 0
	<-pr.after
	close(pr.finish)
	w := <-done
	blocks := readBlocks(t, w.Body)
	got := summary(t, blocks, tokenOf(t, blocks))
	want := []string{"0|1000|empty", "1||notifications/message before", "2||" + doneResult}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("POST carried %v, want %v", got, want)
	}
}

// TestLegacyResumeTakesOverPost: a GET with Last-Event-ID while the POST
// still carries the stream (as after a connection the client lost but the
// server has not noticed) ends the POST's response; the call goes on and
// the rest comes on the GET.
func TestLegacyResumeTakesOverPost(t *testing.T) {
	pr := newPollRig(t, nil)
	c := pr.c
	c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
	res, err := http.DefaultClient.Do(c.newPost(context.Background(),
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"poll","arguments":{"keep":true}}}`))
	if err != nil {
		t.Fatal(err)
	}
	<-pr.closed // "before" is written; the POST stays open
	br := bufio.NewReader(res.Body)
	first, err := br.ReadString('\n') // the priming event's id line
	if err != nil || !strings.HasPrefix(first, "id: ") {
		t.Fatalf("first line %q, %v", first, err)
	}
	tok, _, _ := strings.Cut(strings.TrimSpace(first[4:]), ".")
	get, err := openResume(c, tok+".0")
	if err != nil {
		t.Fatal(err)
	}
	defer get.Body.Close()
	rest := summary(t, readBlocks(t, br), tok) // the POST ends
	res.Body.Close()
	if len(rest) > 0 && strings.HasSuffix(rest[len(rest)-1], doneResult) {
		t.Errorf("the POST carried the result: %v", rest)
	}
	pr.proceed <- 1
	<-pr.after
	close(pr.finish)
	got := summary(t, readBlocks(t, get.Body), tok)
	want := []string{"1||notifications/message before", "2||notifications/message after 0", "3||" + doneResult}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("GET carried %v, want %v", got, want)
	}
	if err := <-pr.ctxErr; err != nil {
		t.Errorf("the takeover canceled the call: %v", err)
	}
}
