package server

import (
	"net"
	"sync"
)

// LimitListener returns a listener that keeps at most n connections accepted
// from l open at once, so that a flood of clients, slow or idle, cannot use
// up the process's file descriptors (which the store, the log and Accept
// itself need too). While n are open, Accept waits for one of them to close
// before it accepts another: new clients wait in the kernel's accept queue,
// and are refused by the kernel only when that queue is full, while clients
// already connected keep being served. Pair it with the read timeouts of
// http.Server (ReadHeaderTimeout, IdleTimeout) and Options.BodyReadTimeout,
// which free the slots of clients that stall.
//
// Closing the returned listener closes l and ends an Accept that is waiting
// for a slot with net.ErrClosed; connections already accepted stay open
// until they are closed. LimitListener panics if n is less than 1.
func LimitListener(l net.Listener, n int) net.Listener {
	if n < 1 {
		panic("server: LimitListener needs a positive connection limit")
	}
	return &limitListener{Listener: l, slots: make(chan struct{}, n), done: make(chan struct{})}
}

// limitListener is the listener of LimitListener. A slot is a buffered
// value in slots, taken before Accept and returned when the connection
// closes (or Accept fails).
type limitListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{} // closed by Close
	closeOnce sync.Once
}

// Accept waits for a free slot, then accepts a connection.
func (l *limitListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitConn{Conn: c, slots: l.slots}, nil
}

// Close closes the underlying listener and wakes a waiting Accept.
func (l *limitListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// limitConn returns its slot when it is first closed.
type limitConn struct {
	net.Conn
	slots     chan struct{}
	closeOnce sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { <-c.slots })
	return err
}

// CloseWrite half-closes a TCP connection, which net/http uses to deliver
// an error response before closing a connection whose body it did not read.
func (c *limitConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
