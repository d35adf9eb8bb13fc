package faultnet

import (
	"net"
	"sync"
	"sync/atomic"
)

// CountingListener wraps a listener and counts the connections it accepted
// that are still open, and the most that were ever open at once, for tests
// that bound a server's connections. Its methods are safe for concurrent
// use.
type CountingListener struct {
	net.Listener
	open, peak atomic.Int64
}

// Count returns a CountingListener wrapping l.
func Count(l net.Listener) *CountingListener { return &CountingListener{Listener: l} }

// Accept accepts a connection of the wrapped listener and counts it until
// it is closed.
func (l *CountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for p := l.peak.Load(); n > p && !l.peak.CompareAndSwap(p, n); p = l.peak.Load() {
	}
	return &countedConn{Conn: c, l: l}, nil
}

// Open returns the number of accepted connections not yet closed.
func (l *CountingListener) Open() int64 { return l.open.Load() }

// Peak returns the most accepted connections that were open at once.
func (l *CountingListener) Peak() int64 { return l.peak.Load() }

// countedConn uncounts itself when it is first closed.
type countedConn struct {
	net.Conn
	l    *CountingListener
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}
