package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/faultnet"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// announce opens a connection to addr and sends the headers of a tools/call
// announcing a body of contentLength bytes, then the first sent bytes of it.
func announce(t *testing.T, addr string, contentLength, sent int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
		"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"+
		"Content-Length: %d\r\n\r\n", contentLength)
	if sent > 0 {
		// A server that refuses the body early may close before it is all
		// written; its answer is what the test reads.
		c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"` + strings.Repeat("a", sent-len(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"x":"`))))
	}
	return c
}

// readStatus reads the status code of the response on c, waiting at most d.
func readStatus(c net.Conn, d time.Duration) (int, http.Header, error) {
	c.SetReadDeadline(time.Now().Add(d))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil, err
	}
	res.Body.Close()
	return res.StatusCode, res.Header, nil
}

// firstRead calls arrived once, on the first Read of the body it wraps: by
// then the server has prepared whatever it buffers the body in.
type firstRead struct {
	io.ReadCloser
	once    sync.Once
	arrived func()
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(f.arrived)
	return f.ReadCloser.Read(p)
}

// TestAnnouncedBodyCostsNoMemory: connections that announce 10 MiB bodies
// and send a few bytes make the server hold no more than what arrived; the
// buffer was once reserved at the announced size before reading.
func TestAnnouncedBodyCostsNoMemory(t *testing.T) {
	const conns = 16
	srv := newTestServer(t, nil)
	var arrived sync.WaitGroup
	arrived.Add(conns)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &firstRead{ReadCloser: r.Body, arrived: arrived.Done}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close) // after the connections close
	addr := ts.Listener.Addr().String()

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range conns {
		announce(t, addr, 10<<20, 200)
	}
	waitGroup(t, &arrived, 10*time.Second)
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("heap grew by %d KiB for %d connections announcing 10 MiB", grown>>10, conns)
	if grown > conns<<20 { // 1 MiB a connection is far above what arrived
		t.Errorf("heap grew by %d MiB for %d connections that sent 200 bytes each", grown>>20, conns)
	}
}

func waitGroup(t *testing.T, wg *sync.WaitGroup, d time.Duration) {
	t.Helper()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatal("the server did not start reading every body")
	}
}

// TestBodyBudget: bodies that arrive in full are charged to the node-wide
// budget; beyond it requests are refused at once with 503 and Retry-After,
// and the budget is whole again when the requests have ended.
func TestBodyBudget(t *testing.T) {
	const conns = 6
	srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) {
		o.MaxBodyBytes = 1 << 20
		o.MaxBufferedBodyBytes = 2 << 20
		o.BodyReadTimeout = time.Second
	})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close) // after the connections close
	addr := ts.Listener.Addr().String()

	// Each connection sends 600 KiB of a 1 MiB body and stalls: each holds
	// about 1 MiB of buffer, so at most two fit.
	cs := make([]net.Conn, conns)
	for i := range cs {
		cs[i] = announce(t, addr, 1<<20, 600<<10)
	}
	statuses := map[int]int{}
	for _, c := range cs {
		status, h, err := readStatus(c, 10*time.Second)
		if err != nil {
			t.Fatalf("reading a response: %v", err)
		}
		statuses[status]++
		if status == http.StatusServiceUnavailable && h.Get("Retry-After") != "1" {
			t.Errorf("503 with Retry-After %q, want 1", h.Get("Retry-After"))
		}
	}
	t.Logf("statuses: %v", statuses)
	if statuses[http.StatusServiceUnavailable] < conns-2 {
		t.Errorf("%d requests refused for the budget, want at least %d (statuses %v)", statuses[http.StatusServiceUnavailable], conns-2, statuses)
	}
	if statuses[http.StatusServiceUnavailable]+statuses[http.StatusRequestTimeout] != conns {
		t.Errorf("statuses %v, want only 503 and 408", statuses)
	}
	// Refunded: two bodies of 900 KiB go through, one after the other.
	for range 2 {
		body := callBody("echo", `{"text":"`+strings.Repeat("b", 900<<10)+`"}`)
		res := postHTTP(t, ts.URL, body)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("a 900 KiB call after the attack: HTTP %d", res.StatusCode)
		}
	}
}

// postHTTP sends a tools/call of echo over HTTP.
func postHTTP(t *testing.T, url, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res
}

// TestTrickledBodyTimesOut: a body sent a byte at a time is cut off at
// BodyReadTimeout with 408, and the connection is closed.
func TestTrickledBodyTimesOut(t *testing.T) {
	srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) {
		o.BodyReadTimeout = 300 * time.Millisecond
	})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close) // after the connections close
	c := announce(t, ts.Listener.Addr().String(), 1000, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // trickle until the test ends or the server hangs up
		for ctx.Err() == nil {
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	began := time.Now()
	status, _, err := readStatus(c, 5*time.Second)
	if err != nil {
		t.Fatalf("no response to a trickled body: %v", err)
	}
	if status != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", status)
	}
	t.Logf("cut off after %v", time.Since(began).Round(time.Millisecond))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("the connection stayed open after the body timed out")
	}
}

// TestBodyTimeoutSparesHandler: the body deadline ends with the body; a
// handler that runs longer keeps its context.
func TestBodyTimeoutSparesHandler(t *testing.T) {
	srv := newTestServer(t, func(o *server.Options, ep *server.Endpoint) {
		o.BodyReadTimeout = 100 * time.Millisecond
		ep.AddRawTool(&mcp.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`)}, func(ctx context.Context, _ *server.Request) (*mcp.CallToolResult, error) {
			select {
			case <-time.After(400 * time.Millisecond):
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
			case <-ctx.Done():
				return nil, mcp.InvalidParams("canceled")
			}
		})
	})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close) // after the connections close
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(callBody("slow", `{}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "slow")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if !strings.Contains(string(b), `"done"`) {
		t.Errorf("a handler outliving the body deadline: %s", b)
	}
}

// TestLimitListener: beyond the connection cap new connections wait while a
// client already connected keeps being served; the server never holds more
// connections than the cap; stalled bodies free their slots at the body
// deadline, and a new client is served.
func TestLimitListener(t *testing.T) {
	const limit, attackers = 4, 20
	srv := newTestServer(t, func(o *server.Options, _ *server.Endpoint) {
		o.BodyReadTimeout = 500 * time.Millisecond
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := faultnet.Count(ln)
	hs := &http.Server{Handler: srv}
	done := make(chan struct{})
	limited := limitListener(t, counted, limit)
	go func() { defer close(done); hs.Serve(limited) }()
	t.Cleanup(func() { hs.Close(); <-done }) // after the connections close
	url := "http://" + ln.Addr().String()

	// The ordinary client connects first and keeps its connection.
	ordinary := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1}}
	defer ordinary.CloseIdleConnections()
	callWith(t, ordinary, url)

	for range attackers {
		announce(t, ln.Addr().String(), 1000, 100) // never sends the rest
	}
	for range 20 {
		callWith(t, ordinary, url)
		time.Sleep(10 * time.Millisecond)
	}
	if p := counted.Peak(); p > limit {
		t.Errorf("the server held %d connections at once, limit %d", p, limit)
	}
	// The attackers' slots free up as their bodies time out; a new client
	// gets in.
	fresh := &http.Client{Transport: &http.Transport{}, Timeout: 20 * time.Second}
	defer fresh.CloseIdleConnections()
	callWith(t, fresh, url)
	if p := counted.Peak(); p > limit {
		t.Errorf("the server held %d connections at once, limit %d", p, limit)
	}
}

func callWith(t *testing.T, hc *http.Client, url string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(callBody("echo", `{"text":"hi"}`)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	res, err := hc.Do(req)
	if err != nil {
		t.Fatalf("call: %v", err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("call: HTTP %d", res.StatusCode)
	}
}

// TestLimitListenerClose: Close ends an Accept waiting for a slot.
func TestLimitListenerClose(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := limitListener(t, ln, 1)
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	first, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	errc := make(chan error, 1)
	go func() { _, err := l.Accept(); errc <- err }()
	l.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Error("Accept after Close succeeded")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a waiting Accept")
	}
}

// TestUnsupportedVersionEchoBounded: an unknown protocol version of 32 KiB
// is not echoed back in full.
func TestUnsupportedVersionEchoBounded(t *testing.T) {
	ts := httptest.NewServer(newTestServer(t, nil))
	defer ts.Close()
	long := "2099-" + strings.Repeat("9", 32<<10)
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + long + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", long)
	req.Header.Set("Mcp-Method", "tools/list")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `-32022`) {
		t.Fatalf("HTTP %d: %.200s", res.StatusCode, b)
	}
	if len(b) > 512 {
		t.Errorf("the -32022 error is %d bytes long; it echoes the version unbounded", len(b))
	}
}

// TestRejectedStalledBody: a request refused before its body is read
// (unknown path, wrong media type, budget) is answered and its connection
// closed, even though the client never sends the rest of the body: net/http
// would otherwise wait to drain it, without a deadline.
func TestRejectedStalledBody(t *testing.T) {
	ts := httptest.NewServer(newTestServer(t, nil))
	t.Cleanup(ts.Close) // after the connections close
	for _, tt := range []struct{ name, path, contentType string }{
		{"unknown path", "/other", "application/json"},
		{"media type", "/mcp", "text/plain"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c, err := net.Dial("tcp", ts.Listener.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: localhost\r\nContent-Type: %s\r\n"+
				"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{", tt.path, tt.contentType)
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			br := bufio.NewReader(c)
			res, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatalf("no response: %v", err)
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if _, err := br.ReadByte(); err != io.EOF {
				t.Errorf("after HTTP %d, the connection stayed open (read: %v)", res.StatusCode, err)
			}
		})
	}
}
