package server

import (
	"bufio"
	"context"
	"io"
	"sync"
	"time"
)

// stdioWriter is the one writer of a stdio connection's output: every
// message of every request goes through its bounded queue and is written
// whole, followed by a newline, in the order it was queued. It owns its
// goroutine, which ends once close has been called and the queue is
// drained, or when a write fails.
type stdioWriter struct {
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

func newStdioWriter(out io.Writer, queue int) *stdioWriter {
	w := &stdioWriter{
		out:    bufio.NewWriterSize(out, 64<<10),
		queue:  make(chan []byte, queue),
		failed: make(chan struct{}),
		done:   make(chan struct{}),
	}
	go w.loop()
	return w
}

// errOutputClosed is the error of a send after the output failed or closed.
const errOutputClosed = streamError("server: the stdio output is closed")

// errFlushTimeout is the writer's error when close gave up waiting for the
// output to take what was queued.
const errFlushTimeout = streamError("server: the stdio output was not flushed within DrainTimeout; the rest was dropped")

// frame returns a copy of msg followed by a newline, ready to queue.
func frame(msg []byte) []byte {
	b := make([]byte, len(msg)+1)
	copy(b, msg)
	b[len(msg)] = '\n'
	return b
}

// send queues a copy of msg, waiting while the queue is full. It fails once
// the output has failed or ctx has ended.
func (w *stdioWriter) send(ctx context.Context, msg []byte) error {
	if !w.enqueue(frame(msg), ctx.Done(), nil) {
		if err := ctx.Err(); err != nil {
			return err
		}
		return errOutputClosed
	}
	return nil
}

// enqueue queues b, a framed message, waiting while the queue is full, and
// reports whether it was queued: it gives up once the output has failed or
// stop or stop2 is closed (a nil channel never is).
func (w *stdioWriter) enqueue(b []byte, stop, stop2 <-chan struct{}) bool {
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
func (w *stdioWriter) loop() {
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

func (w *stdioWriter) hasFailed() bool {
	select {
	case <-w.failed:
		return true
	default:
		return false
	}
}

func (w *stdioWriter) writeOne(b []byte) error {
	if _, err := w.out.Write(b); err != nil {
		w.fail(err)
		return err
	}
	return nil
}

func (w *stdioWriter) fail(err error) {
	w.failOnce.Do(func() {
		w.err = err
		close(w.failed)
	})
}

// close ends the queue once every sender is done (the caller guarantees
// none is left) and waits up to timeout for what is queued to be written.
// When the output has not taken everything by then (the client stopped
// reading) the writer is marked failed with errFlushTimeout, the rest is dropped and
// close returns: the goroutine then ends when its pending Write returns,
// which a Write to a pipe does once the process ends or the client closes
// the pipe. It returns the writer's error, if any.
func (w *stdioWriter) close(timeout time.Duration) error {
	w.closeOnce.Do(func() { close(w.queue) })
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-w.done:
	case <-t.C:
		w.fail(errFlushTimeout)
	}
	return w.err
}

// stdioSink is the messageSink of one request on a stdio connection: its
// messages go to the connection's writer until the request's context ends
// (the client canceled it or left), after which nothing more is sent for
// it, as the stdio transport requires.
type stdioSink struct {
	w   *stdioWriter
	ctx context.Context
}

func (s stdioSink) send(msg []byte) error {
	if err := s.ctx.Err(); err != nil {
		return err
	}
	return s.w.send(s.ctx, msg)
}
