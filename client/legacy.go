package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// initialize opens a 2025-era session: initialize with the 2025 revisions
// of Options.ProtocolVersions in order (the next one when the server
// rejects one), the session ID, and notifications/initialized.
func (c *Client) initialize(ctx context.Context) error {
	var lastErr error
	for _, version := range c.opts.ProtocolVersions {
		if version == mcp.LatestProtocolVersion {
			continue
		}
		info := c.opts.ClientInfo
		params := &mcp.InitializeParams{ProtocolVersion: version, Capabilities: c.opts.legacyCapabilities(version), ClientInfo: &info}
		cl, err := c.newCall(mcp.MethodInitialize, params)
		if err != nil {
			return protoErr(mcp.MethodInitialize, "params cannot be encoded", err)
		}
		sid, raw, err := c.initializeOnce(ctx, cl)
		if err != nil {
			var rpc *RPCError
			if errors.As(err, &rpc) {
				lastErr = err
				continue // try the older revision
			}
			return err
		}
		var res mcp.InitializeResult
		if err := json.Unmarshal(raw, &res); err != nil {
			return protoErr(mcp.MethodInitialize, "malformed result", err)
		}
		if !mcp.IsLegacyVersion(res.ProtocolVersion) {
			return protoErr(mcp.MethodInitialize, "the server chose an unknown protocol revision", nil)
		}
		if sid != "" && !visibleASCII(sid) {
			return protoErr(mcp.MethodInitialize, "malformed session ID", nil)
		}
		c.mu.Lock()
		c.era, c.version, c.sessionID = eraLegacy, res.ProtocolVersion, sid
		c.legacyCaps, c.serverInfo, c.instructions = res.Capabilities, res.ServerInfo, res.Instructions
		c.mu.Unlock()
		n := &call{method: mcp.NotificationInitialized, body: []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)}
		if _, err := c.roundTrip(ctx, n); err != nil {
			return err
		}
		return c.startSessionStream()
	}
	if lastErr == nil {
		lastErr = errNotModern
	}
	return lastErr
}

// startSessionStream opens the standalone GET stream of the current
// session and reads it on a goroutine of the client. The stream is open
// before Connect returns, so that requests the server sends there during
// the first call are not lost. A server without one is fine; it returns
// ErrClosed when Close came first.
func (c *Client) startSessionStream() error {
	sctx, stop := context.WithCancel(c.closeCtx)
	first := c.openSessionStream(sctx, "")
	if first == nil {
		stop()
		return nil
	}
	c.mu.Lock()
	if c.closed { // Close came first: it waits for no stream
		c.mu.Unlock()
		first.close()
		stop()
		return ErrClosed
	}
	c.wg.Add(1)
	c.stopStream = stop
	c.mu.Unlock()
	go c.sessionStream(sctx, stop, first)
	return nil
}

// resumeSession takes up the session of Options.ResumeSession without
// initialize: it sends nothing but the session stream's GET. A server
// that no longer knows the session answers the next request 404, which
// renews it (roundTrip).
func (c *Client) resumeSession() error {
	r := c.opts.ResumeSession
	c.mu.Lock()
	c.era, c.version, c.sessionID = eraLegacy, r.ProtocolVersion, r.ID
	c.mu.Unlock()
	c.opts.Logger.Debug("client: resuming a 2025-era session", "version", r.ProtocolVersion)
	return c.startSessionStream()
}

// renewSession opens a new 2025-era session after the server answered
// HTTP 404 to a request that carried the session ID stale, as the 2025
// Streamable HTTP transport requires: it ends the session stream of the
// old session and runs initialize again (without a session ID), which
// opens the new session's stream. Concurrent callers share one renewal:
// they queue on the Connect semaphore, and a caller whose stale ID is no
// longer the current one returns at once to retry with the current one.
// It is bounded by ctx (the failed request's context and deadline).
//
// It returns ErrClosed after Close, a *ConnectionError when ctx ends while
// waiting, and initialize's error when the new session cannot be opened
// (the next request that gets 404 tries again).
func (c *Client) renewSession(ctx context.Context, method, stale string) error {
	select {
	case c.connecting <- struct{}{}:
	case <-ctx.Done():
		return &ConnectionError{Op: method, Err: ctx.Err()}
	}
	defer func() { <-c.connecting }()
	c.mu.Lock()
	closed, current, stop := c.closed, c.sessionID, c.stopStream
	renew := !closed && current == stale
	if renew {
		c.stopStream = nil
	}
	c.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case !renew:
		return nil // renewed by another caller meanwhile
	}
	if stop != nil {
		stop() // the old session's stream; initialize opens the new one's
	}
	c.opts.Logger.Debug("client: the server no longer knows the session; opening a new one", "method", method)
	if err := c.initialize(ctx); err != nil {
		return err
	}
	c.updates.note("") // the new session has no resource subscriptions
	return nil
}

// initializeOnce sends initialize and returns the session ID header and
// the result.
func (c *Client) initializeOnce(ctx context.Context, cl *call) (string, json.RawMessage, error) {
	ctx, cancel := c.requestContext(ctx, false)
	defer cancel()
	resp, _, err := c.post(ctx, cl)
	if err != nil {
		return "", nil, err
	}
	defer resp.Body.Close()
	raw, err := c.readResponse(ctx, cl, resp)
	return resp.Header.Get(mcp.HeaderSessionID), raw, err
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return len(s) <= MaxSessionIDLen
}

// deleteSession ends the 2025-era session with DELETE (Close, unless
// Options.KeepSession), bounded by
// CloseTimeout: it runs after Close cancelled closeCtx, often because the
// server stopped answering.
func (c *Client) deleteSession() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.CloseTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodDelete, c.endpoint, nil)
	if err != nil {
		return err
	}
	if err := c.commonHeaders(ctx, req.Header); err != nil {
		return err
	}
	resp, err := c.do(req, "DELETE")
	if err != nil {
		return err
	}
	drain(resp)
	if resp.StatusCode >= 300 && resp.StatusCode != http.StatusMethodNotAllowed && resp.StatusCode != http.StatusNotFound {
		return &HTTPError{StatusCode: resp.StatusCode, Method: "DELETE"}
	}
	return nil
}

// answerServerRequest answers a request the server sent on a 2025-era
// stream (elicitation, sampling, roots, ping) with a POST of the response.
func (c *Client) answerServerRequest(ctx context.Context, m *wireMessage) error {
	if !c.isLegacy() {
		return protoErr(m.Method, "a 2026-07-28 server sent a JSON-RPC request", nil)
	}
	var result any
	var rpcErr *mcp.Error
	switch m.Method {
	case mcp.MethodPing:
		result = struct{}{}
	case mcp.MethodElicitationCreate, mcp.MethodSamplingCreateMessage, mcp.MethodRootsList:
		if !c.canAnswer(m.Method) {
			rpcErr = mcp.MethodNotFound()
			break
		}
		raw, err := c.fulfilOne(ctx, &mcp.InputRequest{Method: m.Method, Params: m.Params})
		if err != nil {
			c.opts.Logger.Debug("client: input handler failed", "method", m.Method, "err", err)
			if !errors.As(err, &rpcErr) {
				rpcErr = &mcp.Error{Code: mcp.CodeInternalError, Message: "Internal error"}
			}
			break
		}
		result = raw
	default:
		rpcErr = mcp.MethodNotFound()
	}
	body := []byte(`{"jsonrpc":"2.0","id":`)
	body = append(body, m.ID...)
	if rpcErr != nil {
		e, _ := json.Marshal(rpcErr)
		body = append(append(append(body, `,"error":`...), e...), '}')
	} else {
		r, err := json.Marshal(result)
		if err != nil {
			return protoErr(m.Method, "answer cannot be encoded", err)
		}
		body = append(append(append(body, `,"result":`...), r...), '}')
	}
	// A response is posted like a notification: the server answers 202.
	_, err := c.roundTrip(ctx, &call{method: m.Method + " response", body: body})
	return err
}

// canAnswer reports whether a handler exists for an input method.
func (c *Client) canAnswer(method string) bool {
	h := &c.opts.Handlers
	switch method {
	case mcp.MethodElicitationCreate:
		return h.Elicit != nil
	case mcp.MethodSamplingCreateMessage:
		return h.Sample != nil
	case mcp.MethodRootsList:
		return h.Roots != nil
	}
	return false
}

var legacyTaskVersions = []string{mcp.ProtocolVersion20251125}

func legacyTasks(version string) bool { return slices.Contains(legacyTaskVersions, version) }

// sessionStreamConn is an open standalone GET stream.
type sessionStreamConn struct {
	resp   *http.Response
	cancel context.CancelFunc
}

func (s *sessionStreamConn) close() {
	s.resp.Body.Close()
	s.cancel()
}

// openSessionStream opens the standalone GET stream of a 2025-era
// session; the wait for its response headers is bounded by
// RequestTimeout, the stream itself lives until streamCtx ends (Close, or
// the session's renewal). It returns nil when the server offers none
// (405), no longer knows the session (404) or the request fails; the
// stream is optional. A 404 does not renew the session: the next request
// gets 404 too and renews it (roundTrip), which opens a new stream.
func (c *Client) openSessionStream(streamCtx context.Context, lastID string) *sessionStreamConn {
	ctx, cancel := context.WithCancel(streamCtx)
	timer := time.AfterFunc(c.opts.RequestTimeout, cancel)
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.endpoint, nil)
	if err != nil {
		cancel()
		return nil
	}
	req.Header.Set("Accept", "text/event-stream")
	if lastID != "" {
		req.Header.Set(mcp.HeaderLastEventID, lastID)
	}
	if c.commonHeaders(ctx, req.Header) != nil {
		cancel()
		return nil
	}
	resp, err := c.do(req, "GET")
	if err != nil {
		cancel()
		return nil
	}
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header) != "text/event-stream" {
		if resp.StatusCode == http.StatusNotFound {
			c.opts.Logger.Debug("client: the server no longer knows the session; no session stream until the next request renews it")
		}
		drain(resp)
		cancel()
		return nil
	}
	return &sessionStreamConn{resp: resp, cancel: cancel}
}

// sessionStream reads the standalone GET stream of a 2025-era session,
// answering the server requests sent there (servers send requests that are
// not tied to a POST there). It reconnects with Last-Event-ID after the
// server's retry delay at most MaxReconnects times; it ends early when a
// reconnection fails (a 404 included: the session is gone) and with ctx
// (Close, which waits for it, or the session's renewal), calling stop.
func (c *Client) sessionStream(ctx context.Context, stop context.CancelFunc, conn *sessionStreamConn) {
	defer c.wg.Done()
	defer stop()
	lastID, retry := "", time.Second
	for attempt := 0; conn != nil; attempt++ {
		sr := newSSEReader(conn.resp.Body, c.opts.MaxNotificationBytes, c.opts.MaxStreamEvents)
		for {
			ev, err := sr.next()
			if err != nil {
				if !errors.Is(err, io.EOF) && ctx.Err() == nil {
					c.opts.Logger.Debug("client: session stream broke", "err", err)
				}
				break
			}
			if ev.hasID {
				lastID = ev.id
			}
			if ev.hasRetry {
				retry = ev.retry
			}
			var m wireMessage
			if len(bytes.TrimSpace(ev.data)) == 0 || json.Unmarshal(ev.data, &m) != nil || m.Method == "" {
				continue
			}
			if !m.hasID() {
				c.lists.note(listChangeOf(m.Method))
				if m.Method == mcp.NotificationResourcesUpdated {
					c.resourceUpdated(m.Params)
				}
				continue
			}
			if err := c.answerServerRequest(ctx, &m); err != nil {
				c.opts.Logger.Debug("client: answering a server request failed", "method", m.Method, "err", err)
			}
		}
		conn.close()
		if attempt >= c.opts.MaxReconnects || sleep(ctx, retry) != nil {
			break
		}
		conn = c.openSessionStream(ctx, lastID)
	}
	if ctx.Err() == nil {
		// The stream is gone for good (the server lost the session, or
		// restarted): changes may be missed from now on until a request
		// renews the session, which a refresh of the lists does.
		c.lists.note(c.servedLists())
		c.updates.note("") // and resource updates: subscribe again

	}
}
