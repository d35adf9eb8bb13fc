// Package stdioframe frames newline-delimited JSON-RPC on a byte stream,
// the MCP stdio transport: ReadLines splits the input into bounded lines,
// and a Writer is the one writer of the output, writing every message
// whole, followed by a newline, in the order it was queued.
package stdioframe

import (
	"bufio"
	"context"
	"errors"
	"io"
	"sync"
	"time"
)

// Writer is the one writer of a stdio connection's output: every
// message of every request goes through its bounded queue and is written
// whole, followed by a newline, in the order it was queued. It owns its
// goroutine, which ends once Close has been called and the queue is
// drained, or when a write fails. Its methods are safe for concurrent use,
// except that no Send or Enqueue may start once Close has been called.
type Writer struct {
	out   *bufio.Writer
	queue chan []byte
	// failed is closed when the output can take no more (a write failed
	// or the writer was closed); senders then give up at once.
	failed   chan struct{}
	failOnce sync.Once
	done     chan struct{} // closed when the goroutine has ended
	err      error         // the write error, set before failed is closed

	closeOnce sync.Once
}

// NewWriter returns a Writer of out whose queue holds queue messages, and
// starts its goroutine.
func NewWriter(out io.Writer, queue int) *Writer {
	w := &Writer{
		out:    bufio.NewWriterSize(out, 64<<10),
		queue:  make(chan []byte, queue),
		failed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	go w.loop()
	return w
}

// ErrClosed is the error of a Send after the output failed or closed.
var ErrClosed = errors.New("stdioframe: the output is closed")

// ErrFlushTimeout is the writer's error when Close gave up waiting for the
// output to take what was queued.
var ErrFlushTimeout = errors.New("stdioframe: the output was not flushed in time; the rest was dropped")

// Frame returns a copy of msg followed by a newline, ready to queue.
func Frame(msg []byte) []byte {
	b := make([]byte, len(msg)+1)
	copy(b, msg)
	b[len(msg)] = '\n'
	return b
}

// Send queues a copy of msg, waiting while the queue is full. It fails once
// the output has failed or ctx has ended.
func (w *Writer) Send(ctx context.Context, msg []byte) error {
	if !w.Enqueue(Frame(msg), ctx.Done(), nil) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return ErrClosed
	}
	return nil
}

// Enqueue queues b, a framed message, waiting while the queue is full, and
// reports whether it was queued: it gives up once the output has failed or
// stop or stop2 is closed (a nil channel never is).
func (w *Writer) Enqueue(b []byte, stop, stop2 <-chan struct{}) bool {
	select {
	case <-w.failed:
		return false
	default:
	}
	select {
	case w.queue <- b:
		return true
	case <-w.failed:
		return false
	case <-stop:
		return false
	case <-stop2:
		return false
	}
}

// loop writes queued messages, flushing whenever the queue is empty, so
// that a burst costs one write system call and a lone response is not
// held back. Once the writer has failed (a write error, or close gave up
// on a blocked output) it writes nothing more.
func (w *Writer) loop() {
	defer close(w.done)
	for b := range w.queue {
		if w.hasFailed() || w.writeOne(b) != nil {
			break
		}
		if len(w.queue) == 0 {
			if err := w.out.Flush(); err != nil {
				w.fail(err)
				break
			}
		}
	}
	if !w.hasFailed() {
		w.out.Flush()
	}
	// Anything still queued after a failure is dropped; senders see failed.
	w.fail(nil)
}

// Failed is closed once the output can take no more: a write failed, or
// Close gave up on it or has written everything.
func (w *Writer) Failed() <-chan struct{} { return w.failed }

func (w *Writer) hasFailed() bool {
	select {
	case <-w.failed:
		return true
	default:
		return false
	}
}

func (w *Writer) writeOne(b []byte) error {
	if _, err := w.out.Write(b); err != nil {
		w.fail(err)
		return err
	}
	return nil
}

func (w *Writer) fail(err error) {
	w.failOnce.Do(func() {
		w.err = err
		close(w.failed)
	})
}

// Close ends the queue once every sender is done (the caller guarantees
// none is left) and waits up to timeout for what is queued to be written.
// When the output has not taken everything by then (the client stopped
// reading) the writer is marked failed with ErrFlushTimeout, the rest is
// dropped and Close returns: the goroutine then ends when its pending Write returns,
// which a Write to a pipe does once the process ends or the client closes
// the pipe. It returns the writer's error, if any.
func (w *Writer) Close(timeout time.Duration) error {
	w.closeOnce.Do(func() { close(w.queue) })
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
		w.fail(ErrFlushTimeout)
	}
	return w.err
}

// ReadLines reads newline-terminated lines from in and sends each (without
// its newline or a trailing CR) on lines, a fresh slice every time; empty
// lines are skipped. A line longer than max is discarded as it arrives,
// never held whole, and reported as a nil slice instead. It returns nil at
// EOF (a last line without newline counts), the read error otherwise, or
// context.Canceled once stop is closed.
func ReadLines(in io.Reader, max int64, lines chan<- []byte, stop <-chan struct{}) error {
	br := bufio.NewReaderSize(in, 64<<10)
	var line []byte
	skipping := false
	emit := func() bool {
		defer func() { line, skipping = nil, false }()
		if skipping {
			line = nil // the marker of a line over max
		} else if n := len(line); n > 0 && line[n-1] == '\r' {
			line = line[:n-1]
		}
		if !skipping && len(line) == 0 {
			return true
		}
		select {
		case lines <- line:
			return true
		case <-stop:
			return false
		}
	}
	for {
		chunk, err := br.ReadSlice('\n')
		complete := err == nil
		if complete {
			chunk = chunk[:len(chunk)-1]
		}
		if !skipping {
			if int64(len(line)+len(chunk)) > max {
				skipping = true
				line = nil
			} else {
				line = append(line, chunk...)
			}
		}
		if complete {
			if !emit() {
				return context.Canceled
			}
			continue
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) {
			if len(line) > 0 || skipping {
				emit()
			}
			return nil
		}
		return err
	}
}
