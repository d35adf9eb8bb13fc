package stdioframe

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReadLines: lines lose their newline and a trailing CR, empty lines
// are skipped, a line over the bound is reported as nil however it is cut
// by reads, and a last line without newline counts.
func TestReadLines(t *testing.T) {
	long := strings.Repeat("x", 70<<10) // longer than the reader's buffer
	for _, tc := range []struct {
		name string
		in   string
		max  int64
		want []string // "<nil>" marks a line over max
	}{
		{"plain", "a\nbb\n", 10, []string{"a", "bb"}},
		{"crlf", "a\r\nb\r\n", 10, []string{"a", "b"}},
		{"empty lines", "\n\na\n\r\n\nb\n", 10, []string{"a", "b"}},
		{"no final newline", "a\nb", 10, []string{"a", "b"}},
		{"at the bound", "abc\n", 3, []string{"abc"}},
		{"over the bound", "abcd\nok\n", 3, []string{"<nil>", "ok"}},
		{"over the bound at EOF", "ok\nabcd", 3, []string{"ok", "<nil>"}},
		{"long line over the bound", long + "\nok\n", 1 << 10, []string{"<nil>", "ok"}},
		{"long line within the bound", long + "\n", 1 << 20, []string{long}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lines := make(chan []byte)
			errc := make(chan error, 1)
			go func() { errc <- ReadLines(iotestOneByteAtEnd(tc.in), tc.max, lines, nil); close(lines) }()
			var got []string
			for l := range lines {
				if l == nil {
					got = append(got, "<nil>")
				} else {
					got = append(got, string(l))
				}
			}
			if err := <-errc; err != nil {
				t.Fatalf("ReadLines = %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

// iotestOneByteAtEnd is a reader of s whose last read returns one byte,
// so that a line's end and EOF arrive apart.
func iotestOneByteAtEnd(s string) io.Reader {
	if len(s) < 2 {
		return strings.NewReader(s)
	}
	return io.MultiReader(strings.NewReader(s[:len(s)-1]), strings.NewReader(s[len(s)-1:]))
}

// TestReadLinesStops: once stop is closed, ReadLines returns
// context.Canceled instead of waiting for its line to be taken.
func TestReadLinesStops(t *testing.T) {
	stop := make(chan struct{})
	close(stop)
	if err := ReadLines(strings.NewReader("a\n"), 10, make(chan []byte), stop); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadLines = %v, want context.Canceled", err)
	}
}

// TestWriterWritesInOrder: every message is written whole, with its
// newline, in the order it was queued, and Close flushes them.
func TestWriterWritesInOrder(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(&out, 2)
	for _, m := range []string{"a", `{"b":1}`, "c"} {
		if err := w.Send(context.Background(), []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(time.Minute); err != nil {
		t.Fatalf("Close = %v", err)
	}
	if diff := cmp.Diff("a\n{\"b\":1}\nc\n", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
	if err := w.Send(context.Background(), []byte("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after Close = %v, want ErrClosed", err)
	}
}

// failingOutput fails every write.
type failingOutput struct{}

func (failingOutput) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

// TestWriterFails: a failed write closes Failed, makes Send fail and is
// Close's error.
func TestWriterFails(t *testing.T) {
	w := NewWriter(failingOutput{}, 1)
	if err := w.Send(context.Background(), []byte("a")); err != nil {
		t.Fatal(err)
	}
	<-w.Failed()
	if err := w.Send(context.Background(), []byte("b")); !errors.Is(err, ErrClosed) {
		t.Errorf("Send after a failed write = %v, want ErrClosed", err)
	}
	if err := w.Close(time.Minute); err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Errorf("Close = %v, want the write error", err)
	}
}

// TestWriterCloseGivesUp: an output that takes nothing (a client that
// stopped reading) makes Close return ErrFlushTimeout after its timeout;
// the writer's goroutine ends when the pending write returns.
func TestWriterCloseGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pr, pw := io.Pipe()
		w := NewWriter(pw, 1)
		if err := w.Send(context.Background(), []byte("stuck")); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := w.Close(3 * time.Second); !errors.Is(err, ErrFlushTimeout) {
			t.Errorf("Close = %v, want ErrFlushTimeout", err)
		}
		if d := time.Since(start); d != 3*time.Second {
			t.Errorf("Close took %v, want 3s", d)
		}
		pr.Close() // the pending write returns
		synctest.Wait()
	})
}
