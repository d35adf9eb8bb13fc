package oauthclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// expiryLeeway: a token this close to its expiry is refreshed before use.
const expiryLeeway = 30 * time.Second

// ErrNoToken: there is no stored token for the server (and, from Token, none
// could be refreshed). Run the authorization flow (Login) first.
var ErrNoToken = errors.New("oauthclient: no token for this server; log in first")

// ErrNoOpenURL: a flow was needed but Options.OpenURL is nil.
var ErrNoOpenURL = errors.New("oauthclient: authorization needs a user (Options.OpenURL is nil)")

// Authorizer obtains and keeps the access token for one MCP server. It is
// safe for concurrent use; flows and refreshes run one at a time.
type Authorizer struct {
	serverURL string
	server    *url.URL
	opts      Options
	hc        *http.Client
	base      http.RoundTripper

	mu     sync.Mutex // serialises flows and refreshes; guards rec and loaded
	rec    *Record
	loaded bool

	dpop dpopState // the DPoP key in use and the servers' nonces
}

// New returns an Authorizer for the MCP endpoint serverURL. It fails when
// an option is invalid; it does no I/O.
func New(serverURL string, opts Options) (*Authorizer, error) {
	o, u, err := opts.validate(serverURL)
	if err != nil {
		return nil, err
	}
	a := &Authorizer{serverURL: serverURL, server: u, opts: o, hc: o.HTTPClient, base: o.Base}
	if a.hc == nil {
		a.hc = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if a.base == nil {
		a.base = http.DefaultTransport.(*http.Transport).Clone()
	}
	return a, nil
}

// Token returns a valid access token for the server: the stored one, or a
// refreshed one when it has expired. It never starts an interactive flow;
// without a usable token it returns ErrNoToken. Its signature fits
// client.Options.Token, which sends it as a bearer token: a DPoP-bound
// token (Record.TokenType "DPoP") is refused that way, so use the
// Authorizer as the transport for those.
func (a *Authorizer) Token(ctx context.Context) (string, error) {
	rec, err := a.valid(ctx)
	if err != nil {
		return "", err
	}
	if rec == nil {
		return "", ErrNoToken
	}
	return rec.AccessToken, nil
}

// Logout forgets the server's token and client registration, in memory and
// in the Store.
func (a *Authorizer) Logout() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.rec, a.loaded = nil, true
	if a.opts.Store == nil {
		return nil
	}
	return a.opts.Store.Delete(a.serverURL)
}

// Login runs the authorization flow now, whether or not a token is stored:
// it asks the server for its challenge (an unauthenticated server/discover
// request), discovers, registers, calls Options.OpenURL and waits for the
// redirect, then stores the token. It returns the new record (which holds the token: do not log
// it).
func (a *Authorizer) Login(ctx context.Context) (*Record, error) {
	if a.opts.OpenURL == nil && a.opts.Grant == nil {
		return nil, ErrNoOpenURL
	}
	ch := a.probe(ctx)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.load(); err != nil {
		return nil, err
	}
	return a.flowLocked(ctx, ch, a.scopesFor(ch, nil, false))
}

// probe asks the server for its Bearer challenge with an unauthenticated
// server/discover request; a server that gives none yields the zero
// Challenge (discovery then uses the well-known URLs).
func (a *Authorizer) probe(ctx context.Context) Challenge {
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0", "id": 1, "method": mcp.MethodServerDiscover,
		"params": map[string]any{"_meta": map[string]any{
			mcp.MetaProtocolVersion: mcp.LatestProtocolVersion, mcp.MetaClientCapabilities: map[string]any{},
		}},
	})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, a.serverURL, bytes.NewReader(body))
	if err != nil {
		return Challenge{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(mcp.HeaderProtocolVersion, mcp.LatestProtocolVersion)
	req.Header.Set(mcp.HeaderMethod, mcp.MethodServerDiscover)
	resp, err := a.base.RoundTrip(req)
	if err != nil {
		return Challenge{}
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
	ch, _ := ParseChallenge(resp.Header.Get("WWW-Authenticate"))
	return ch
}

// RoundTrip sends req with the server's token, replacing any Authorization
// header (without a token req goes as it is); a request to another origin
// goes as it is, without the token.
// When the answer is a 401, or a 403 with error="insufficient_scope" naming
// scopes the token lacks, and Options.OpenURL is set, it obtains a new token (refresh, or the full
// flow; on a 403 with the union of the old and the challenged scopes) and
// sends req once more. A request whose body cannot be replayed (no
// GetBody) is not retried. An authorization failure is returned as the
// request's error.
func (a *Authorizer) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	if !a.sameOrigin(req.URL) {
		return a.base.RoundTrip(req) // the server's token never goes elsewhere (a redirect, say)
	}
	rec, err := a.valid(ctx)
	if err != nil {
		a.opts.Logger.Warn("oauthclient: stored token unusable", "err", err)
		rec = nil
	}
	resp, err := a.send(req, rec)
	if err != nil {
		return nil, err
	}
	ch, stepUp, ok := a.wantsAuth(resp, rec)
	if !ok || (a.opts.OpenURL == nil && a.opts.Grant == nil) || (req.Body != nil && req.Body != http.NoBody && req.GetBody == nil) {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	next, err := a.reauthorize(ctx, ch, rec, stepUp)
	if err != nil {
		return nil, err
	}
	retry := req.Clone(ctx)
	if req.GetBody != nil {
		if retry.Body, err = req.GetBody(); err != nil {
			return nil, fmt.Errorf("oauthclient: replay request body: %w", err)
		}
	}
	return a.send(retry, next)
}

// sameOrigin reports whether u is on the server's scheme, host and port.
func (a *Authorizer) sameOrigin(u *url.URL) bool {
	return strings.EqualFold(u.Scheme, a.server.Scheme) && strings.EqualFold(u.Host, a.server.Host)
}

// send sends req carrying rec's token; with rec nil, req goes as it is.
func (a *Authorizer) send(req *http.Request, rec *Record) (*http.Response, error) {
	if rec == nil {
		return a.base.RoundTrip(req)
	}
	if rec.TokenType == TokenTypeDPoP {
		return a.sendDPoP(req, rec)
	}
	out := req.Clone(req.Context()) // shares req.Body
	out.Header.Set("Authorization", "Bearer "+rec.AccessToken)
	return a.base.RoundTrip(out)
}

// wantsAuth decides whether resp asks for (more) authorization.
func (a *Authorizer) wantsAuth(resp *http.Response, rec *Record) (Challenge, bool, bool) {
	ch, bearer := ParseChallenge(resp.Header.Get("WWW-Authenticate"))
	switch {
	case resp.StatusCode == http.StatusUnauthorized && ch.Error == "use_dpop_nonce":
		return ch, false, false // sendDPoP retried with the nonce already; a new token would not help
	case resp.StatusCode == http.StatusUnauthorized:
		return ch, false, true
	case resp.StatusCode == http.StatusForbidden && bearer && ch.Error == "insufficient_scope" && rec != nil:
		// A token that already has every scope named cannot be helped by
		// asking again.
		return ch, true, !hasScopes(rec, ch.Scopes)
	}
	return ch, false, false
}

// hasScopes reports whether rec's token was granted every scope of want:
// the scopes the token response named, else the ones requested.
func hasScopes(rec *Record, want []string) bool {
	granted := rec.Granted
	if len(granted) == 0 {
		granted = rec.Scopes
	}
	for _, s := range want {
		if !slices.Contains(granted, s) {
			return false
		}
	}
	return true
}

// reauthorize obtains a new token after the server refused old (nil: no
// token was sent).
func (a *Authorizer) reauthorize(ctx context.Context, ch Challenge, old *Record, stepUp bool) (*Record, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.load(); err != nil {
		return nil, err
	}
	// Another request may have obtained a new (enough) token meanwhile.
	if cur := a.rec; cur != nil && (old == nil || cur.AccessToken != old.AccessToken) && !a.expired(cur) &&
		(!stepUp || hasScopes(cur, ch.Scopes)) {
		return cur, nil
	}
	// A 401 for a token that has a refresh token: refresh, unless the
	// resource now names another authorization server.
	if !stepUp && old != nil && old.RefreshToken != "" {
		if md, err := a.discoverResource(ctx, ch); err == nil && md.AuthorizationServers[0] == old.Issuer {
			if next, err := a.refreshLocked(ctx, old); err == nil {
				return next, nil
			}
		}
	}
	return a.flowLocked(ctx, ch, a.scopesFor(ch, old, stepUp))
}

// scopesFor chooses the scopes the server asks for: on step-up the union
// of the scopes requested before and the challenged ones; otherwise the
// challenge's scopes. flowLocked falls back to the metadata's
// scopes_supported and adds Options.Scopes.
func (a *Authorizer) scopesFor(ch Challenge, old *Record, stepUp bool) []string {
	var scopes []string
	if stepUp && old != nil {
		scopes = append(scopes, old.Scopes...)
	}
	return union(scopes, ch.Scopes)
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// valid returns the record with a usable token, refreshing an expired one;
// nil when there is none.
func (a *Authorizer) valid(ctx context.Context) (*Record, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.load(); err != nil {
		return nil, err
	}
	rec := a.rec
	if rec == nil || rec.AccessToken == "" {
		return nil, nil
	}
	if !a.expired(rec) {
		return rec, nil
	}
	if rec.RefreshToken == "" {
		return a.regrantExpired(ctx, rec), nil
	}
	next, err := a.refreshLocked(ctx, rec)
	if err != nil {
		a.opts.Logger.Info("oauthclient: refresh failed", "issuer", rec.Issuer, "err", err)
		return nil, nil
	}
	return next, nil
}

// regrantExpired runs Options.Grant again for rec, a machine flow's
// expired token; nil when there is no grant or it failed (the server's 401
// then runs the whole flow). a.mu must be held.
func (a *Authorizer) regrantExpired(ctx context.Context, rec *Record) *Record {
	if a.opts.Grant == nil || rec.Grant != a.opts.Grant.grantType() || rec.TokenURL == "" {
		return nil
	}
	next, err := a.regrantLocked(ctx, rec)
	if err != nil {
		a.opts.Logger.Info("oauthclient: grant for an expired token failed", "issuer", rec.Issuer, "err", err)
		return nil
	}
	return next
}

func (a *Authorizer) expired(r *Record) bool {
	return !r.Expiry.IsZero() && !a.opts.Now().Add(expiryLeeway).Before(r.Expiry)
}

// load reads the stored record once; a.mu must be held.
func (a *Authorizer) load() error {
	if a.loaded || a.opts.Store == nil {
		a.loaded = true
		return nil
	}
	rec, err := a.opts.Store.Load(a.serverURL)
	if err != nil {
		return err
	}
	a.rec, a.loaded = rec, true
	return nil
}

// keep makes rec the current record and stores it; a.mu must be held.
func (a *Authorizer) keep(rec *Record) error {
	rec.ServerURL = a.serverURL
	a.rec, a.loaded = rec, true
	if a.opts.Store == nil {
		return nil
	}
	return a.opts.Store.Save(rec)
}

// Stored returns an Authorizer for serverURL over store that never starts
// a flow: used as client.Options.Transport it sends the token stored for
// the server (for example by `taskwire login`), refreshed when it has
// expired, and no Authorization header when there is none, so that a
// server without authorization still works and one with it answers 401
// (*client.AuthError). Open the default store with DefaultFileStore.
func Stored(store Store, serverURL string) (*Authorizer, error) {
	if store == nil {
		return nil, errors.New("oauthclient: Stored needs a Store")
	}
	return New(serverURL, Options{Store: store})
}
