package server

import (
	"bufio"
	"context"
	"io"
	"sync"
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

// send queues a copy of msg, waiting while the queue is full. It fails once
// the output has failed or ctx has ended.
func (w *stdioWriter) send(ctx context.Context, msg []byte) error {
	b := make([]byte, len(msg)+1)
	copy(b, msg)
	b[len(msg)] = '\n'
	select {
	case <-w.failed:
		return errOutputClosed
	default:
	}
	select {
	case w.queue <- b:
		return nil
	case <-w.failed:
		return errOutputClosed
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop writes queued messages, flushing whenever the queue is empty, so
// that a burst costs one write system call and a lone response is not
// held back.
func (w *stdioWriter) loop() {
	defer close(w.done)
	for b := range w.queue {
		if w.writeOne(b) != nil {
			break
		}
		if len(w.queue) == 0 {
			if err := w.out.Flush(); err != nil {
				w.fail(err)
				break
			}
		}
	}
	w.out.Flush()
	// Anything still queued after a failure is dropped; senders see failed.
	w.fail(nil)
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
// none is left) and waits for what is queued to be written.
func (w *stdioWriter) close() error {
	w.closeOnce.Do(func() { close(w.queue) })
	<-w.done
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
