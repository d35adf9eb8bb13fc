package server_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/taskwire/taskwire/internal/faultnet"
	"github.com/taskwire/taskwire/server"
)

// connWait bounds what the connection tests wait for before they fail; no
// test passes by waiting for it.
const connWait = 20 * time.Second

// serveLimited serves handler over a ConnLimiter with limits on a loopback
// listener, with the limiter's ConnState hook and keep-alive connections
// kept for an hour, and returns the listener's address and the counter of
// connections accepted from it.
func serveLimited(t *testing.T, limits server.ConnLimits, handler http.Handler) (string, *faultnet.CountingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	counted := faultnet.Count(ln)
	l, err := server.NewConnLimiter(counted, limits)
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: handler, IdleTimeout: time.Hour, ReadHeaderTimeout: time.Hour, ConnState: l.ConnState}
	done := make(chan struct{})
	go func() { defer close(done); hs.Serve(l) }()
	t.Cleanup(func() { hs.Close(); <-done })
	return ln.Addr().String(), counted
}

var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })

// dialFrom connects to addr from the loopback address local.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends a GET on c and reads its response: the status, or an
// error when the server closed the connection instead.
func roundTrip(c net.Conn, br *bufio.Reader) (int, error) {
	c.SetDeadline(time.Now().Add(connWait))
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		return 0, err
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	return res.StatusCode, nil
}

// isTimeout reports whether err is a read or write that ran out of time.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestConnLimiterPerAddr: one address holding more connections than its
// bound keeps only that many, while a client from another address is
// served.
func TestConnLimiterPerAddr(t *testing.T) {
	const perAddr, attempts = 3, 10
	addr, counted := serveLimited(t, server.ConnLimits{Max: 8, PerAddr: perAddr}, okHandler)

	// The attacker connects from 127.0.0.2 and keeps every connection open.
	conns := make([]net.Conn, attempts)
	for i := range conns {
		conns[i] = dialFrom(t, "127.0.0.2", addr)
	}
	served := 0
	for _, c := range conns {
		switch status, err := roundTrip(c, bufio.NewReader(c)); {
		case err == nil && status == http.StatusOK:
			served++
		case err == nil:
			t.Errorf("HTTP %d", status)
		case isTimeout(err):
			t.Fatalf("a connection beyond the bound was neither served nor closed: %v", err)
		}
	}
	if served != perAddr {
		t.Errorf("%d of the address's %d connections were served, want its bound %d", served, attempts, perAddr)
	}
	// Another client is served while the attacker holds its connections.
	other := dialFrom(t, "127.0.0.1", addr)
	if status, err := roundTrip(other, bufio.NewReader(other)); err != nil || status != http.StatusOK {
		t.Fatalf("a client of another address: HTTP %d, %v", status, err)
	}
	if p := counted.Peak(); p > 8 {
		t.Errorf("%d connections open at once, Max 8", p)
	}
}

// TestConnLimiterReclaimsIdle: at the cap, a new client is served at once by
// closing the keep-alive connection idle longest, not after IdleTimeout (an
// hour here); a connection whose request is in flight is never closed.
func TestConnLimiterReclaimsIdle(t *testing.T) {
	const limit = 3
	release := make(chan struct{})
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			<-release
		}
		io.WriteString(w, "ok")
	})
	addr, counted := serveLimited(t, server.ConnLimits{Max: limit, PerAddr: server.NoLimit, ReclaimIdleAfter: time.Millisecond}, handler)

	// Two idle keep-alive connections, oldest first, and one with a
	// request in flight.
	var idle []net.Conn
	var readers []*bufio.Reader
	for range limit - 1 {
		c := dialFrom(t, "127.0.0.1", addr)
		br := bufio.NewReader(c)
		if status, err := roundTrip(c, br); err != nil || status != http.StatusOK {
			t.Fatalf("HTTP %d, %v", status, err)
		}
		idle, readers = append(idle, c), append(readers, br)
	}
	busy := dialFrom(t, "127.0.0.1", addr)
	busy.SetDeadline(time.Now().Add(connWait))
	fmt.Fprint(busy, "GET /slow HTTP/1.1\r\nHost: localhost\r\n\r\n")

	for i := range 2 {
		fresh := dialFrom(t, "127.0.0.1", addr)
		if status, err := roundTrip(fresh, bufio.NewReader(fresh)); err != nil || status != http.StatusOK {
			t.Fatalf("new client %d at the cap: HTTP %d, %v", i, status, err)
		}
	}
	// The oldest idle connection made room.
	idle[0].SetReadDeadline(time.Now().Add(connWait))
	if _, err := readers[0].ReadByte(); err == nil || isTimeout(err) {
		t.Errorf("the longest idle connection is still open (read: %v)", err)
	}
	close(release)
	busy.SetReadDeadline(time.Now().Add(connWait))
	res, err := http.ReadResponse(bufio.NewReader(busy), nil)
	if err != nil {
		t.Fatalf("the connection with a request in flight was closed: %v", err)
	}
	res.Body.Close()
	if p := counted.Peak(); p > limit {
		t.Errorf("%d connections open at once, Max %d", p, limit)
	}
}

func TestConnLimitsValidation(t *testing.T) {
	tests := []struct {
		limits server.ConnLimits
		want   string // in the error; empty: valid
	}{
		{server.ConnLimits{Max: 1}, ""},
		{server.ConnLimits{Max: 10, PerAddr: server.NoLimit}, ""},
		{server.ConnLimits{Max: 10, PerAddr: 10}, ""},
		{server.ConnLimits{}, "Max must be at least 1"},
		{server.ConnLimits{Max: 10, PerAddr: -2}, "PerAddr must not be negative"},
		{server.ConnLimits{Max: 10, PerAddr: 11}, "PerAddr (11) exceeds Max (10)"},
		{server.ConnLimits{Max: 10, ReclaimIdleAfter: -time.Second}, "ReclaimIdleAfter must not be negative"},
	}
	for _, tt := range tests {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, err = server.NewConnLimiter(ln, tt.limits)
		ln.Close()
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%+v: %v", tt.limits, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%+v: error %v, want %q", tt.limits, err, tt.want)
		}
	}
}

func TestDefaultConnsPerAddr(t *testing.T) {
	for _, tt := range []struct{ max, want int }{{1, 1}, {4, 4}, {16, 16}, {100, 16}, {896, 112}, {10000, 1250}} {
		if got := server.DefaultConnsPerAddr(tt.max); got != tt.want {
			t.Errorf("DefaultConnsPerAddr(%d) = %d, want %d", tt.max, got, tt.want)
		}
	}
}

// TestConnLimiterKeepsRecentlyIdle: at the cap, a keep-alive connection
// that went idle less than ReclaimIdleAfter ago (a client between two
// calls) is not closed for a newcomer, which waits for a slot instead; a
// flood of slow connections holding the other slots would otherwise push
// the busy client behind it.
func TestConnLimiterKeepsRecentlyIdle(t *testing.T) {
	addr, _ := serveLimited(t, server.ConnLimits{Max: 1, PerAddr: server.NoLimit, ReclaimIdleAfter: time.Hour}, okHandler)
	regular := dialFrom(t, "127.0.0.1", addr)
	rr := bufio.NewReader(regular)
	if status, err := roundTrip(regular, rr); err != nil || status != http.StatusOK {
		t.Fatalf("HTTP %d, %v", status, err)
	}
	newcomer := dialFrom(t, "127.0.0.1", addr)
	fmt.Fprint(newcomer, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
	nr := bufio.NewReader(newcomer)
	newcomer.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := nr.ReadByte(); !isTimeout(err) {
		t.Fatalf("the newcomer was served (or cut: %v) while the only slot was a recently idle connection", err)
	}
	// The regular client still has its connection.
	if status, err := roundTrip(regular, rr); err != nil || status != http.StatusOK {
		t.Fatalf("the recently idle connection: HTTP %d, %v", status, err)
	}
	regular.Close()
	newcomer.SetReadDeadline(time.Now().Add(connWait))
	res, err := http.ReadResponse(nr, nil)
	if err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("the newcomer once the slot freed: %v, %v", res, err)
	}
	res.Body.Close()
}

// BenchmarkConnLimiterConnState is what the limiter adds to each request
// on a keep-alive connection: the hook runs twice, active then idle.
func BenchmarkConnLimiterConnState(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	l, err := server.NewConnLimiter(ln, server.ConnLimits{Max: 64, PerAddr: 16})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	c, err := l.Accept()
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	b.ReportAllocs()
	for b.Loop() {
		l.ConnState(c, http.StateActive)
		l.ConnState(c, http.StateIdle)
	}
}
