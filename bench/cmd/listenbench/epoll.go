//go:build linux

package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// The epoll reader (-reader epoll) reads every HTTP/1.1 listen stream of a
// run from one goroutine: raw sockets outside Go's network poller, one
// epoll_wait for all of them, and a small parser of the chunked SSE body.
// It measures the same arrivals as the default reader (one goroutine per
// stream) with less of the harness's CPU, which shares the machine's cores
// with the server: a reading client on another machine costs the server's
// machine nothing.

// epollReader owns the raw streams of a run and the goroutine that reads
// them; it ends when stop is called.
type epollReader struct {
	epfd    int
	mu      sync.Mutex
	streams map[int32]*rawStream
	stopped chan struct{}
	ended   chan struct{}
}

func newEpollReader() (*epollReader, error) {
	fd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	e := &epollReader{epfd: fd, streams: map[int32]*rawStream{}, stopped: make(chan struct{}), ended: make(chan struct{})}
	go e.loop()
	return e, nil
}

// stop ends the reading goroutine and closes every stream still open.
func (e *epollReader) stop() {
	close(e.stopped)
	<-e.ended
	e.mu.Lock()
	for _, s := range e.streams {
		s.end()
	}
	e.mu.Unlock()
	syscall.Close(e.epfd)
}

func (e *epollReader) loop() {
	defer close(e.ended)
	events := make([]syscall.EpollEvent, 256)
	buf := make([]byte, 64<<10)
	for {
		select {
		case <-e.stopped:
			return
		default:
		}
		n, err := syscall.EpollWait(e.epfd, events, 100)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return
		}
		for _, ev := range events[:max(n, 0)] {
			e.mu.Lock()
			s := e.streams[ev.Fd]
			e.mu.Unlock()
			if s == nil {
				continue
			}
			for {
				m, err := syscall.Read(s.fd, buf)
				if m > 0 {
					s.feed(buf[:m], time.Now())
					continue
				}
				if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
					break
				}
				// EOF or a failure: the stream is over.
				if err != nil && !s.l.ended() {
					s.l.problem("stream broke: %v", err)
				}
				e.mu.Lock()
				delete(e.streams, ev.Fd)
				e.mu.Unlock()
				syscall.EpollCtl(e.epfd, syscall.EPOLL_CTL_DEL, s.fd, nil)
				s.end()
				break
			}
		}
	}
}

// rawStream is one listen's socket and the state of its body's parser.
type rawStream struct {
	fd      int
	l       *listener
	once    sync.Once
	head    []byte // response headers not yet complete
	inBody  bool
	chunk   int    // bytes of the current chunk's data still to come
	skip    int    // bytes of the CRLF after a chunk's data still to skip
	size    []byte // the current chunk-size line, while incomplete
	line    []byte // the current SSE line, while incomplete
	first   bool   // the acknowledgement has been seen
	acked   chan error
	lastErr error
}

func (s *rawStream) end() {
	s.once.Do(func() {
		syscall.Close(s.fd)
		close(s.l.done)
	})
}

// Close disconnects the client; the reader then sees the stream end.
func (s *rawStream) Close() error { return syscall.Shutdown(s.fd, syscall.SHUT_RDWR) }

// feed parses bytes that arrived at at.
func (s *rawStream) feed(b []byte, at time.Time) {
	if !s.inBody {
		s.head = append(s.head, b...)
		i := bytes.Index(s.head, []byte("\r\n\r\n"))
		if i < 0 {
			return
		}
		head := string(s.head[:i])
		b, s.head, s.inBody = s.head[i+4:], nil, true
		if !bytes.HasPrefix([]byte(head), []byte("HTTP/1.1 200 ")) || !bytes.Contains(bytes.ToLower([]byte(head)), []byte("transfer-encoding: chunked")) {
			s.fail(fmt.Errorf("response %.200q", head))
			return
		}
	}
	for len(b) > 0 {
		switch {
		case s.skip > 0:
			n := min(s.skip, len(b))
			s.skip -= n
			b = b[n:]
		case s.chunk > 0:
			n := min(s.chunk, len(b))
			s.body(b[:n], at)
			s.chunk -= n
			b = b[n:]
			if s.chunk == 0 {
				s.skip = 2
			}
		default:
			i := bytes.IndexByte(b, '\n')
			if i < 0 {
				s.size = append(s.size, b...)
				return
			}
			s.size = append(s.size, b[:i]...)
			b = b[i+1:]
			hex, _, _ := bytes.Cut(bytes.TrimRight(s.size, "\r"), []byte(";"))
			s.size = s.size[:0]
			n, err := strconv.ParseInt(string(hex), 16, 32)
			if err != nil || n < 0 {
				s.fail(fmt.Errorf("bad chunk size %q", hex))
				return
			}
			if n == 0 { // the last chunk: the rest is the trailer
				s.skip = 1 << 30
				continue
			}
			s.chunk = int(n)
		}
	}
}

// body splits chunk data into SSE lines and records each data line.
func (s *rawStream) body(b []byte, at time.Time) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			s.line = append(s.line, b...)
			return
		}
		line := b[:i]
		if len(s.line) > 0 {
			line = append(s.line, line...)
			s.line = nil
		}
		b = b[i+1:]
		data, ok := bytes.CutPrefix(line, []byte("data: "))
		if !ok {
			continue
		}
		if !s.first {
			s.first = true
			s.acked <- checkAck(data, len(s.l.ids))
			continue
		}
		s.l.record(bytes.Clone(data), at)
	}
}

func (s *rawStream) fail(err error) {
	if !s.first {
		s.first = true
		s.acked <- err
		return
	}
	s.l.problem("%v", err)
}

// openRaw opens client's listen for ids on a raw socket, waits for the
// acknowledgement, and hands the stream to e.
func (e *epollReader) openRaw(addr string, rpcID, client int, ids []string) (*listener, error) {
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return nil, err
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	sa := &syscall.SockaddrInet4{Port: tcp.Port}
	copy(sa.Addr[:], tcp.IP.To4())
	if err := syscall.Connect(fd, sa); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	body := listenBody(rpcID, ids)
	req := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"+
		"MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: subscriptions/listen\r\nAuthorization: Bearer %s\r\nContent-Length: %d\r\n\r\n%s",
		addr, tenant(client), len(body), body)
	for b := []byte(req); len(b) > 0; {
		n, err := syscall.Write(fd, b)
		if err != nil {
			syscall.Close(fd)
			return nil, err
		}
		b = b[n:]
	}
	l := &listener{client: client, ids: ids, done: make(chan struct{}), arrivals: map[string]time.Time{}}
	s := &rawStream{fd: fd, l: l, acked: make(chan error, 1)}
	l.body = s
	// Blocking reads until the acknowledgement; bytes after it stay in
	// the parser.
	tv := syscall.NsecToTimeval(int64(30 * time.Second))
	syscall.SetsockoptTimeval(fd, syscall.SOL_SOCKET, syscall.SO_RCVTIMEO, &tv)
	buf := make([]byte, 4096)
	for !s.first {
		n, err := syscall.Read(fd, buf)
		if n <= 0 {
			syscall.Close(fd)
			return nil, fmt.Errorf("listen of client %d: no acknowledgement: %v", client, err)
		}
		s.feed(buf[:n], time.Now())
	}
	if err := <-s.acked; err != nil {
		syscall.Close(fd)
		return nil, fmt.Errorf("listen of client %d: %w", client, err)
	}
	if err := syscall.SetNonblock(fd, true); err != nil {
		syscall.Close(fd)
		return nil, err
	}
	e.mu.Lock()
	e.streams[int32(fd)] = s
	e.mu.Unlock()
	ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(fd)}
	if err := syscall.EpollCtl(e.epfd, syscall.EPOLL_CTL_ADD, fd, &ev); err != nil {
		e.mu.Lock()
		delete(e.streams, int32(fd))
		e.mu.Unlock()
		syscall.Close(fd)
		return nil, err
	}
	return l, nil
}
