package server

import (
	"bytes"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// White-box tests of the fan-out's delivery (deliver, deliverAll) on real
// loopback TCP connections.

// directSub returns a subscription that accepts t1, whose stream is taken
// over on a loopback TCP connection, and the client's end of it.
func directSub(t *testing.T) (*subscription, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return directSubOn(t, ln)
}

// directSubOn is directSub on a connection accepted from ln.
func directSubOn(t *testing.T, ln net.Listener) (*subscription, net.Conn) {
	t.Helper()
	defer ln.Close()
	client, err := net.Dial(ln.Addr().Network(), ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		client.Close()
		conn.Close()
	})
	st := &responseStream{sse: true, writeTimeout: time.Minute}
	st.takeOverLocked(conn)
	if st.raw == nil {
		t.Fatal("the connection has no descriptor")
	}
	s := newTestSubscription("a")
	s.c = &call{srv: &Server{opts: Options{now: time.Now}}, stream: st}
	s.rpcID = "7"
	s.until = time.Now().Add(time.Hour)
	s.accept(map[string]bool{"t1": true})
	return s, client
}

// doneFlight returns a returned, successful flight of t1.
func doneFlight(prefix string, terminal bool) *flight {
	f := &flight{done: make(chan struct{}), ok: true, updated: "2026-12-01T12:00:00Z", terminal: terminal,
		prefix: prefix, suffix: `}}`}
	close(f.done)
	return f
}

const testPrefix = `{"taskId":"t1","status":"working","_meta":{"io.modelcontextprotocol/subscriptionId":`

// frameOf is the chunk a stream writes for a notifications/tasks of
// params prefix, id, suffix.
func frameOf(prefix, id, suffix string) string {
	var ev []byte
	ev = append(ev, sseData...)
	ev = append(ev, taskNotificationStart...)
	ev = append(ev, prefix+id+suffix+"}"...)
	ev = append(ev, sseEventEnd...)
	return string(appendChunk(nil, ev))
}

// written closes the server's end of s's stream and returns every byte
// the client received.
func written(t *testing.T, s *subscription, client net.Conn) string {
	t.Helper()
	s.c.stream.conn.Close()
	client.SetReadDeadline(time.Now().Add(time.Minute))
	b, err := io.ReadAll(client)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestDeliver: the fan-out writes a listen's stream only when it can do
// all of project's work at once, with project's rules; otherwise the hint
// goes to the listen's queue and the listen is woken, or, when project
// would drop it, it is dropped.
func TestDeliver(t *testing.T) {
	frame := frameOf(testPrefix, "7", `}}`)
	type want struct {
		Written  string
		Terminal bool     // deliver's result
		Queued   []string // s's queue afterwards
		Woken    bool
	}
	tests := []struct {
		name     string
		terminal bool
		setup    func(s *subscription, f *flight) (undo func())
		want     want
	}{
		{name: "writes", want: want{Written: frame}},
		{name: "terminal", terminal: true, want: want{Written: frame, Terminal: true}},
		{name: "takes a queued copy along", setup: func(s *subscription, _ *flight) func() {
			s.record("t1")
			return nil
		}, want: want{Written: frame}},
		{name: "own lookup returned", setup: func(s *subscription, _ *flight) func() {
			s.inFlight = make(chan struct{})
			close(s.inFlight)
			return nil
		}, want: want{Written: frame}},
		{name: "write deadline of an earlier write passed", setup: func(s *subscription, _ *flight) func() {
			past := time.Now().Add(-time.Second)
			s.c.stream.conn.SetWriteDeadline(past)
			s.c.stream.deadline = past.UnixNano()
			return nil
		}, want: want{Written: frame}},
		{name: "listen projecting or renewing", setup: func(s *subscription, _ *flight) func() {
			s.pmu.Lock()
			return s.pmu.Unlock
		}, want: want{Queued: []string{"t1"}, Woken: true}},
		{name: "stream busy", setup: func(s *subscription, _ *flight) func() {
			s.c.stream.mu.Lock()
			return s.c.stream.mu.Unlock
		}, want: want{Queued: []string{"t1"}, Woken: true}},
		{name: "a tail pending", setup: func(s *subscription, _ *flight) func() {
			s.c.stream.pending = []byte("tail")
			return nil
		}, want: want{Queued: []string{"t1"}, Woken: true}},
		{name: "own lookup stuck", setup: func(s *subscription, _ *flight) func() {
			s.inFlight = make(chan struct{})
			return nil
		}, want: want{Queued: []string{"t1"}, Woken: true}},
		{name: "grant ended", setup: func(s *subscription, _ *flight) func() {
			s.until = time.Now().Add(-time.Second)
			return nil
		}, want: want{Queued: []string{"t1"}, Woken: true}},
		{name: "superseded by a later hint", setup: func(s *subscription, f *flight) func() {
			s.record("t1")
			f.superseded.Store(true)
			return nil
		}, want: want{}},
		{name: "not accepted", setup: func(s *subscription, _ *flight) func() {
			s.accept(map[string]bool{"t2": true})
			return nil
		}, want: want{}},
		{name: "suppressed for the view", setup: func(_ *subscription, f *flight) func() {
			f.ok = false
			return nil
		}, want: want{}},
		{name: "lookup failed", setup: func(_ *subscription, f *flight) func() {
			f.ok, f.failed = false, true // the listen retries it
			return nil
		}, want: want{Queued: []string{"t1"}, Woken: true}},
		{name: "duplicate", setup: func(s *subscription, f *flight) func() {
			s.last["t1"] = sentState{updated: f.updated, prefix: f.prefix, id: "7", suffix: f.suffix}
			return nil
		}, want: want{}},
		{name: "stale", setup: func(s *subscription, f *flight) func() {
			s.last["t1"] = sentState{updated: "2026-12-01T12:00:01Z", prefix: "{}", id: "7"}
			return nil
		}, want: want{}},
		{name: "already terminal", setup: func(s *subscription, _ *flight) func() {
			s.terminal["t1"] = true
			return nil
		}, want: want{}},
		{name: "stream finished", setup: func(s *subscription, _ *flight) func() {
			s.c.stream.finished = true
			return nil
		}, want: want{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, client := directSub(t)
			f := doneFlight(testPrefix, tt.terminal)
			var undo func()
			if tt.setup != nil {
				undo = tt.setup(s, f)
			}
			terminal := s.deliver(f, "t1")
			if undo != nil {
				undo()
			}
			got := want{Terminal: terminal, Queued: drain(s), Woken: len(s.wake) == 1}
			got.Written = written(t, s, client)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			sent, ok := s.last["t1"]
			switch {
			case tt.want.Written != "" && !tt.terminal && (!ok || sent.body() != testPrefix+"7}}"):
				t.Errorf("sent state %+v not recorded", sent)
			case tt.want.Written != "" && tt.terminal && (ok || !s.terminal["t1"]):
				t.Errorf("terminal task still followed: last %+v, terminal %v", s.last, s.terminal)
			case tt.name == "own lookup returned" && s.inFlight != nil:
				t.Error("the returned lookup is still held")
			}
		})
	}
}

// TestDeliverPartialWrite: a frame the socket takes only in part is not
// waited for: its tail is kept, the listen is woken to write it under the
// write deadline, and nothing else is written before it. (On a Unix
// socket, whose writer resumes as soon as the reader reads: a loopback TCP
// connection filled this way can crawl on zero-window probes.)
func TestDeliverPartialWrite(t *testing.T) {
	ln, err := net.Listen("unix", t.TempDir()+"/s")
	if err != nil {
		t.Skipf("no Unix socket: %v", err)
	}
	s, client := directSubOn(t, ln)
	st := s.c.stream
	if uc, ok := st.conn.(*net.UnixConn); ok {
		uc.SetWriteBuffer(4 << 10)
	}
	// Larger than what the connection can hold unread.
	big := testPrefix[:len(testPrefix)-len(`,"_meta":{"io.modelcontextprotocol/subscriptionId":`)] +
		`,"pad":"` + strings.Repeat("x", 4<<20) + `","_meta":{"io.modelcontextprotocol/subscriptionId":`
	f := doneFlight(big, false)
	if s.deliver(f, "t1") {
		t.Fatal("reported terminal")
	}
	if len(st.pending) == 0 || len(s.wake) != 1 || len(s.queue) != 0 {
		t.Fatalf("pending %d bytes, %d wake-ups, queue %q", len(st.pending), len(s.wake), s.queue)
	}
	// While the tail is pending, the next hint goes to the listen.
	if s.deliver(doneFlight(testPrefix, true), "t1"); !slicesEqual(s.queue, []string{"t1"}) {
		t.Fatalf("queue %q while a tail is pending", s.queue)
	}
	got := make(chan []byte, 1)
	go func() { // ends when the server's end is closed
		b, _ := io.ReadAll(client)
		got <- b
	}()
	if err := st.flushPending(); err != nil {
		t.Fatal(err)
	}
	st.conn.Close()
	if b := <-got; !bytes.Equal(b, []byte(frameOf(big, "7", `}}`))) {
		t.Errorf("received %d bytes, want the frame's %d", len(b), len(frameOf(big, "7", `}}`)))
	}
	if st.pending != nil {
		t.Error("the tail is still pending")
	}
}

func slicesEqual(a, b []string) bool { return cmp.Equal(a, b) }

// TestDeliverAll: a fan-out writes every listen of its group (in chunks,
// with helpers) and stops following the task for those that reached its
// terminal state; a flight that has not returned (its deadline passed, or
// the server is closing) hands every listen its hint instead, and so does
// a hint after the registry closed.
func TestDeliverAll(t *testing.T) {
	if testing.Short() {
		t.Skip("opens hundreds of loopback connections")
	}
	var lim syscall.Rlimit
	if syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim) == nil && lim.Cur < 1024 {
		t.Skipf("RLIMIT_NOFILE %d", lim.Cur)
	}
	r := newRegistry(1000, 1000)
	const n = 3*fanOutChunk + 5
	group := make([]*subscription, n)
	clients := make([]net.Conn, n)
	for i := range group {
		group[i], clients[i] = directSub(t)
		r.watch(group[i], []string{"t1"})
	}
	r.deliverAll(doneFlight(testPrefix, true), "t1", group)
	frame := frameOf(testPrefix, "7", `}}`)
	for i, s := range group {
		if got := written(t, s, clients[i]); got != frame {
			t.Fatalf("listen %d received %q", i, got)
		}
		if s.watching["t1"] {
			t.Fatalf("listen %d still follows the terminal task", i)
		}
	}
	if len(r.byTask) != 0 {
		t.Errorf("%d tasks still followed", len(r.byTask))
	}

	// A flight that has not returned.
	s, client := directSub(t)
	stuck := &flight{done: make(chan struct{})}
	r.deliverAll(stuck, "t1", []*subscription{s})
	if q := drain(s); !slicesEqual(q, []string{"t1"}) || len(s.wake) != 1 {
		t.Errorf("queue %q, %d wake-ups", q, len(s.wake))
	}
	if got := written(t, s, client); got != "" {
		t.Errorf("written %q", got)
	}

	// Once the registry is closed, a hint goes to the listens' queues, and
	// Server.Close's wait for fan-outs returns.
	s, _ = directSub(t)
	r.close()
	r.fanOut("t1", "v", []*subscription{s})
	if q := drain(s); !slicesEqual(q, []string{"t1"}) || len(s.wake) != 1 {
		t.Errorf("after close: queue %q, %d wake-ups", q, len(s.wake))
	}
	r.waitDetached()
}
