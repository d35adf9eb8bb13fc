package console_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// openStream opens the live-update stream at path with header and returns
// its reader, after the "connected" preamble; status is the response's
// when it is not 200.
func (f *fixture) openStream(ctx context.Context, path string, header map[string]string) (*bufio.Reader, int) {
	f.t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		f.t.Errorf("Content-Type %q", ct)
	}
	br := bufio.NewReader(resp.Body)
	if got := readEvent(f.t, br); !strings.Contains(got, ": connected") {
		f.t.Fatalf("preamble %q", got)
	}
	return br, http.StatusOK
}

// readEvent reads one event (up to a blank line); "" at the end of the
// stream.
func readEvent(t *testing.T, br *bufio.Reader) string {
	t.Helper()
	var ev strings.Builder
	for {
		line, err := br.ReadString('\n')
		ev.WriteString(line)
		if errors.Is(err, io.EOF) || (err != nil && ev.Len() == 0) {
			return ev.String()
		}
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		if line == "\n" {
			return ev.String()
		}
	}
}

func TestEvents(t *testing.T) {
	f := newFixture(t, fixtureOpts{coalesce: time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	all, _ := f.openStream(ctx, "/console/events", bearer)
	one, _ := f.openStream(ctx, "/console/events?task="+f.cancelling, bearer)
	if err := f.st.Operator().Cancel(ctx, f.working); err != nil {
		t.Fatal(err)
	}
	if got := readEvent(t, all); got != "event: change\ndata: 1\n\n" {
		t.Errorf("stream of all tasks: %q", got)
	}
	// The task stream heard nothing of the other task: its next event is
	// its own task's.
	if err := f.st.Operator().Cancel(ctx, f.cancelling); err != nil {
		t.Fatal(err)
	}
	if got := readEvent(t, one); got != "event: change\ndata: 1\n\n" {
		t.Errorf("stream of one task: %q", got)
	}
	// Close ends every stream.
	f.c.Close()
	for _, br := range []*bufio.Reader{all, one} {
		for {
			ev := readEvent(t, br)
			if ev == "" {
				break
			}
			if !strings.HasPrefix(ev, "event: change") {
				t.Errorf("after Close: %q", ev)
			}
		}
	}
	if _, status := f.openStream(ctx, "/console/events", bearer); status != http.StatusServiceUnavailable {
		t.Errorf("a stream after Close: %d, want 503", status)
	}
}

func TestEventStreamBounds(t *testing.T) {
	f := newFixture(t, fixtureOpts{maxStreams: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, status := f.openStream(ctx, "/console/events", nil); status != http.StatusUnauthorized {
		t.Errorf("stream without a credential: %d, want 401", status)
	}
	cookie := f.login()
	first, _ := f.openStream(ctx, "/console/events", map[string]string{"Cookie": cookie})
	if _, status := f.openStream(ctx, "/console/events", bearer); status != http.StatusServiceUnavailable {
		t.Errorf("a stream beyond MaxStreams: %d, want 503", status)
	}
	// A second stream of the same session replaces the first.
	second, status := f.openStream(ctx, "/console/events", map[string]string{"Cookie": cookie})
	if status != http.StatusOK {
		t.Fatalf("second stream of the session: %d", status)
	}
	if ev := readEvent(t, first); ev != "" {
		t.Errorf("the replaced stream went on: %q", ev)
	}
	if err := f.st.Operator().Cancel(ctx, f.working); err != nil {
		t.Fatal(err)
	}
	if got := readEvent(t, second); got != "event: change\ndata: 1\n\n" {
		t.Errorf("second stream: %q", got)
	}
}

// TestEventsCoalesce checks that hints arriving while a stream holds its
// last event back are merged: with a coalescing interval longer than the
// test, many changes after the first send nothing more before Close.
func TestEventsCoalesce(t *testing.T) {
	f := newFixture(t, fixtureOpts{coalesce: time.Hour})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	br, _ := f.openStream(ctx, "/console/events", bearer)
	if err := f.st.Operator().Cancel(ctx, f.working); err != nil {
		t.Fatal(err)
	}
	if got := readEvent(t, br); got != "event: change\ndata: 1\n\n" {
		t.Fatalf("first event: %q", got)
	}
	for range 5 {
		f.enqueue("bulk", "tenant-c", `{}`) // each publishes a hint
	}
	f.c.Close()
	if ev := readEvent(t, br); ev != "" {
		t.Errorf("held hints were sent: %q", ev)
	}
}
