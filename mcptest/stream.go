package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Stream is an open subscriptions/listen stream served in process. Messages
// arrive in order through Next; Close ends the stream as a client
// disconnect would.
type Stream struct {
	// ID is the listen request's JSON-RPC id, the subscription ID.
	ID     int64
	w      *pipeWriter
	cancel context.CancelFunc
	done   chan struct{}
}

// Listen opens subscriptions/listen with the given filter and waits for the
// response to start. When the server answers with a plain JSON response (an
// error) instead of a stream, Listen returns that response and a nil Stream.
func (c *Client) Listen(ctx context.Context, filter *mcp.SubscriptionFilter) (*Stream, *Response, error) {
	c.nextID++
	id := c.nextID
	body, _, err := c.buildBody(id, mcp.MethodSubscriptionsListen, map[string]any{"notifications": filter})
	if err != nil {
		return nil, nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	req := httptest.NewRequestWithContext(sctx, http.MethodPost, "http://localhost"+c.Path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, c.version())
	req.Header.Set(mcp.HeaderMethod, mcp.MethodSubscriptionsListen)
	for k, vs := range c.Header {
		req.Header[k] = vs
	}
	w := newPipeWriter()
	s := &Stream{ID: id, w: w, cancel: cancel, done: make(chan struct{})}
	go func() { // owned by the Stream; ends with the handler
		defer close(s.done)
		defer w.finish()
		c.Handler.ServeHTTP(w, req)
	}()
	select {
	case <-w.started:
	case <-s.done:
	case <-ctx.Done():
		s.Close()
		return nil, nil, ctx.Err()
	}
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		<-s.done
		res, err := ParseResponse(w.status, w.Header(), w.body())
		cancel()
		return nil, res, err
	}
	return s, nil, nil
}

// Next returns the next message of the stream: a notification, or the
// final response. It fails with io.EOF-like ErrStreamEnded when the stream
// ended without more messages.
func (s *Stream) Next(ctx context.Context) (json.RawMessage, error) {
	select {
	case m, ok := <-s.w.events:
		if !ok {
			return nil, ErrStreamEnded
		}
		return m, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// ErrStreamEnded is returned by Next after the last message.
var ErrStreamEnded = errors.New("mcptest: stream ended")

// Close disconnects the client and waits for the server's handler to return.
func (s *Stream) Close() {
	s.cancel()
	<-s.done
}

// Done is closed when the server's handler has returned.
func (s *Stream) Done() <-chan struct{} { return s.done }

// pipeWriter is an http.ResponseWriter that turns SSE data events into
// messages as the server writes them.
type pipeWriter struct {
	header  http.Header
	status  int
	started chan struct{}
	events  chan json.RawMessage

	mu      sync.Mutex
	buf     []byte
	all     []byte
	once    sync.Once
	endOnce sync.Once
}

func newPipeWriter() *pipeWriter {
	return &pipeWriter{header: http.Header{}, started: make(chan struct{}), events: make(chan json.RawMessage, 4096)}
}

func (w *pipeWriter) Header() http.Header { return w.header }

func (w *pipeWriter) WriteHeader(status int) {
	w.once.Do(func() {
		w.status = status
		close(w.started)
	})
}

func (w *pipeWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, b...)
	w.buf = append(w.buf, b...)
	for {
		i := bytes.Index(w.buf, []byte("\n\n"))
		if i < 0 {
			break
		}
		event := w.buf[:i]
		w.buf = w.buf[i+2:]
		for _, line := range strings.Split(string(event), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				select {
				case w.events <- json.RawMessage(data):
				default:
					return 0, fmt.Errorf("mcptest: %d unread messages; read the stream", cap(w.events))
				}
			}
		}
	}
	return len(b), nil
}

// Flush implements http.Flusher.
func (w *pipeWriter) Flush() {}

// SetWriteDeadline implements the method http.ResponseController uses.
func (w *pipeWriter) SetWriteDeadline(time.Time) error { return nil }

func (w *pipeWriter) body() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.all
}

func (w *pipeWriter) finish() {
	w.WriteHeader(http.StatusOK)
	w.endOnce.Do(func() { close(w.events) })
}
