package postgres

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// answerRelay is the server's AnswerRelay interface, as the BRIEF declares
// it; the relay must satisfy it.
type answerRelay interface {
	Forward(ctx context.Context, node string, response []byte) error
	Receive(node string, fn func(response []byte)) (stop func(), err error)
}

var _ answerRelay = (*AnswerRelay)(nil)

// newRelay makes the relay of s, closed when the test ends.
func newRelay(t testing.TB, s *Store, opts AnswerRelayOptions) *AnswerRelay {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	r, err := NewAnswerRelay(ctxT(t), s, opts)
	if err != nil {
		t.Fatalf("NewAnswerRelay: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// receiveInto registers node on r and returns the channel its responses
// arrive on; the receiver stops when the test ends.
func receiveInto(t testing.TB, r *AnswerRelay, node string) <-chan []byte {
	t.Helper()
	ch := make(chan []byte, 64)
	stop, err := r.Receive(node, func(b []byte) { ch <- b })
	if err != nil {
		t.Fatalf("Receive(%q): %v", node, err)
	}
	t.Cleanup(stop)
	return ch
}

// answerRows counts the rows of the answers table.
func answerRows(t testing.TB, s *Store) int {
	t.Helper()
	var n int
	if err := s.pool.QueryRow(ctxT(t), `SELECT count(*) FROM `+s.q.ident+`.answers`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// response returns a JSON-RPC response of about n bytes whose result text
// repeats fill.
func response(n int, fill string) []byte {
	head := `{"jsonrpc":"2.0","id":"n1-7","result":{"action":"accept","content":{"text":"`
	tail := `"}}}`
	body := strings.Repeat(fill, max(n-len(head)-len(tail), 0)/len(fill))
	return []byte(head + body + tail)
}

// TestAnswerRelayAcrossNodes forwards responses of every shape from node A
// to node B (two stores, two pools, one schema) and back, and checks that
// each arrives byte for byte, once, and leaves no row behind.
func TestAnswerRelayAcrossNodes(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a, b := openStore(t, schema, nil), openStore(t, schema, nil)
	ra, rb := newRelay(t, a, AnswerRelayOptions{}), newRelay(t, b, AnswerRelayOptions{})
	onA, onB := receiveInto(t, ra, "node-a"), receiveInto(t, rb, "node-b")
	ctx := ctxT(t)

	limit := inlineMax - len("i node-b ")
	for _, tc := range []struct {
		name string
		body []byte
	}{
		{"small", []byte(`{"jsonrpc":"2.0","id":"n1-1","result":{"action":"decline"}}`)},
		{"empty", []byte{}},
		{"utf-8", response(200, "héllo wörld ✓ ")},
		{"at the inline limit", response(limit, "x")},
		{"one byte over", response(limit+1, "x")},
		{"NUL byte", []byte("{\"a\":\"\x00\"}")},
		{"invalid UTF-8", []byte("{\"a\":\"\xff\"}")},
		{"1 MiB", response(MaxAnswerSize, "0123456789abcdef")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := ra.Forward(ctx, "node-b", tc.body); err != nil {
				t.Fatalf("Forward A→B: %v", err)
			}
			if got := waitFor(t, onB, "the response on B"); !bytes.Equal(got, tc.body) {
				t.Fatalf("B received %.200q, want %.200q", got, tc.body)
			}
			if err := rb.Forward(ctx, "node-a", tc.body); err != nil {
				t.Fatalf("Forward B→A: %v", err)
			}
			if got := waitFor(t, onA, "the response on A"); !bytes.Equal(got, tc.body) {
				t.Fatalf("A received %d bytes, want %d", len(got), len(tc.body))
			}
			if n := answerRows(t, a); n != 0 {
				t.Fatalf("%d answer rows left after delivery", n)
			}
		})
	}
	// Nothing arrived twice.
	if len(onA)+len(onB) != 0 {
		t.Fatalf("%d responses delivered twice", len(onA)+len(onB))
	}
}

// TestAnswerRelayInlineDecision pins which responses travel inside the
// notification and which in a row.
func TestAnswerRelayInlineDecision(t *testing.T) {
	node := "n"
	room := inlineMax - len("i n ")
	for _, tc := range []struct {
		name   string
		body   []byte
		utf8DB bool
		want   bool
	}{
		{"ASCII", []byte(`{"a":1}`), false, true},
		{"ASCII at the limit", bytes.Repeat([]byte("x"), room), false, true},
		{"ASCII over the limit", bytes.Repeat([]byte("x"), room+1), true, false},
		{"UTF-8 in a UTF8 database", []byte(`{"a":"é"}`), true, true},
		{"UTF-8 in another encoding", []byte(`{"a":"é"}`), false, false},
		{"invalid UTF-8", []byte("{\"a\":\"\xc3\"}"), true, false},
		{"NUL", []byte("a\x00b"), true, false},
	} {
		r := &AnswerRelay{utf8: tc.utf8DB}
		payload, got := r.inline(node, tc.body)
		if got != tc.want {
			t.Errorf("%s: inline = %v, want %v", tc.name, got, tc.want)
		}
		if got && len(payload) > inlineMax {
			t.Errorf("%s: payload of %d bytes", tc.name, len(payload))
		}
	}
}

// TestAnswerRelayGoneNode forwards to a node nobody receives for: no
// error, nothing delivered elsewhere, and the rows of large responses are
// swept once their TTL has passed.
func TestAnswerRelayGoneNode(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	clk := newClock()
	a, b := openStore(t, schema, clk.Now), openStore(t, schema, clk.Now)
	ra := newRelay(t, a, AnswerRelayOptions{TTL: time.Minute})
	rb := newRelay(t, b, AnswerRelayOptions{TTL: time.Minute})
	onB := receiveInto(t, rb, "node-b")
	ctx := ctxT(t)
	large := response(100_000, "y")

	for _, body := range [][]byte{[]byte(`{"small":true}`), large} {
		if err := ra.Forward(ctx, "gone", body); err != nil {
			t.Fatalf("Forward to a gone node: %v", err)
		}
	}
	if n := answerRows(t, a); n != 1 {
		t.Fatalf("%d rows after a large forward to a gone node, want 1", n)
	}
	// A later forward to a live node is unaffected, and is the only
	// response B hears.
	if err := ra.Forward(ctx, "node-b", []byte(`"marker"`)); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, onB, "the marker"); string(got) != `"marker"` {
		t.Fatalf("B received %.100q", got)
	}

	// Within the TTL a large forward sweeps nothing; past it, the gone
	// node's row is swept and only the new one remains.
	clk.Advance(59 * time.Second)
	if err := ra.Forward(ctx, "gone", large); err != nil {
		t.Fatal(err)
	}
	if n := answerRows(t, a); n != 2 {
		t.Fatalf("%d rows within the TTL, want 2", n)
	}
	clk.Advance(2 * time.Second)
	if err := rb.Forward(ctx, "gone", large); err != nil {
		t.Fatal(err)
	}
	if n := answerRows(t, a); n != 2 {
		t.Fatalf("%d rows after the first row's TTL, want 2 (one swept, one new)", n)
	}

	// A row that expired before its node read it is deleted, not
	// delivered.
	if err := ra.Forward(ctx, "late", large); err != nil {
		t.Fatal(err)
	}
	clk.Advance(2 * time.Minute)
	onLate := receiveInto(t, rb, "late")
	rb.reconnected() // as after a reconnection: read the node's rows
	if err := ra.Forward(ctx, "late", []byte(`"after"`)); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, onLate, "the response after the expired row"); string(got) != `"after"` {
		t.Fatalf("the expired row was delivered (%d bytes)", len(got))
	}
}

// logRecorder is a slog handler that sends each record's message on a
// channel, without blocking.
type logRecorder struct{ msgs chan string }

func (h logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (h logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.Key + "=" + a.Value.String())
		return true
	})
	select {
	case h.msgs <- b.String():
	default:
	}
	return nil
}
func (h logRecorder) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h logRecorder) WithGroup(string) slog.Handler      { return h }

// TestAnswerRelayQueueFull blocks one receiver's function and checks that
// its queue holds QueueSize responses, drops the next with one warning
// (which does not carry the body), and that the listener meanwhile keeps
// delivering to another receiver.
func TestAnswerRelayQueueFull(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a, b := openStore(t, schema, nil), openStore(t, schema, nil)
	ra := newRelay(t, a, AnswerRelayOptions{})
	logs := logRecorder{msgs: make(chan string, 16)}
	rb := newRelay(t, b, AnswerRelayOptions{QueueSize: 2, Logger: slog.New(logs)})
	ctx := ctxT(t)

	got := make(chan string, 16)
	release := make(chan struct{})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	t.Cleanup(unblock) // before the receiver stops
	stop, err := rb.Receive("slow", func(b []byte) {
		got <- string(b)
		<-release
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	other := receiveInto(t, rb, "other")

	forward := func(node, body string) {
		t.Helper()
		if err := ra.Forward(ctx, node, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	forward("slow", `"1"`)
	if g := waitFor(t, got, "the first response"); g != `"1"` {
		t.Fatalf("got %s", g)
	}
	// fn holds "1"; "2" and "3" fill the queue; "4" and "5" are dropped.
	for _, body := range []string{`"2"`, `"3"`, `"4-secret"`, `"5-secret"`} {
		forward("slow", body)
	}
	forward("other", `"unblocked"`)
	if g := waitFor(t, other, "the other receiver"); string(g) != `"unblocked"` {
		t.Fatalf("other got %s", g)
	}
	warning := waitFor(t, logs.msgs, "the drop warning")
	if !strings.Contains(warning, "queue full") || strings.Contains(warning, "secret") {
		t.Fatalf("warning %q", warning)
	}

	unblock()
	delivered := []string{waitFor(t, got, "the first queued response")}
	forward("slow", `"6"`) // "2" left the queue: it has room again
	for len(delivered) < 3 {
		delivered = append(delivered, waitFor(t, got, "the queued responses"))
	}
	if diff := cmp.Diff([]string{`"2"`, `"3"`, `"6"`}, delivered); diff != "" {
		t.Fatalf("delivered after the drops (-want +got):\n%s", diff)
	}
	summary := waitFor(t, logs.msgs, "the drop count")
	if !strings.Contains(summary, "dropped=2") || strings.Contains(summary, "secret") {
		t.Fatalf("summary %q", summary)
	}
}

// TestAnswerRelayReconnect kills B's LISTEN session and forwards a large
// response while B is disconnected: B reads it after reconnecting, and
// later responses arrive through the new session.
func TestAnswerRelayReconnect(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openStore(t, schema, nil)
	var pid atomic.Uint32
	connected := make(chan uint32, 4)
	disconnected := make(chan struct{}, 4)
	resume := make(chan struct{})
	b := openWithHooks(t, Options{Schema: schema}, testHooks{
		connected: func(p uint32) { pid.Store(p); connected <- p },
		beforeReconnect: func() {
			select {
			case disconnected <- struct{}{}:
			default:
			}
			<-resume
		},
	})
	releaseB := sync.OnceFunc(func() { close(resume) })
	t.Cleanup(releaseB)
	first := waitFor(t, connected, "B's first LISTEN session")
	ra, rb := newRelay(t, a, AnswerRelayOptions{}), newRelay(t, b, AnswerRelayOptions{})
	onB := receiveInto(t, rb, "node-b")
	ctx := ctxT(t)

	if err := ra.Forward(ctx, "node-b", []byte(`"before"`)); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, onB, "the response before the outage"); string(got) != `"before"` {
		t.Fatalf("got %s", got)
	}
	var killed bool
	if err := a.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(first)).Scan(&killed); err != nil || !killed {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v", first, killed, err)
	}
	waitFor(t, disconnected, "B's listener to notice the outage")

	large := response(50_000, "z")
	if err := ra.Forward(ctx, "node-b", large); err != nil {
		t.Fatal(err)
	}
	releaseB()
	if p := waitFor(t, connected, "B's new LISTEN session"); p == first {
		t.Fatal("the listener kept its killed session")
	}
	if got := waitFor(t, onB, "the large response of the outage"); !bytes.Equal(got, large) {
		t.Fatalf("got %.100q", got)
	}
	if err := ra.Forward(ctx, "node-b", []byte(`"after"`)); err != nil {
		t.Fatal(err)
	}
	if got := waitFor(t, onB, "the response after the reconnection"); string(got) != `"after"` {
		t.Fatalf("got %.100q", got)
	}
	if n := answerRows(t, a); n != 0 {
		t.Fatalf("%d rows left", n)
	}
}

// TestAnswerRelayStop checks that a stopped receiver hears nothing more,
// and that its node may register again.
func TestAnswerRelayStop(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openStore(t, schema, nil)
	r := newRelay(t, a, AnswerRelayOptions{})
	ctx := ctxT(t)
	old := make(chan []byte, 8)
	stop, err := r.Receive("n", func(b []byte) { old <- b })
	if err != nil {
		t.Fatal(err)
	}
	stop()
	stop() // idempotent
	if err := r.Forward(ctx, "n", []byte(`"lost"`)); err != nil {
		t.Fatal(err)
	}
	again := receiveInto(t, r, "n")
	if err := r.Forward(ctx, "n", []byte(`"new"`)); err != nil {
		t.Fatal(err)
	}
	// The first forward may reach the new receiver (it may be delivered
	// after the new registration); the stopped one hears neither.
	for {
		got := string(waitFor(t, again, "the new receiver"))
		if got == `"new"` {
			break
		}
		if got != `"lost"` {
			t.Fatalf("got %s", got)
		}
	}
	if len(old) != 0 {
		t.Fatalf("the stopped receiver heard %d responses", len(old))
	}
}

// TestAnswerRelayValidation checks every refusal of the relay.
func TestAnswerRelayValidation(t *testing.T) {
	t.Parallel()
	schema := newSchema(t)
	a := openStore(t, schema, nil)
	ctx := ctxT(t)
	for _, opts := range []AnswerRelayOptions{{QueueSize: -1}, {QueueSize: maxAnswerQueue + 1},
		{TTL: -time.Second}, {TTL: 1500 * time.Microsecond}} {
		if _, err := NewAnswerRelay(ctx, a, opts); err == nil {
			t.Errorf("NewAnswerRelay(%+v) succeeded", opts)
		}
	}
	r := newRelay(t, a, AnswerRelayOptions{})
	if _, err := NewAnswerRelay(ctx, a, AnswerRelayOptions{}); !errors.Is(err, ErrRelayExists) {
		t.Errorf("second NewAnswerRelay: %v, want ErrRelayExists", err)
	}

	for _, node := range []string{"", strings.Repeat("n", MaxNodeIDLen+1), "a b", "a\nb", "nöde", "a\x00", "a\x7f"} {
		if err := r.Forward(ctx, node, []byte(`{}`)); !errors.Is(err, ErrBadNodeID) {
			t.Errorf("Forward(%q): %v, want ErrBadNodeID", node, err)
		}
		if _, err := r.Receive(node, func([]byte) {}); !errors.Is(err, ErrBadNodeID) {
			t.Errorf("Receive(%q): %v, want ErrBadNodeID", node, err)
		}
	}
	if err := r.Forward(ctx, "n", make([]byte, MaxAnswerSize+1)); !errors.Is(err, ErrAnswerTooLarge) {
		t.Errorf("Forward of 1 MiB + 1: %v, want ErrAnswerTooLarge", err)
	}
	longest := strings.Repeat("~", MaxNodeIDLen)
	receiveInto(t, r, longest)
	if _, err := r.Receive(longest, func([]byte) {}); !errors.Is(err, ErrNodeReceiving) {
		t.Errorf("second Receive: %v, want ErrNodeReceiving", err)
	}
	if _, err := r.Receive("x", nil); err == nil {
		t.Error("Receive with a nil function succeeded")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.Forward(cctx, "n", []byte(`{}`)); err == nil {
		t.Error("Forward with an ended context succeeded")
	}

	r.Close()
	if _, err := r.Receive("y", func([]byte) {}); err == nil {
		t.Error("Receive after Close succeeded")
	}
	newRelay(t, a, AnswerRelayOptions{}) // the store takes a new relay after Close
}

func TestParseAnswer(t *testing.T) {
	for _, tc := range []struct {
		in   string
		ok   bool
		want answer
	}{
		{`i n1 {"a":1}`, true, answer{node: "n1", body: []byte(`{"a":1}`)}},
		{`i n1 a b c`, true, answer{node: "n1", body: []byte(`a b c`)}},
		{`i n1 `, true, answer{node: "n1", body: []byte{}}},
		{`r n1 42`, true, answer{node: "n1", row: 42}},
		{`r n1 0`, false, answer{}},
		{`r n1 -3`, false, answer{}},
		{`r n1 x`, false, answer{}},
		{`r n1 42 `, false, answer{}},
		{`i n1`, false, answer{}},
		{`x n1 42`, false, answer{}},
		{`in1 42`, false, answer{}},
		{`i  body`, false, answer{}},
		{``, false, answer{}},
	} {
		got, ok := parseAnswer(tc.in)
		if ok != tc.ok {
			t.Errorf("parseAnswer(%q) ok = %v", tc.in, ok)
			continue
		}
		if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(answer{})); diff != "" {
			t.Errorf("parseAnswer(%q) (-want +got):\n%s", tc.in, diff)
		}
	}
}

// FuzzParseAnswer checks that any payload parses without panicking and
// that what parses names a valid node.
func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{`i n1 {}`, `r n1 42`, `i  x`, `r n 9999999999999999999`, ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		a, ok := parseAnswer(p)
		if ok && !validNode(a.node) {
			t.Fatalf("%q parsed with node %q", p, a.node)
		}
	})
}
