package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// sseBlock is one SSE block as read off the wire: its id, retry and data
// fields ("" when absent; hasData tells an empty data field from none).
type sseBlock struct {
	ID, Retry, Data string
	HasData         bool
}

// readBlocks reads SSE blocks until the body ends, skipping comments.
func readBlocks(t *testing.T, body io.Reader) []sseBlock {
	t.Helper()
	var out []sseBlock
	var cur sseBlock
	started := false
	br := bufio.NewReader(body)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return out
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if started {
				out = append(out, cur)
			}
			cur, started = sseBlock{}, false
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id: "):
			cur.ID, started = line[4:], true
		case strings.HasPrefix(line, "retry: "):
			cur.Retry, started = line[7:], true
		case line == "data:":
			cur.HasData, started = true, true
		case strings.HasPrefix(line, "data: "):
			cur.Data, cur.HasData, started = line[6:], true, true
		}
	}
}

// pollRig is a server whose "poll" tool closes its stream mid-call and is
// driven step by step by the test.
type pollRig struct {
	c       *legacyClient
	closed  chan error    // CloseSSEStream's result
	proceed chan int      // how many log messages to send after the close
	after   chan struct{} // the tool sent them
	finish  chan struct{} // the tool may return
	ctxErr  chan error    // the tool's ctx.Err() as it returns
	calls   chan struct{} // one per run of the tool
	srv     http.Handler
}

func newPollRig(t *testing.T, ro *server.ResumeOptions) *pollRig {
	t.Helper()
	return newPollRigWith(t, ro, nil)
}

func newPollRigWith(t *testing.T, ro *server.ResumeOptions, mutate func(*server.Options)) *pollRig {
	t.Helper()
	pr := &pollRig{
		closed: make(chan error, 1), proceed: make(chan int, 1), after: make(chan struct{}, 1),
		finish: make(chan struct{}), ctxErr: make(chan error, 1), calls: make(chan struct{}, 4),
	}
	srv := newLegacyCatalog(t, func(o *server.Options, ep *server.Endpoint) {
		o.Sessions = &server.SessionOptions{Resume: ro}
		if mutate != nil {
			mutate(o)
		}
		server.AddTool(ep, &mcp.Tool{Name: "poll", Description: "Closes its stream mid-call."},
			func(ctx context.Context, req *server.Request, in struct {
				Keep bool `json:"keep,omitempty"`
			}) (*mcp.CallToolResult, any, error) {
				pr.calls <- struct{}{}
				req.Log(ctx, mcp.LevelInfo, "poll", "before")
				if in.Keep {
					pr.closed <- nil
				} else {
					pr.closed <- req.CloseSSEStream(250 * time.Millisecond)
				}
				for i := range <-pr.proceed {
					req.Log(ctx, mcp.LevelInfo, "poll", fmt.Sprint("after ", i))
				}
				pr.after <- struct{}{}
				<-pr.finish
				pr.ctxErr <- ctx.Err()
				return &mcp.CallToolResult{Content: textContent("done")}, nil, nil
			})
	})
	pr.srv = srv
	pr.c = newLegacyRig(t, srv)
	return pr
}

const pollCall = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"poll","arguments":{}}}`

// post sends the poll call and returns the blocks of its response.
func (pr *pollRig) post(t *testing.T, c *legacyClient) []sseBlock {
	t.Helper()
	return postWith(t, http.DefaultClient, c)
}

func postWith(t *testing.T, hc *http.Client, c *legacyClient) []sseBlock {
	t.Helper()
	res, err := hc.Do(c.newPost(context.Background(), pollCall))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("POST: status %d, Content-Type %q", res.StatusCode, ct)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("POST: Cache-Control %q, want no-store", cc)
	}
	return readBlocks(t, res.Body)
}

// resume sends a GET with Last-Event-ID; it returns the status and, for
// 200, the blocks, else the body.
func resume(t *testing.T, c *legacyClient, lastID string) (int, []sseBlock, []byte) {
	t.Helper()
	return resumeWith(t, http.DefaultClient, c, lastID)
}

func resumeWith(t *testing.T, hc *http.Client, c *legacyClient, lastID string) (int, []sseBlock, []byte) {
	t.Helper()
	r, err := http.NewRequest(http.MethodGet, c.url, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("Mcp-Session-Id", c.sid)
	r.Header.Set("Last-Event-ID", lastID)
	res, err := hc.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if cc := res.Header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("GET: Cache-Control %q, want no-store", cc)
	}
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, nil, b
	}
	return res.StatusCode, readBlocks(t, res.Body), nil
}

// summary is what a test compares of blocks: per block, the position of
// its ID ("-" for none), its retry and a digest of its data.
func summary(t *testing.T, blocks []sseBlock, token string) []string {
	t.Helper()
	var out []string
	for _, b := range blocks {
		pos := "-"
		if b.ID != "" {
			tok, n, ok := strings.Cut(b.ID, ".")
			if !ok || tok != token {
				t.Errorf("event ID %q is not of stream %s", b.ID, token)
			}
			pos = n
		}
		what := ""
		if b.Data != "" {
			var m legacyMsg
			if err := json.Unmarshal([]byte(b.Data), &m); err != nil {
				t.Fatalf("data %q: %v", b.Data, err)
			}
			switch {
			case m.Method != "":
				var p struct{ Data string }
				json.Unmarshal(m.Params, &p)
				what = m.Method + " " + p.Data
			case m.Result != nil:
				what = "result " + string(m.Result)
			}
		} else if b.HasData {
			what = "empty"
		}
		out = append(out, pos+"|"+b.Retry+"|"+what)
	}
	return out
}

func tokenOf(t *testing.T, blocks []sseBlock) string {
	t.Helper()
	if len(blocks) == 0 || blocks[0].ID == "" {
		t.Fatalf("no priming event: %+v", blocks)
	}
	tok, _, _ := strings.Cut(blocks[0].ID, ".")
	return tok
}

const doneResult = `result {"content":[{"type":"text","text":"done"}]}`

// TestLegacyResumeCloseAndResume: the priming event comes first, every
// event has an ID of the stream, the server's close sends a retry field
// and ends the POST without canceling the call, and a GET with the last
// ID replays what came after it and carries the rest of the call: the
// result arrives exactly once.
func TestLegacyResumeCloseAndResume(t *testing.T) {
	pr := newPollRig(t, nil)
	c := pr.c
	c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
	postDone := make(chan []sseBlock)
	go func() { postDone <- pr.post(t, c) }()
	if err := <-pr.closed; err != nil {
		t.Fatalf("CloseSSEStream: %v", err)
	}
	post := <-postDone // the POST ended while the call runs
	tok := tokenOf(t, post)
	want := []string{"0|1000|empty", "1||notifications/message before", "-|250|"}
	if diff := cmp.Diff(want, summary(t, post, tok)); diff != "" {
		t.Fatalf("POST blocks (-want +got):\n%s", diff)
	}
	pr.proceed <- 2
	<-pr.after
	close(pr.finish)
	if err := <-pr.ctxErr; err != nil {
		t.Errorf("the server's close canceled the call: %v", err)
	}
	status, got, body := resume(t, c, tok+".1")
	if status != http.StatusOK {
		t.Fatalf("GET: status %d, body %s", status, body)
	}
	want = []string{"2||notifications/message after 0", "3||notifications/message after 1", "4||" + doneResult}
	if diff := cmp.Diff(want, summary(t, got, tok)); diff != "" {
		t.Errorf("GET blocks (-want +got):\n%s", diff)
	}
	// Replay after a later ID sends only what follows it; after the last,
	// nothing, and the stream ends.
	for _, tc := range []struct {
		after string
		want  []string
	}{
		{"3", []string{"4||" + doneResult}},
		{"4", nil},
		{"0", []string{"1||notifications/message before", "2||notifications/message after 0", "3||notifications/message after 1", "4||" + doneResult}},
	} {
		status, got, body := resume(t, c, tok+"."+tc.after)
		if status != http.StatusOK {
			t.Fatalf("GET after %s: status %d, body %s", tc.after, status, body)
		}
		if diff := cmp.Diff(tc.want, summary(t, got, tok)); diff != "" {
			t.Errorf("GET after %s (-want +got):\n%s", tc.after, diff)
		}
	}
	if n := len(pr.calls); n != 1 {
		t.Errorf("the tool ran %d times", n)
	}
}

// TestLegacyResumeLive: a GET that resumes while the call runs receives
// the later events as they happen, then the result, and ends.
func TestLegacyResumeLive(t *testing.T) {
	pr := newPollRig(t, nil)
	c := pr.c
	c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
	postDone := make(chan []sseBlock)
	go func() { postDone <- pr.post(t, c) }()
	<-pr.closed
	tok := tokenOf(t, <-postDone)
	type out struct {
		status int
		blocks []sseBlock
	}
	getDone := make(chan out)
	r, _ := http.NewRequest(http.MethodGet, c.url, nil)
	r.Header.Set("Accept", "text/event-stream")
	r.Header.Set("Mcp-Session-Id", c.sid)
	r.Header.Set("Last-Event-ID", tok+".1")
	res, err := http.DefaultClient.Do(r) // headers are flushed once attached
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer res.Body.Close()
		getDone <- out{res.StatusCode, readBlocks(t, res.Body)}
	}()
	pr.proceed <- 1
	<-pr.after
	close(pr.finish)
	got := <-getDone
	want := []string{"2||notifications/message after 0", "3||" + doneResult}
	if diff := cmp.Diff(want, summary(t, got.blocks, tok)); diff != "" {
		t.Errorf("live GET (-want +got):\n%s", diff)
	}
}

// TestLegacyResumeRefused: an ID of another session, an unknown or
// malformed one, and one past the stream get the same 400 bytes, and
// nothing is replayed.
func TestLegacyResumeRefused(t *testing.T) {
	pr := newPollRig(t, nil)
	c := pr.c
	c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
	other := c.clone()
	other.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
	postDone := make(chan []sseBlock)
	go func() { postDone <- pr.post(t, c) }()
	<-pr.closed
	tok := tokenOf(t, <-postDone)
	defer func() {
		pr.proceed <- 0
		<-pr.after
		close(pr.finish)
	}()
	_, _, ref := resume(t, c, strings.Repeat("0", 32)+".0")
	for _, tc := range []struct {
		name, lastID string
		c            *legacyClient
	}{
		{"another session", tok + ".0", other},
		{"unknown stream", strings.Repeat("0", 32) + ".0", c},
		{"malformed", "garbage", c},
		{"upper case", strings.ToUpper(tok) + ".0", c},
		{"past the stream", tok + ".99", c},
		{"leading zero", tok + ".01", c},
		{"empty", "", c},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, _, body := resume(t, tc.c, tc.lastID)
			if status != http.StatusBadRequest || !bytes.Equal(body, ref) {
				t.Errorf("status %d, body %s; want 400 and %s", status, body, ref)
			}
		})
	}
	if !bytes.Contains(ref, []byte("Last-Event-ID")) {
		t.Errorf("the refusal does not say why: %s", ref)
	}
}

// TestLegacyResumeVersions: a 2025-06-18 session's SSE stream has no IDs
// and CloseSSEStream fails there, leaving the POST to carry the result.
func TestLegacyResumeVersions(t *testing.T) {
	for _, tc := range []struct {
		name    string
		version string
		opts    *server.ResumeOptions
	}{
		{"2025-06-18", mcp.ProtocolVersion20250618, nil},
		{"disabled", mcp.ProtocolVersion20251125, &server.ResumeOptions{Disabled: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPollRig(t, tc.opts)
			c := pr.c
			c.mustInitialize(tc.version, `{}`)
			postDone := make(chan []sseBlock)
			go func() { postDone <- pr.post(t, c) }()
			if err := <-pr.closed; err != server.ErrNotResumable {
				t.Errorf("CloseSSEStream = %v, want ErrNotResumable", err)
			}
			pr.proceed <- 0
			<-pr.after
			close(pr.finish)
			got := summary(t, <-postDone, "")
			want := []string{"-||notifications/message before", "-||" + doneResult}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("POST blocks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLegacyResumeBounds: the replay buffer keeps at most MaxEvents events
// (and MaxBytes bytes) per session; a resumption that needs an evicted
// event is refused, one after the kept ones still works.
func TestLegacyResumeBounds(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    *server.ResumeOptions
		refused string // a position whose successors are no longer kept
		ok      string // a position whose successors are
		want    []string
	}{
		{"events", &server.ResumeOptions{MaxEvents: 3}, "2", "3",
			[]string{"4||notifications/message after 2", "5||notifications/message after 3", "6||" + doneResult}},
		{"bytes", &server.ResumeOptions{MaxBytes: 400}, "3", "4",
			[]string{"5||notifications/message after 3", "6||" + doneResult}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pr := newPollRig(t, tc.opts)
			c := pr.c
			c.mustInitialize(mcp.ProtocolVersion20251125, `{}`)
			postDone := make(chan []sseBlock)
			go func() { postDone <- pr.post(t, c) }()
			<-pr.closed
			tok := tokenOf(t, <-postDone)
			pr.proceed <- 4
			<-pr.after
			close(pr.finish)
			// Replayed, or live if the result is not written yet: the GET
			// ends after it either way.
			status, blocks, body := resume(t, c, tok+"."+tc.ok)
			if status != http.StatusOK {
				t.Fatalf("GET after %s: status %d, body %s", tc.ok, status, body)
			}
			got := summary(t, blocks, tok)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("GET after %s (-want +got):\n%s", tc.ok, diff)
			}
			if status, _, body := resume(t, c, tok+"."+tc.refused); status != http.StatusBadRequest {
				t.Errorf("GET after %s: status %d, body %s; want 400", tc.refused, status, body)
			}
		})
	}
}
