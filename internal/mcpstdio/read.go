package mcpstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"

	"github.com/taskwire/taskwire/internal/stdioframe"
	"github.com/taskwire/taskwire/mcp"
)

// message is any JSON-RPC message a server sends.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *mcp.Error      `json:"error"`
}

// read dispatches the server's messages until lines closes.
func (c *Conn) read(lines <-chan []byte) {
	for line := range lines {
		if line == nil {
			c.drop("a message longer than MaxMessageBytes")
			continue
		}
		var m message
		if err := json.Unmarshal(line, &m); err != nil {
			c.drop("a malformed message")
			continue
		}
		hasID := len(m.ID) > 0 && !bytes.Equal(m.ID, []byte("null"))
		switch {
		case m.Method == "" && hasID:
			c.deliver(m)
		case m.Method != "" && hasID:
			c.answer(m)
		case m.Method == mcp.NotificationProgress:
			c.progress(m.Params)
		case m.Method != "":
			if c.Modern() && c.subscribed(m) {
				continue
			}
			if c.opts.Notify != nil {
				c.opts.Notify(m.Method, m.Params)
			}
		default:
			c.drop("a message that is neither a request, a response nor a notification")
		}
	}
}

func (c *Conn) drop(what string) {
	if c.dropped.Add(1) == 1 {
		c.opts.Logger.Warn("mcpstdio: discarded " + what + " from the server (reported once)")
	}
}

// deliver hands a response to the call waiting for it.
func (c *Conn) deliver(m message) {
	id, err := strconv.ParseInt(string(m.ID), 10, 64)
	c.mu.Lock()
	p, ok := c.pending[id]
	if ok {
		delete(c.pending, id)
	}
	c.mu.Unlock()
	if err != nil || !ok {
		c.drop("a response to no call in flight")
		return
	}
	switch {
	case m.Error != nil:
		p.reply <- response{err: m.Error}
	case m.Result == nil:
		p.reply <- response{err: errors.New("mcpstdio: a response with neither result nor error")}
	default:
		p.reply <- response{result: m.Result}
	}
}

// subscribed passes a notification that names a Forward call in flight as
// its subscription to that call, and reports whether it did.
func (c *Conn) subscribed(m message) bool {
	id := subscriptionOf(m.Params)
	if id < 0 {
		return false
	}
	c.mu.Lock()
	p := c.pending[id]
	c.mu.Unlock()
	if p == nil || p.onNotify == nil {
		return false
	}
	p.onNotify(m.Method, m.Params)
	return true
}

// progress passes a notifications/progress to the call whose token it names.
func (c *Conn) progress(params json.RawMessage) {
	var p struct {
		Token json.RawMessage `json:"progressToken"`
	}
	if json.Unmarshal(params, &p) != nil {
		c.drop("a malformed progress notification")
		return
	}
	token := string(p.Token)
	if t, err := strconv.Unquote(token); err == nil {
		token = t // a server may echo the token as a string
	}
	c.mu.Lock()
	var fn func(json.RawMessage)
	for _, pc := range c.pending {
		if pc.token != "" && pc.token == token {
			fn = pc.onProgress
			break
		}
	}
	c.mu.Unlock()
	if fn != nil {
		fn(params)
	}
}

// answer answers a request of the server's in a goroutine of its own
// (a handler may wait for a person), which Close waits for; ping is
// answered at once.
func (c *Conn) answer(m message) {
	if m.Method == mcp.MethodPing {
		c.respond(m.ID, json.RawMessage(`{}`), nil)
		return
	}
	if c.opts.Handler == nil {
		c.respond(m.ID, nil, mcp.NewError(mcp.CodeMethodNotFound, "Method not found"))
		return
	}
	c.handlers.Go(func() {
		// The handler's context ends when the connection closes.
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c.handlers.Go(func() {
			select {
			case <-c.stop:
				cancel()
			case <-ctx.Done():
			}
		})
		res, err := c.opts.Handler(ctx, m.Method, m.Params)
		var rpcErr *mcp.Error
		switch {
		case errors.As(err, &rpcErr):
			c.respond(m.ID, nil, rpcErr)
		case err != nil:
			c.respond(m.ID, nil, mcp.NewError(mcp.CodeInternalError, "Internal error"))
		default:
			c.respond(m.ID, res, nil)
		}
	})
}

// respond sends a response to one of the server's requests.
func (c *Conn) respond(id json.RawMessage, result json.RawMessage, rpcErr *mcp.Error) {
	msg, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  json.RawMessage `json:"result,omitempty"`
		Error   *mcp.Error      `json:"error,omitempty"`
	}{"2.0", id, result, rpcErr})
	if err != nil {
		return
	}
	_ = c.out.Enqueue(stdioframe.Frame(msg), c.stop, nil)
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
