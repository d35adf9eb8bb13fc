package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// ConnLimits configure NewConnLimiter.
type ConnLimits struct {
	// Max bounds the connections open at once, every client together.
	// Required: at least 1.
	Max int
	// PerAddr bounds the connections open at once from one client
	// address: one IPv4 address, or one /64 prefix of IPv6 addresses (what
	// a single host is usually given). A connection beyond it is closed as
	// soon as it is accepted, before anything is read from it, so that one
	// client cannot hold the slots of the others. Connections whose peer
	// is not an IP address (a Unix socket) are not counted. Zero means
	// DefaultConnsPerAddr(Max); NoLimit turns the bound off, which a
	// server behind a reverse proxy needs: every connection then comes
	// from the proxy, and bounding each client is the proxy's job.
	PerAddr int
	// ReclaimIdleAfter is how long a keep-alive connection must have
	// waited for its next request before Accept, at the cap, closes it to
	// admit a new client. A client between two calls (a few milliseconds
	// idle) keeps its connection: under a flood of slow connections that
	// hold the other slots, closing it would only send it to the back of
	// the accept queue behind the flood. Zero means
	// DefaultReclaimIdleAfter; it must not be negative.
	ReclaimIdleAfter time.Duration
}

// DefaultReclaimIdleAfter is the default of ConnLimits.ReclaimIdleAfter.
const DefaultReclaimIdleAfter = time.Second

// Bounds of DefaultConnsPerAddr.
const (
	connsPerAddrShare = 8  // one address may hold an eighth of the slots
	minConnsPerAddr   = 16 // but at least this many, when Max allows
)

// DefaultConnsPerAddr is the default of ConnLimits.PerAddr for a node-wide
// cap of n: an eighth of n, but at least 16 (or n, when that is smaller),
// so that a client with a handful of listen streams and calls in flight is
// never refused.
func DefaultConnsPerAddr(n int) int {
	return max(n/connsPerAddrShare, min(n, minConnsPerAddr))
}

// validate reports every problem of the limits.
func (o ConnLimits) validate() error {
	var errs []error
	if o.Max < 1 {
		errs = append(errs, fmt.Errorf("server: ConnLimits.Max must be at least 1, got %d", o.Max))
	}
	if o.PerAddr < NoLimit {
		errs = append(errs, fmt.Errorf("server: ConnLimits.PerAddr must not be negative (NoLimit turns it off), got %d", o.PerAddr))
	}
	if o.ReclaimIdleAfter < 0 {
		errs = append(errs, fmt.Errorf("server: ConnLimits.ReclaimIdleAfter must not be negative, got %v", o.ReclaimIdleAfter))
	}
	if o.Max >= 1 && o.PerAddr > o.Max {
		errs = append(errs, fmt.Errorf("server: ConnLimits.PerAddr (%d) exceeds Max (%d)", o.PerAddr, o.Max))
	}
	return errors.Join(errs...)
}

// ConnLimiter is a listener that bounds the connections accepted from
// another one, so that a flood of clients, slow or idle, cannot use up the
// process's file descriptors (which the store, the log and Accept itself
// need too) nor keep other clients out:
//
//   - At most Max connections are open at once. At the cap, Accept closes
//     the idle keep-alive connection that has waited longest for its next
//     request, once it has waited ReclaimIdleAfter, to make room for the
//     next client; with none idle that long, it waits
//     for a connection to close before it accepts another. New clients
//     then wait in the kernel's accept queue (and are refused by the kernel
//     only when that queue is full), while clients already connected keep
//     being served.
//   - At most PerAddr connections come from one client address; Accept
//     closes the others at once.
//
// Knowing which connections are idle takes the http.Server's help: set its
// ConnState to the limiter's ConnState method. Without it, no connection
// is closed to make room, and Accept only waits. As with IdleTimeout, a
// client usually sees the close while the connection waits in its pool,
// and uses another; a request already on its way fails, and is sent again
// only if the client retries it (net/http retries idempotent ones). Pair the limiter with the
// read timeouts of http.Server (ReadHeaderTimeout, IdleTimeout) and
// Options.BodyReadTimeout, which free the slots of clients that stall.
//
// Closing a ConnLimiter closes the listener under it and ends an Accept
// that is waiting for a slot with net.ErrClosed; connections already
// accepted stay open until they are closed.
type ConnLimiter struct {
	net.Listener
	max, perAddr int
	reclaimAfter time.Duration
	done         chan struct{} // closed by Close
	closeOnce    sync.Once

	mu      sync.Mutex
	open    int
	byAddr  map[netip.Addr]int
	idle    connList      // idle keep-alive connections, longest idle first
	waiters int           // Accepts waiting for wake
	wake    chan struct{} // closed, and replaced, when a slot frees or a connection goes idle
}

// NewConnLimiter returns a ConnLimiter accepting from l within limits. It
// fails, naming every problem, when limits are invalid.
func NewConnLimiter(l net.Listener, limits ConnLimits) (*ConnLimiter, error) {
	if err := limits.validate(); err != nil {
		return nil, err
	}
	perAddr := limits.PerAddr
	switch perAddr {
	case 0:
		perAddr = DefaultConnsPerAddr(limits.Max)
	case NoLimit:
		perAddr = 0
	}
	reclaimAfter := limits.ReclaimIdleAfter
	if reclaimAfter == 0 {
		reclaimAfter = DefaultReclaimIdleAfter
	}
	return &ConnLimiter{
		Listener: l, max: limits.Max, perAddr: perAddr, reclaimAfter: reclaimAfter, done: make(chan struct{}),
		byAddr: map[netip.Addr]int{}, wake: make(chan struct{}),
	}, nil
}

// LimitListener returns a ConnLimiter that keeps at most n connections
// accepted from l open at once, with no bound per client address
// (ConnLimits{Max: n, PerAddr: NoLimit}). It fails when n is less than 1.
//
// It bounds what golang.org/x/net/netutil.LimitListener bounds, and is
// kept because it is a ConnLimiter: set the http.Server's ConnState to its
// ConnState method and, at the cap, it closes the longest idle keep-alive
// connection to admit a new client, where netutil's listener waits for an
// idle client to go away; and a cap below one is an error, not an Accept
// that waits forever.
func LimitListener(l net.Listener, n int) (*ConnLimiter, error) {
	return NewConnLimiter(l, ConnLimits{Max: n, PerAddr: NoLimit})
}

// Accept waits for a free slot, making one from an idle connection when it
// can, then accepts a connection within its address's bound.
func (l *ConnLimiter) Accept() (net.Conn, error) {
	for {
		if err := l.takeSlot(); err != nil {
			return nil, err
		}
		c, err := l.Listener.Accept()
		if err != nil {
			l.mu.Lock()
			l.open--
			l.wakeLocked()
			l.mu.Unlock()
			return nil, err
		}
		addr := addrKey(c.RemoteAddr())
		l.mu.Lock()
		if addr.IsValid() && l.perAddr > 0 && l.byAddr[addr] >= l.perAddr {
			l.open--
			l.wakeLocked()
			l.mu.Unlock()
			c.Close()
			continue
		}
		if addr.IsValid() {
			l.byAddr[addr]++
		}
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l, addr: addr}, nil
	}
}

// takeSlot counts a new connection, first closing idle connections or
// waiting while all the slots are taken.
func (l *ConnLimiter) takeSlot() error {
	l.mu.Lock()
	for l.open >= l.max {
		var timer *time.Timer
		var ripe <-chan time.Time // when the longest idle connection may be closed
		if victim := l.idle.front(); victim != nil {
			wait := l.reclaimAfter - time.Since(victim.idleSince)
			if wait <= 0 {
				l.idle.remove(victim)
				l.mu.Unlock()
				victim.Close() // gives its slot back
				l.mu.Lock()
				continue
			}
			timer = time.NewTimer(wait)
			ripe = timer.C
		}
		wake := l.wake
		l.waiters++
		l.mu.Unlock()
		select {
		case <-wake:
		case <-ripe:
		case <-l.done:
		}
		if timer != nil {
			timer.Stop()
		}
		l.mu.Lock()
		l.waiters--
		select {
		case <-l.done:
			l.mu.Unlock()
			return net.ErrClosed
		default:
		}
	}
	l.open++
	l.mu.Unlock()
	return nil
}

// wakeLocked wakes the Accepts waiting for a slot, under l.mu.
func (l *ConnLimiter) wakeLocked() {
	if l.waiters > 0 {
		close(l.wake)
		l.wake = make(chan struct{})
	}
}

// ConnState is an http.Server ConnState hook that tells the limiter which
// connections are idle, waiting for their next request, and may be closed
// to make room for a new client. Call it from your own hook when you have
// one. Connections of another listener are ignored.
func (l *ConnLimiter) ConnState(c net.Conn, state http.ConnState) {
	lc, ok := c.(*limitConn)
	if !ok || lc.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if state != http.StateIdle {
		l.idle.remove(lc)
		return
	}
	if !lc.closed && !lc.inIdle {
		lc.idleSince = time.Now()
		l.idle.pushBack(lc)
		l.wakeLocked()
	}
}

// Close closes the underlying listener and wakes a waiting Accept.
func (l *ConnLimiter) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// release gives back the slot of c.
func (l *ConnLimiter) release(c *limitConn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c.closed = true
	l.idle.remove(c)
	l.open--
	if c.addr.IsValid() {
		if l.byAddr[c.addr]--; l.byAddr[c.addr] <= 0 {
			delete(l.byAddr, c.addr)
		}
	}
	l.wakeLocked()
}

// addrKey is what ConnLimits.PerAddr counts a peer as: its IP address
// (an IPv4-mapped IPv6 address as IPv4), or for IPv6 its /64 prefix. It is
// the zero netip.Addr for a peer that is not an IP address.
func addrKey(a net.Addr) netip.Addr {
	var ip netip.Addr
	switch a := a.(type) {
	case *net.TCPAddr:
		ip = a.AddrPort().Addr()
	case nil:
		return netip.Addr{}
	default:
		ap, err := netip.ParseAddrPort(a.String())
		if err != nil {
			return netip.Addr{}
		}
		ip = ap.Addr()
	}
	return clientPrefix(ip)
}

// clientPrefix maps an IP address to the address, or IPv6 /64 prefix, that
// per-address bounds count it as.
func clientPrefix(ip netip.Addr) netip.Addr {
	ip = ip.Unmap().WithZone("")
	if !ip.IsValid() || ip.Is4() {
		return ip
	}
	p, err := ip.Prefix(64)
	if err != nil {
		return netip.Addr{}
	}
	return p.Addr()
}

// limitConn returns its slot when it is first closed. Its list fields and
// closed are guarded by the limiter's mutex.
type limitConn struct {
	net.Conn
	l         *ConnLimiter
	addr      netip.Addr // its addrKey; invalid when not counted
	closeOnce sync.Once

	prev, next *limitConn // in l.idle
	idleSince  time.Time  // when it last went idle
	inIdle     bool
	closed     bool
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.closeOnce.Do(func() { c.l.release(c) })
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

// connList is an intrusive doubly linked list of connections, in the order
// they were added.
type connList struct{ head, tail *limitConn }

func (q *connList) front() *limitConn { return q.head }

func (q *connList) pushBack(c *limitConn) {
	c.prev, c.next, c.inIdle = q.tail, nil, true
	if q.tail != nil {
		q.tail.next = c
	} else {
		q.head = c
	}
	q.tail = c
}

// remove takes c out of the list; it does nothing when c is not in it.
func (q *connList) remove(c *limitConn) {
	if !c.inIdle {
		return
	}
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		q.head = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		q.tail = c.prev
	}
	c.prev, c.next, c.inIdle = nil, nil, false
}
