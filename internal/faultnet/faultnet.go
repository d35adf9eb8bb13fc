// Package faultnet is a loopback TCP proxy for tests that need a network
// that misbehaves: it forwards connections to a target until told to
// freeze (connections stay open, bytes stop moving, as in a partition
// that drops packets silently) or to drop every connection (as when a
// server or a middlebox resets them).
package faultnet

import (
	"net"
	"sync"
)

// Proxy forwards TCP connections from a loopback port to a target. Its
// methods are safe for concurrent use. Close it when done.
type Proxy struct {
	ln     net.Listener
	target string

	mu     sync.Mutex
	frozen chan struct{} // non-nil while frozen; closed by Unfreeze
	conns  map[net.Conn]struct{}
	closed bool

	wg sync.WaitGroup // the accept loop and every copier
}

// Listen starts a proxy on 127.0.0.1 (a free port) to target (host:port).
func Listen(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Freeze stops forwarding bytes in both directions, on current and new
// connections, while keeping them open. Data read meanwhile is delivered
// after Unfreeze.
func (p *Proxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen == nil {
		p.frozen = make(chan struct{})
	}
}

// Unfreeze resumes forwarding.
func (p *Proxy) Unfreeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.frozen != nil {
		close(p.frozen)
		p.frozen = nil
	}
}

// Drop closes every current connection, both sides; new connections are
// forwarded as before.
func (p *Proxy) Drop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for c := range p.conns {
		c.Close()
	}
}

// Close stops accepting, closes every connection and waits for the
// proxy's goroutines to end.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.Unfreeze()
	p.Drop()
	p.wg.Wait()
	return err
}

// accept forwards each accepted connection until the listener closes.
func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		t, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		if !p.track(c, t) {
			return
		}
		p.wg.Go(func() { p.copy(t, c) })
		p.wg.Go(func() { p.copy(c, t) })
	}
}

// track registers a connection pair; it closes them and reports false
// once the proxy is closed.
func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// copy forwards src to dst, holding each chunk while frozen, until either
// side fails; then it closes both.
func (p *Proxy) copy(dst, src net.Conn) {
	defer func() {
		dst.Close()
		src.Close()
		p.mu.Lock()
		delete(p.conns, dst)
		delete(p.conns, src)
		p.mu.Unlock()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.wait()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return // EOF or a closed connection: both sides end
		}
	}
}

// wait returns when the proxy is not frozen.
func (p *Proxy) wait() {
	p.mu.Lock()
	ch := p.frozen
	p.mu.Unlock()
	if ch != nil {
		<-ch
	}
}
