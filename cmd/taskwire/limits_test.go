package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/faultnet"
)

// TestDevAuthNeedsLoopback: the development identities are served on a
// loopback address, and elsewhere only with InsecureDevAuth.
func TestDevAuthNeedsLoopback(t *testing.T) {
	tests := []struct {
		addr     string
		insecure bool
		ok       bool
	}{
		{"127.0.0.1:8080", false, true},
		{"127.1.2.3:0", false, true},
		{"[::1]:8080", false, true},
		{"localhost:8080", false, true},
		{"LOCALHOST:8080", false, true},
		{"0.0.0.0:8080", false, false},
		{":8080", false, false},
		{"[::]:8080", false, false},
		{"192.0.2.1:8080", false, false},
		{"example.com:8080", false, false},
		{"0.0.0.0:8080", true, true},
		{"192.0.2.1:8080", true, true},
	}
	for _, tt := range tests {
		cfg := testConfig(filepath.Join(t.TempDir(), "x.db"), 1)
		cfg.Addr, cfg.InsecureDevAuth = tt.addr, tt.insecure
		err := cfg.Validate()
		if (err == nil) != tt.ok {
			t.Errorf("addr %q, insecure %v: validate = %v, want ok %v", tt.addr, tt.insecure, err, tt.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "--insecure-dev-auth") {
			t.Errorf("addr %q: the error does not name the flag: %v", tt.addr, err)
		}
	}
}

// TestServeConnectionLimits: with more stalled connections than
// --max-conns, a client already connected keeps being served, trickled
// bodies are cut off at --body-timeout, and then a new client gets in.
func TestServeConnectionLimits(t *testing.T) {
	cfg := testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1)
	cfg.MaxConns, cfg.BodyTimeout = 4, 300*time.Millisecond
	cfg.ShutdownGrace = 5 * time.Second
	var counted *faultnet.CountingListener
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	counted = faultnet.Count(ln)
	cfg.Listener = counted
	n := start(t, cfg)
	c := newClient(t, n.URL())
	callTool(t, c, "text.stats", map[string]any{"text": "a b"}) // connects first

	addr := strings.TrimSuffix(strings.TrimPrefix(n.URL(), "http://"), "/mcp")
	stalled := make([]net.Conn, 12)
	for i := range stalled {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"+
			"Accept: application/json, text/event-stream\r\nContent-Length: 10485760\r\n\r\n{")
		stalled[i] = conn
	}
	for range 10 {
		callTool(t, c, "text.stats", map[string]any{"text": "a b"})
	}
	// Every stalled body is answered 408 once it gets a slot: none stays
	// open past the deadline, queued or not.
	for _, conn := range stalled {
		conn.SetReadDeadline(time.Now().Add(waitFor))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("a stalled body got no answer: %v", err)
		}
		if res.StatusCode != http.StatusRequestTimeout {
			t.Errorf("a stalled body: HTTP %d, want 408", res.StatusCode)
		}
	}
	fresh := newClient(t, n.URL())
	r := callTool(t, fresh, "text.stats", map[string]any{"text": "x"})
	if r.Error != nil {
		t.Errorf("a new client: %v", r.Error)
	}
	if p := counted.Peak(); p > int64(cfg.MaxConns) {
		t.Errorf("the node held %d connections at once, --max-conns %d", p, cfg.MaxConns)
	}
}

// TestServeConnsPerAddr: one address gets at most --max-conns-per-addr
// connections, and at --max-conns a new client is served by closing an idle
// keep-alive connection, although --idle-timeout is an hour.
func TestServeConnsPerAddr(t *testing.T) {
	cfg := testConfig(filepath.Join(t.TempDir(), "tasks.db"), 1)
	cfg.MaxConns, cfg.MaxConnsPerAddr, cfg.IdleTimeout = 4, 2, time.Hour
	var counted *faultnet.CountingListener
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		t.Fatal(err)
	}
	counted = faultnet.Count(ln)
	cfg.Listener = counted
	n := start(t, cfg)
	addr := strings.TrimSuffix(strings.TrimPrefix(n.URL(), "http://"), "/mcp")

	// getFrom opens a connection from local, sends a GET and reports
	// whether it was answered; the connection stays open.
	getFrom := func(local string) bool {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
		conn, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conn.SetDeadline(time.Now().Add(waitFor))
		fmt.Fprint(conn, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("a connection from %s was neither answered nor closed", local)
		}
		if err != nil {
			return false
		}
		res.Body.Close()
		return true
	}
	answered := 0
	for range 5 {
		if getFrom("127.0.0.2") {
			answered++
		}
	}
	if answered != cfg.MaxConnsPerAddr {
		t.Errorf("one address got %d connections answered, --max-conns-per-addr %d", answered, cfg.MaxConnsPerAddr)
	}
	// Two more idle connections fill --max-conns; a new client still gets
	// in.
	for range 2 {
		if !getFrom("127.0.0.3") {
			t.Fatal("a second address was refused")
		}
	}
	c := newClient(t, n.URL())
	if r := callTool(t, c, "text.stats", map[string]any{"text": "a b"}); r.Status != http.StatusOK || r.Error != nil {
		t.Errorf("a new client at --max-conns: HTTP %d, %v", r.Status, r.Error)
	}
	if p := counted.Peak(); p > int64(cfg.MaxConns) {
		t.Errorf("the node held %d connections at once, --max-conns %d", p, cfg.MaxConns)
	}
}
