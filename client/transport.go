package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// call is one JSON-RPC request (or notification, with a zero id) to send.
type call struct {
	method string
	id     mcp.ID
	body   []byte
	header http.Header // per-request headers (Mcp-Name, Mcp-Param-*)
	// stream marks a long-lived request bounded by its context only.
	stream bool
	// onProgress, when set, receives notifications/progress of the request.
	onProgress func(json.RawMessage)
}

// wireMessage is any JSON-RPC message a server may send.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *mcp.Error      `json:"error"`
}

func (m *wireMessage) hasID() bool { return len(m.ID) > 0 && string(m.ID) != "null" }

// newRequest encodes a JSON-RPC request with a fresh id.
func (c *Client) newCall(method string, params any) (*call, error) {
	id := mcp.IntID(c.nextID.Add(1))
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	body := append([]byte(`{"jsonrpc":"2.0","id":`), id.Raw()...)
	body = append(body, `,"method":`...)
	m, _ := json.Marshal(method)
	body = append(body, m...)
	body = append(body, `,"params":`...)
	body = append(body, p...)
	body = append(body, '}')
	return &call{method: method, id: id, body: body, header: http.Header{}}, nil
}

// post sends cl over HTTP POST. The headers of the negotiated era are
// added; initialize carries no session headers (it opens a session). It
// also returns the session ID the request carried, empty outside a
// 2025-era session.
func (c *Client) post(ctx context.Context, cl *call) (*http.Response, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(cl.body))
	if err != nil {
		return nil, "", &ConnectionError{Op: cl.method, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if err := c.commonHeaders(ctx, req.Header); err != nil {
		return nil, "", err
	}
	if cl.method == mcp.MethodInitialize {
		req.Header.Del(mcp.HeaderSessionID)
		req.Header.Del(mcp.HeaderProtocolVersion)
	}
	for k, v := range cl.header {
		req.Header[k] = v
	}
	sid := req.Header.Get(mcp.HeaderSessionID)
	resp, err := c.do(req, cl.method)
	return resp, sid, err
}

// commonHeaders adds Options.Header, the bearer token and the session
// headers of a 2025-era session.
func (c *Client) commonHeaders(ctx context.Context, h http.Header) error {
	for k, v := range c.opts.Header {
		h[k] = v
	}
	if c.opts.Token != nil {
		tok, err := c.opts.Token(ctx)
		if err != nil {
			return &ConnectionError{Op: "token", Err: err}
		}
		h.Set("Authorization", "Bearer "+tok)
	}
	c.mu.Lock()
	sid, version, legacy := c.sessionID, c.version, c.era == eraLegacy
	c.mu.Unlock()
	if legacy {
		if sid != "" {
			h.Set(mcp.HeaderSessionID, sid)
		}
		if version != "" {
			h.Set(mcp.HeaderProtocolVersion, version)
		}
	}
	return nil
}

func (c *Client) do(req *http.Request, method string) (*http.Response, error) {
	resp, err := c.hc.Do(req)
	if err != nil {
		return nil, &ConnectionError{Op: method, Err: err}
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		drain(resp)
		return nil, &AuthError{StatusCode: resp.StatusCode, WWWAuthenticate: resp.Header.Get("WWW-Authenticate")}
	}
	return resp, nil
}

// drain discards a bounded amount of the body, so that the connection can be
// reused, and closes it.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	resp.Body.Close()
}

// roundTrip sends cl and returns the result of its response: the raw result
// object. JSON-RPC errors come back as *RPCError.
//
// A request that carried a session ID and got HTTP 404 names a session the
// server no longer has (expired, deleted, lost in a restart): the client
// opens a new one (renewSession) and sends the request once more, within
// the same deadline. Retrying is safe even for tools/call: a server
// answers 404 for an unknown session before it processes the request, so
// the first attempt did nothing. A second 404 is returned as an error.
// Notifications and answers to server requests are not retried: they
// belong to the session that ended.
func (c *Client) roundTrip(ctx context.Context, cl *call) (json.RawMessage, error) {
	ctx, cancel := c.requestContext(ctx, cl.stream)
	defer cancel()
	resp, sid, err := c.post(ctx, cl)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusNotFound && sid != "" && !cl.id.IsZero() && cl.method != mcp.MethodInitialize {
		drain(resp)
		if err := c.renewSession(ctx, cl.method, sid); err != nil {
			return nil, err
		}
		if resp, _, err = c.post(ctx, cl); err != nil {
			return nil, err
		}
	}
	defer resp.Body.Close()
	return c.readResponse(ctx, cl, resp)
}

// requestContext bounds ctx by RequestTimeout (unless stream) and by Close.
func (c *Client) requestContext(ctx context.Context, stream bool) (context.Context, context.CancelFunc) {
	var cancel context.CancelFunc
	if _, has := ctx.Deadline(); !has && !stream {
		ctx, cancel = context.WithTimeout(ctx, c.opts.RequestTimeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	stop := context.AfterFunc(c.closeCtx, cancel)
	return ctx, func() { stop(); cancel() }
}

func mediaType(h http.Header) string {
	mt, _, _ := mime.ParseMediaType(h.Get("Content-Type"))
	return mt
}

// readResponse reads the answer to cl from resp: a JSON body, or an SSE
// stream carrying notifications, server requests (2025 era) and finally the
// response.
func (c *Client) readResponse(ctx context.Context, cl *call, resp *http.Response) (json.RawMessage, error) {
	if cl.id.IsZero() { // a notification
		if resp.StatusCode == http.StatusAccepted || resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusNoContent {
			return nil, nil
		}
		return nil, c.statusError(cl.method, resp)
	}
	switch mt := mediaType(resp.Header); {
	case mt == "application/json":
		body, err := readLimited(resp.Body, c.opts.MaxResultBytes)
		if err != nil {
			return nil, c.bodyError(ctx, cl.method, err)
		}
		var m wireMessage
		if err := json.Unmarshal(body, &m); err != nil || (m.Result == nil && m.Error == nil) {
			if resp.StatusCode >= 300 {
				return nil, &HTTPError{StatusCode: resp.StatusCode, ContentType: mt, Body: clip(body), Method: cl.method}
			}
			return nil, protoErr(cl.method, "malformed JSON-RPC response", err)
		}
		return c.finalResponse(cl, resp.StatusCode, &m)
	case mt == "text/event-stream" && resp.StatusCode == http.StatusOK:
		return c.readStream(ctx, cl, resp)
	default:
		if resp.StatusCode >= 300 {
			return nil, c.statusError(cl.method, resp)
		}
		drain(resp)
		return nil, protoErr(cl.method, "unexpected content type "+mt, nil)
	}
}

// statusError turns an unexpected status into a *RPCError when the body is
// a JSON-RPC error (read up to MaxNotificationBytes), else an *HTTPError.
func (c *Client) statusError(method string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, c.opts.MaxNotificationBytes))
	drain(resp)
	if mediaType(resp.Header) == "application/json" {
		var m wireMessage
		if json.Unmarshal(b, &m) == nil && m.Error != nil {
			return rpcError(method, resp.StatusCode, m.Error)
		}
	}
	return &HTTPError{StatusCode: resp.StatusCode, ContentType: mediaType(resp.Header), Body: clip(b), Method: method}
}

func clip(b []byte) []byte {
	if len(b) > 512 {
		b = b[:512]
	}
	return append([]byte(nil), b...)
}

// bodyError classifies a failure while reading a body.
func (c *Client) bodyError(ctx context.Context, method string, err error) error {
	switch {
	case errors.Is(err, errEventTooLarge), errors.Is(err, errTooManyEvents), errors.Is(err, ErrResponseTooLarge):
		return protoErr(method, err.Error(), ErrResponseTooLarge)
	case ctx.Err() != nil:
		return &ConnectionError{Op: method, Err: ctx.Err()}
	}
	return &ConnectionError{Op: method, Err: err}
}

// readLimited reads all of r, failing with ErrResponseTooLarge beyond max.
func readLimited(r io.Reader, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, ErrResponseTooLarge
	}
	return b, nil
}

// finalResponse checks a response message against cl.
func (c *Client) finalResponse(cl *call, status int, m *wireMessage) (json.RawMessage, error) {
	if m.hasID() {
		var id mcp.ID
		if id.UnmarshalJSON(m.ID) != nil || id.String() != cl.id.String() {
			return nil, protoErr(cl.method, "response id does not match the request", nil)
		}
	} else if m.Error == nil {
		return nil, protoErr(cl.method, "response without id", nil)
	}
	if m.Error != nil {
		return nil, rpcError(cl.method, status, m.Error)
	}
	if len(m.Result) == 0 || m.Result[0] != '{' {
		return nil, protoErr(cl.method, "result is not an object", nil)
	}
	return m.Result, nil
}

// readStream reads an SSE response until the response to cl. In a 2025-era
// session a stream that ends early is resumed with GET and Last-Event-ID
// after the server's retry delay, at most MaxReconnects times.
func (c *Client) readStream(ctx context.Context, cl *call, resp *http.Response) (json.RawMessage, error) {
	lastID := ""
	retry := time.Second
	reconnects := 0
	body := resp.Body
	defer func() { body.Close() }()
	for {
		sr := newSSEReader(body, c.opts.MaxResultBytes, c.opts.MaxStreamEvents)
		for {
			ev, err := sr.next()
			if err != nil {
				if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
					break
				}
				return nil, c.bodyError(ctx, cl.method, err)
			}
			if ev.hasID {
				lastID = ev.id
			}
			if ev.hasRetry {
				retry = ev.retry
			}
			if len(bytes.TrimSpace(ev.data)) == 0 {
				continue // a priming event
			}
			var m wireMessage
			if err := json.Unmarshal(ev.data, &m); err != nil {
				return nil, protoErr(cl.method, "malformed JSON-RPC message on the stream", err)
			}
			if m.Method == "" {
				return c.finalResponse(cl, http.StatusOK, &m)
			}
			if int64(len(ev.data)) > c.opts.MaxNotificationBytes {
				return nil, protoErr(cl.method, "notification too large", ErrResponseTooLarge)
			}
			if m.hasID() {
				if err := c.answerServerRequest(ctx, &m); err != nil {
					return nil, err
				}
				continue
			}
			c.notification(cl, &m)
		}
		if ctx.Err() != nil {
			return nil, &ConnectionError{Op: cl.method, Err: ctx.Err()}
		}
		if !c.isLegacy() || lastID == "" || reconnects >= c.opts.MaxReconnects {
			return nil, &ConnectionError{Op: cl.method, Err: errors.New("the stream ended before the response")}
		}
		reconnects++
		body.Close()
		next, err := c.resume(ctx, cl.method, lastID, retry)
		if err != nil {
			return nil, err
		}
		body = next
	}
}

// notification handles a notification on a request's response stream.
func (c *Client) notification(cl *call, m *wireMessage) {
	switch m.Method {
	case mcp.NotificationProgress:
		if cl.onProgress != nil {
			cl.onProgress(m.Params)
		}
	case mcp.NotificationToolsListChanged, mcp.NotificationPromptsListChanged, mcp.NotificationResourcesListChanged:
		c.lists.note(listChangeOf(m.Method))
	case mcp.NotificationResourcesUpdated:
		c.resourceUpdated(m.Params)
	case mcp.NotificationMessage:
		var p struct {
			Level  mcp.LoggingLevel `json:"level"`
			Logger string           `json:"logger"`
		}
		json.Unmarshal(m.Params, &p)
		c.opts.Logger.Debug("client: server log message", "level", string(p.Level))
	}
}

// resume waits retry, then reopens the stream with GET and Last-Event-ID.
func (c *Client) resume(ctx context.Context, method, lastID string, retry time.Duration) (io.ReadCloser, error) {
	t := time.NewTimer(retry)
	select {
	case <-ctx.Done():
		t.Stop()
		return nil, &ConnectionError{Op: method, Err: ctx.Err()}
	case <-t.C:
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		return nil, &ConnectionError{Op: method, Err: err}
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set(mcp.HeaderLastEventID, lastID)
	if err := c.commonHeaders(ctx, req.Header); err != nil {
		return nil, err
	}
	resp, err := c.do(req, method)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header) != "text/event-stream" {
		return nil, c.statusError(method, resp)
	}
	return resp.Body, nil
}
