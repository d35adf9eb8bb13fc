package client

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/taskwire/taskwire/mcp"
)

type era int

const (
	eraUnknown era = iota
	eraModern      // 2026-07-28: stateless, per-request _meta
	eraLegacy      // 2025-11-25 / 2025-06-18: initialize and a session
)

// Client talks to one MCP endpoint over Streamable HTTP. It speaks
// 2026-07-28 and falls back to a 2025-era session when the server speaks
// only that. A Client is safe for concurrent use; Close releases it.
type Client struct {
	opts     Options
	endpoint string
	hc       *http.Client
	own      *http.Transport // the transport New created, nil otherwise
	nextID   atomic.Int64

	closeCtx context.Context
	closeFn  context.CancelFunc

	connecting chan struct{}     // a one-slot semaphore: serializes Connect, waited for with ctx
	wg         sync.WaitGroup    // the session stream goroutines, the list-change listen and notifier
	lists      *listNotifier     // nil without Options.OnListChanged
	updates    *resourceNotifier // nil without Options.OnResourceUpdated
	res        *resourceListens  // the 2026-07-28 resource listen (resources.go)

	mu           sync.Mutex
	closed       bool
	era          era
	version      string
	sessionID    string
	stopStream   context.CancelFunc // ends the current session's stream; nil when none
	serverInfo   *mcp.Implementation
	caps         *mcp.ServerCapabilities
	legacyCaps   *mcp.LegacyServerCapabilities
	instructions string
	tools        map[string]*toolEntry // the last tools/list, by name
}

// New returns a client for the MCP endpoint at url (http or https). It
// validates every option and sends nothing; the first request (or Connect)
// negotiates the protocol revision.
func New(url string, opts Options) (*Client, error) {
	o, u, err := opts.validate(url)
	if err != nil {
		return nil, err
	}
	c := &Client{opts: o, endpoint: u.String(), connecting: make(chan struct{}, 1), res: newResourceListens()}
	switch {
	case o.HTTPClient != nil:
		c.hc = o.HTTPClient
	case o.Transport != nil:
		c.hc = &http.Client{Transport: o.Transport}
	default:
		c.own = http.DefaultTransport.(*http.Transport).Clone()
		// A client talks to one host: keep the connections of calls made
		// at once for the next ones, rather than net/http's two.
		c.own.MaxIdleConnsPerHost = ownIdleConns
		c.hc = &http.Client{Transport: c.own}
	}
	c.closeCtx, c.closeFn = context.WithCancel(context.Background())
	if o.OnListChanged != nil {
		c.lists = &listNotifier{fn: o.OnListChanged, wake: make(chan struct{}, 1)}
		c.wg.Go(func() { c.lists.run(c.closeCtx) }) // ends with Close
	}
	if o.OnResourceUpdated != nil {
		c.updates = &resourceNotifier{fn: o.OnResourceUpdated, wake: make(chan struct{}, 1), pending: map[string]bool{}}
		c.wg.Go(func() { c.updates.run(c.closeCtx) }) // ends with Close
	}
	return c, nil
}

// Connect negotiates the protocol revision if that has not happened yet:
// it probes server/discover with 2026-07-28 (retrying once with a version
// a -32022 error names, when the client speaks it) and, when the server
// does not speak the 2026 revision, opens a 2025-era session with
// initialize (2025-11-25 preferred, then 2025-06-18) and
// notifications/initialized. Every other method calls Connect itself.
// When the server later answers HTTP 404 for that session (expired,
// deleted, restarted), the request that got it opens a new session and is
// sent once more; Connect is not needed for that. With
// Options.ResumeSession it takes up that session and sends nothing but
// the session stream's GET.
//
// Concurrent calls negotiate once: the others wait for it, or return a
// *ConnectionError wrapping ctx.Err() when their ctx ends first.
//
// It fails with *AuthError on HTTP 401/403, with *ConnectionError when the
// server cannot be reached, with an *HTTPError whose NoEndpoint is true
// when the URL names no MCP endpoint (both requests got the same HTTP 404,
// say; two different answers are both returned, joined), and with
// ErrClosed after Close.
func (c *Client) Connect(ctx context.Context) error {
	select {
	case c.connecting <- struct{}{}:
	case <-ctx.Done():
		return &ConnectionError{Op: "connect", Err: ctx.Err()}
	}
	defer func() { <-c.connecting }()
	c.mu.Lock()
	closed, known := c.closed, c.era != eraUnknown
	c.mu.Unlock()
	if closed {
		return ErrClosed
	}
	if known {
		return nil
	}
	if c.opts.ResumeSession != nil {
		return c.resumeSession()
	}
	if !slices.Contains(c.opts.ProtocolVersions, mcp.LatestProtocolVersion) {
		return c.initialize(ctx)
	}
	err := c.discover(ctx)
	if err == nil {
		return nil
	}
	var auth *AuthError
	var conn *ConnectionError
	if errors.As(err, &auth) || (errors.As(err, &conn) && !errors.Is(err, errNotModern)) || ctx.Err() != nil {
		return err
	}
	c.opts.Logger.Debug("client: server/discover failed; trying a 2025-era session", "err", err)
	if lerr := c.initialize(ctx); lerr != nil {
		var lh, dh *HTTPError
		if errors.As(lerr, &lh) && errors.As(err, &dh) && lh.StatusCode == dh.StatusCode {
			return lerr // the probe's answer says nothing more, as at a wrong path
		}
		return errors.Join(lerr, err)
	}
	return nil
}

var errNotModern = errors.New("the server does not speak 2026-07-28")

// discover probes server/discover and records a modern server.
func (c *Client) discover(ctx context.Context) error {
	version := mcp.LatestProtocolVersion
	for attempt := 0; ; attempt++ {
		var res mcp.DiscoverResult
		err := c.modernRequest(ctx, version, mcp.MethodServerDiscover, &mcp.DiscoverParams{}, &res, nil)
		var rpc *RPCError
		if errors.As(err, &rpc) && rpc.Code == mcp.CodeUnsupportedProtocolVersion && attempt == 0 {
			supported := rpc.SupportedVersions()
			if slices.Contains(supported, mcp.LatestProtocolVersion) {
				continue // the rejection was not about our version; try once more
			}
			return errNotModern
		}
		if err != nil {
			return err
		}
		if !slices.Contains(res.SupportedVersions, version) {
			return errNotModern
		}
		c.mu.Lock()
		c.era, c.version = eraModern, version
		c.caps = res.Capabilities
		c.instructions = res.Instructions
		c.serverInfo = serverInfoFromMeta(res.Meta)
		c.mu.Unlock()
		c.startListChanges(version)
		return nil
	}
}

func serverInfoFromMeta(m mcp.Meta) *mcp.Implementation {
	v, ok := m[mcp.MetaServerInfo]
	if !ok {
		return nil
	}
	b, _ := json.Marshal(v)
	var impl mcp.Implementation
	if json.Unmarshal(b, &impl) != nil {
		return nil
	}
	return &impl
}

// ensure connects when needed and returns the era.
func (c *Client) ensure(ctx context.Context) (era, string, error) {
	c.mu.Lock()
	e, v, closed := c.era, c.version, c.closed
	c.mu.Unlock()
	if closed {
		return 0, "", ErrClosed
	}
	if e != eraUnknown {
		return e, v, nil
	}
	if err := c.Connect(ctx); err != nil {
		return 0, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.era, c.version, nil
}

func (c *Client) isLegacy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.era == eraLegacy
}

// meta is the _meta of every 2026 request.
func (c *Client) meta(version string) *mcp.RequestMeta {
	info := c.opts.ClientInfo
	return &mcp.RequestMeta{
		ProtocolVersion:    version,
		ClientCapabilities: c.opts.capabilities(),
		ClientInfo:         &info,
	}
}

// modernRequest sends a 2026 request: params gets the _meta, the headers
// are mirrored, and the result is decoded into out (when not nil).
func (c *Client) modernRequest(ctx context.Context, version, method string, params any, out any, header http.Header) error {
	raw, err := c.modernRaw(ctx, version, method, params, header, false)
	if err != nil {
		return err
	}
	return decodeResult(method, raw, out)
}

func (c *Client) modernRaw(ctx context.Context, version, method string, params any, header http.Header, stream bool) (json.RawMessage, error) {
	cl, err := c.modernCall(version, method, params, header)
	if err != nil {
		return nil, err
	}
	cl.stream = stream
	return c.roundTrip(ctx, cl)
}

func (c *Client) modernCall(version, method string, params any, header http.Header) (*call, error) {
	setMeta(params, c.meta(version))
	cl, err := c.newCall(method, params)
	if err != nil {
		return nil, protoErr(method, "params cannot be encoded", err)
	}
	for k, v := range header {
		cl.header[k] = v
	}
	cl.header.Set(mcp.HeaderProtocolVersion, version)
	cl.header.Set(mcp.HeaderMethod, method)
	return cl, nil
}

func decodeResult(method string, raw json.RawMessage, out any) error {
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return protoErr(method, "malformed result", err)
	}
	return nil
}

// request sends method in the negotiated era. params must be a pointer to
// one of the mcp params types (whose Meta field receives the 2026 _meta);
// header carries extra 2026 headers.
func (c *Client) request(ctx context.Context, method string, params any, header http.Header) (json.RawMessage, error) {
	e, v, err := c.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if e == eraModern {
		return c.modernRaw(ctx, v, method, params, header, false)
	}
	setMeta(params, nil)
	cl, err := c.newCall(method, params)
	if err != nil {
		return nil, protoErr(method, "params cannot be encoded", err)
	}
	return c.roundTrip(ctx, cl)
}

// ProtocolVersion returns the negotiated revision, empty before Connect.
func (c *Client) ProtocolVersion() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.version
}

// Session returns the ID and revision of the current 2025-era session,
// empty when there is none (before Connect, with a 2026-07-28 server, or a
// server that assigned no session ID). A renewed session (after HTTP 404)
// has a new ID. Pass them to Options.ResumeSession to take the session up
// in another client; the ID is a capability, keep it out of logs.
func (c *Client) Session() (id, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.era != eraLegacy || c.sessionID == "" {
		return "", ""
	}
	return c.sessionID, c.version
}

// ServerInfo returns the server's implementation information, or nil when
// the server sent none or before Connect.
func (c *Client) ServerInfo() *mcp.Implementation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.serverInfo
}

// Instructions returns the server's instructions, empty when none.
func (c *Client) Instructions() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.instructions
}

// ServerCapabilities returns what the server advertised: from
// server/discover, or mapped from a 2025-era initialize result (whose
// legacy tasks capability has no counterpart and is left out). Nil before
// Connect.
func (c *Client) ServerCapabilities() *mcp.ServerCapabilities {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.caps != nil || c.legacyCaps == nil {
		return c.caps
	}
	l := c.legacyCaps
	return &mcp.ServerCapabilities{Experimental: l.Experimental, Logging: l.Logging, Completions: l.Completions,
		Prompts: l.Prompts, Resources: l.Resources, Tools: l.Tools, Extensions: l.Extensions}
}

// Close ends the client: in-flight requests are cancelled, a 2025-era
// session is ended with DELETE (bounded by Options.CloseTimeout; not with
// Options.KeepSession), and the
// idle connections of the client's own transport are closed, so that no
// goroutine of the client outlives it. It returns the error of a DELETE
// that failed or timed out; the client is closed all the same. Close is
// idempotent.
func (c *Client) Close() error { return c.close(false) }

// EndSession closes c as Close does, and ends its 2025-era session with
// DELETE even when Options.KeepSession is set: for a kept session that no
// other client needs any longer. It returns the error of a DELETE that
// failed or timed out; the client is closed all the same. Without a
// session it is Close; once c is closed it does nothing.
func (c *Client) EndSession() error { return c.close(true) }

func (c *Client) close(endSession bool) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	sid, legacy := c.sessionID, c.era == eraLegacy
	c.mu.Unlock()
	c.closeFn()
	c.wg.Wait()
	var err error
	if legacy && sid != "" && (!c.opts.KeepSession || endSession) {
		err = c.deleteSession()
	}
	if c.own != nil {
		c.own.CloseIdleConnections()
	}
	return err
}
