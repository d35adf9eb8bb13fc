package server_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/taskwire/taskwire/server"
)

// stuckOutput is the output of a client that stopped reading: Write never
// returns until the test ends. entered is closed at the first Write.
type stuckOutput struct {
	entered chan struct{}
	release chan struct{}
}

func (w *stuckOutput) Write(p []byte) (int, error) {
	select {
	case <-w.entered:
	default:
		close(w.entered)
	}
	<-w.release
	return 0, io.ErrClosedPipe
}

// TestStdioShutdownWithStuckOutput stops ServeStdio, by the end of its
// ctx or of its input, while the output takes nothing: the reading
// goroutine waiting for room in the queue, requests waiting to send and
// the final flush all give up, and ServeStdio returns within twice
// DrainTimeout (virtual time) reporting the unflushed output.
func TestStdioShutdownWithStuckOutput(t *testing.T) {
	const drain = 100 * time.Millisecond
	discover := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	tests := []struct {
		name string
		line string // repeated on the input
		// lines is how many times; 0: until ServeStdio stops reading.
		lines int
		// eof ends the input after the lines; otherwise ctx ends once
		// everything is blocked.
		eof bool
		// notify is how many list changes the server announces to the
		// session once the output is stuck.
		notify int
	}{
		// Each line is answered -32700 by the reading goroutine itself.
		{name: "ctx ends, reader waits for the queue", line: "not json"},
		// The sixth error finds the writer stuck and the queue (4) full;
		// the input then ends.
		{name: "EOF, reader waits for the queue", line: "not json", lines: 6, eof: true},
		// Requests wait to send; the reader waits for more input.
		{name: "ctx ends, requests wait to send", line: discover, lines: 12},
		{name: "EOF, requests wait to send", line: discover, lines: 12, eof: true},
		// The session's notifications wait to be sent when it closes.
		{name: "EOF, session notifications wait to send", line: initialize, lines: 1, eof: true, notify: 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newLegacyCatalog(t, nil)
				inR, inW := io.Pipe()
				out := &stuckOutput{entered: make(chan struct{}), release: make(chan struct{})}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					done <- srv.ServeStdio(ctx, inR, out, server.StdioOptions{DrainTimeout: drain, WriteQueue: 4})
				}()
				go func() { // ends when it is done or the input is closed
					for i := 0; tt.lines == 0 || i < tt.lines; i++ {
						if _, err := inW.Write([]byte(tt.line + "\n")); err != nil {
							return
						}
					}
				}()
				<-out.entered
				for range tt.notify {
					srv.NotifyListChanged("catalog", server.ListTools)
				}
				synctest.Wait() // everything is blocked on the stuck output (or the input)
				start := time.Now()
				if tt.eof {
					inW.Close()
				} else {
					cancel()
				}
				var err error
				select {
				case err = <-done:
				case <-time.After(time.Hour):
					t.Fatal("ServeStdio still running an hour after its end (DrainTimeout 100ms)")
				}
				if took := time.Since(start); took > 2*drain {
					t.Errorf("ServeStdio returned after %v, want at most 2×DrainTimeout = %v", took, 2*drain)
				}
				if err == nil || !strings.Contains(err.Error(), "not flushed within DrainTimeout") {
					t.Errorf("ServeStdio = %v, want the unflushed-output error", err)
				}
				close(out.release)         // the client's pipe closes: the writer's Write returns
				inR.CloseWithError(io.EOF) // and the feeder's
			})
		})
	}
}
