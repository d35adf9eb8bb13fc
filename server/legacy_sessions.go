package server

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/session"
	"github.com/taskwire/taskwire/session/memory"
)

// Defaults of SessionOptions, which taskwire serve's flags share.
const (
	// DefaultMaxSessions bounds a node's in-process session store and its
	// cache and live state.
	DefaultMaxSessions = 10_000
	// DefaultSessionsPerPrincipal bounds the live sessions of one identity.
	DefaultSessionsPerPrincipal = 100
	// DefaultMaxStoredSessions bounds the live sessions of a store as a
	// whole.
	DefaultMaxStoredSessions = 100_000
	// DefaultSessionIdleTimeout ends a session no request names for that
	// long.
	DefaultSessionIdleTimeout = 30 * time.Minute
	// DefaultSessionLifetime ends a session that long after initialize.
	DefaultSessionLifetime = 24 * time.Hour
)

// SessionOptions configure the sessions of 2025-era clients (revisions
// 2025-06-18 and 2025-11-25), which an endpoint serves when its
// ProtocolVersions name them. The 2026-07-28 revision has no sessions and
// never touches them.
type SessionOptions struct {
	// Store keeps the session records. Nil means an in-process
	// session/memory store bounded by MaxSessions, which suits one node; a
	// fleet (or a node whose clients must keep their sessions across
	// restarts) passes a durable store shared by every node.
	Store session.Store
	// MaxSessions bounds the sessions of the in-process store and the
	// records this node keeps in its cache and live state (GET streams,
	// subscriptions, requests in flight). Zero means DefaultMaxSessions.
	MaxSessions int
	// MaxPerPrincipal bounds the live sessions of one identity (endpoint,
	// tenant and principal) across the fleet. Zero means DefaultSessionsPerPrincipal. An
	// initialize beyond it is refused with HTTP 429. Anonymous callers
	// (an empty Identity.Principal, as with the default admission) are
	// indistinguishable from each other and bounded by MaxStored alone,
	// unless their Identity.Source is set (SourceByAddress): a source, of
	// any principals or none, may hold MaxPerPrincipal live sessions as
	// well, counted on the node that opened them since it started.
	MaxPerPrincipal int
	// MaxStored bounds the live sessions of the store as a whole, every
	// identity and every node sharing it together: what bounds a durable
	// store's table (anonymous callers included). Zero means
	// DefaultMaxStoredSessions. An
	// initialize beyond it is refused with HTTP 503 (-32603 "Server
	// busy") until sessions end.
	MaxStored int
	// IdleTimeout ends a session that no request names for that long. Zero
	// means DefaultSessionIdleTimeout. A session that no request names after initialize
	// (clients send notifications/initialized at once) ends after one
	// minute, or IdleTimeout if shorter, so that a flood of bare
	// initializes leaves the store within a minute.
	IdleTimeout time.Duration
	// MaxLifetime ends a session that long after initialize, however busy.
	// Zero means DefaultSessionLifetime.
	MaxLifetime time.Duration
	// Resume configures the resumable response streams of 2025-11-25
	// sessions (event IDs, closing a stream mid-call, resumption by GET
	// with Last-Event-ID); nil means the defaults of ResumeOptions.
	Resume *ResumeOptions
}

// validate reports every problem of the options as given (before defaults).
func (o *SessionOptions) validate() error {
	var c optionChecker
	c.counts("SessionOptions",
		named{"MaxSessions", int64(o.MaxSessions)},
		named{"MaxPerPrincipal", int64(o.MaxPerPrincipal)},
		named{"MaxStored", int64(o.MaxStored)})
	c.durations("SessionOptions",
		named{"IdleTimeout", int64(o.IdleTimeout)},
		named{"MaxLifetime", int64(o.MaxLifetime)})
	if o.MaxPerPrincipal > 0 && o.MaxSessions > 0 && o.MaxPerPrincipal > o.MaxSessions {
		c.bad("SessionOptions.MaxPerPrincipal (%d) exceeds MaxSessions (%d)", o.MaxPerPrincipal, o.MaxSessions)
	}
	if o.MaxPerPrincipal > 0 && o.MaxStored > 0 && o.MaxPerPrincipal > o.MaxStored {
		c.bad("SessionOptions.MaxPerPrincipal (%d) exceeds MaxStored (%d)", o.MaxPerPrincipal, o.MaxStored)
	}
	if o.IdleTimeout > 0 && o.MaxLifetime > 0 && o.IdleTimeout > o.MaxLifetime {
		c.bad("SessionOptions.IdleTimeout (%v) exceeds MaxLifetime (%v)", o.IdleTimeout, o.MaxLifetime)
	}
	if o.Resume != nil {
		o.Resume.validate(&c)
	}
	return errors.Join(c.errs...)
}

func (o *SessionOptions) setDefaults() {
	o.MaxSessions = cmp.Or(o.MaxSessions, DefaultMaxSessions)
	o.MaxPerPrincipal = cmp.Or(o.MaxPerPrincipal, DefaultSessionsPerPrincipal)
	o.MaxStored = cmp.Or(o.MaxStored, DefaultMaxStoredSessions)
	o.IdleTimeout = cmp.Or(o.IdleTimeout, DefaultSessionIdleTimeout)
	o.MaxLifetime = cmp.Or(o.MaxLifetime, DefaultSessionLifetime)
}

// Bounds of session handling.
const (
	sessionIDBytes    = 24  // random bytes of a minted ID: 192 bits
	maxSessionIDLen   = 128 // longer presented IDs are unknown, unread
	storeCallTimeout  = 5 * time.Second
	sessionCacheTTL   = 2 * time.Second // how stale a cached record may be
	sweepEvery        = time.Minute
	sweepBatch        = 1000
	maxTouchInterval  = time.Minute
	maxCapabilityJSON = 64 << 10
)

// sessionRecords is the sessions as SessionOptions.Store records them,
// shared by every node: it mints, finds and ends sessions. (What only this
// node holds for a session, its streams and calls, is in nodeSessions.) It
// keeps a bounded node-local cache of records so that most requests read no
// store: a record is trusted for sessionCacheTTL after it was read, so a
// session deleted (or whose log level was set) through another node may
// still be served as before here for up to that long. A cached record that
// looks expired is always read again before a request is refused.
// LastUsedAt is written coarsely (see touchInterval), so a session's idle
// expiry may come up to that interval early.
type sessionRecords struct {
	store  session.Store
	opts   SessionOptions
	now    func() time.Time
	logger *slog.Logger

	// gone, if set, is told of a session the store no longer has
	// (deleted or expired), so that its node-local state ends with it;
	// swept, of each periodic sweep.
	gone  func(key string)
	swept func(now time.Time)

	mu        sync.Mutex
	cache     map[string]*cachedSession // by key; at most opts.MaxSessions
	lastSweep time.Time
	sources   sourceSessions // live sessions per Identity.Source (legacy_sessions_source.go)
}

// cachedSession is a record as this node last read it, with its
// capabilities decoded once.
type cachedSession struct {
	rec        session.Record
	caps       *mcp.ClientCapabilities
	legacyCaps *mcp.LegacyClientCapabilities
	clientInfo *mcp.Implementation // nil when the client sent none
	read       time.Time           // when rec was read from (or written to) the store
}

func newSessionRecords(o *SessionOptions, now func() time.Time, logger *slog.Logger) (*sessionRecords, error) {
	c := SessionOptions{}
	if o != nil {
		c = *o
	}
	c.setDefaults()
	if c.Store == nil {
		st, err := memory.New(memory.Options{MaxSessions: c.MaxSessions})
		if err != nil {
			return nil, fmt.Errorf("server: session store: %w", err)
		}
		c.Store = st
	}
	return &sessionRecords{store: c.Store, opts: c, now: now, logger: logger, cache: map[string]*cachedSession{}}, nil
}

// touchInterval is how often LastUsedAt is written for a busy session.
func (m *sessionRecords) touchInterval() time.Duration {
	return min(m.opts.IdleTimeout/8, maxTouchInterval)
}

// mintSessionID returns a new session ID (visible ASCII, 192 random bits)
// and its store key.
func mintSessionID() (id, key string) {
	b := make([]byte, sessionIDBytes)
	rand.Read(b)
	id = base64.RawURLEncoding.EncodeToString(b)
	return id, sessionKey(id)
}

// sessionKey is what a Store sees of a session ID: its hex SHA-256.
func sessionKey(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// presentedKey checks a presented Mcp-Session-Id header, reading no more
// than its length and bytes, and returns its key. ok is false for a
// missing header; valid is false for a repeated, empty, overlong or
// non-visible-ASCII value, which the caller treats as an unknown session.
func presentedKey(h http.Header) (key string, ok, valid bool) {
	vs := h[mcp.HeaderSessionID]
	if len(vs) == 0 {
		return "", false, false
	}
	if len(vs) != 1 || len(vs[0]) == 0 || len(vs[0]) > maxSessionIDLen {
		return "", true, false
	}
	v := vs[0]
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e {
			return "", true, false
		}
	}
	return sessionKey(v), true, true
}

var (
	errSessionLimit = newProtocolError(http.StatusTooManyRequests, mcp.NewError(CodeRateLimited, "Too many sessions"))
	errSessionsFull = newProtocolError(http.StatusServiceUnavailable, mcp.NewError(mcp.CodeInternalError, "Server busy"))
)

func storeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, storeCallTimeout)
}

// create stores a new session for the identity and returns its ID. A
// non-empty source (Identity.Source) is also held to MaxPerPrincipal live
// sessions, counted on this node. The session ends unusedSessionTTL after
// now unless a request names it (backdateUnused).
func (m *sessionRecords) create(ctx context.Context, rec session.Record, source string, caps *mcp.LegacyClientCapabilities, info *mcp.Implementation) (string, *protocolError) {
	now := m.now()
	m.sweepMaybe(ctx, now)
	id, key := mintSessionID()
	rec.Key = key
	rec.CreatedAt, rec.LastUsedAt = now, now
	rec.ExpiresAt = now.Add(m.opts.MaxLifetime)
	rec.IdleTimeout = m.opts.IdleTimeout
	m.backdateUnused(&rec, now)
	limits := session.Limits{PerOwner: m.opts.MaxPerPrincipal, Total: m.opts.MaxStored}
	if rec.Principal == "" {
		limits.PerOwner = 0 // every anonymous caller is the same owner: Total bounds them
	}
	if source != "" {
		m.mu.Lock()
		perr := m.reserveSourceLocked(source, now)
		m.mu.Unlock()
		if perr != nil {
			return "", perr
		}
	}
	sctx, cancel := storeCtx(ctx)
	defer cancel()
	err := m.store.Create(sctx, rec, limits, now)
	if source != "" {
		stored := &rec
		if err != nil {
			stored = nil
		}
		m.mu.Lock()
		m.settleSourceLocked(source, stored)
		m.mu.Unlock()
	}
	switch {
	case errors.Is(err, session.ErrLimit):
		return "", errSessionLimit
	case errors.Is(err, session.ErrFull):
		return "", errSessionsFull
	case err != nil:
		return "", m.errStore("create", err)
	}
	m.put(&cachedSession{rec: rec, caps: caps.ClientCapabilities(), legacyCaps: caps, clientInfo: info, read: now})
	return id, nil
}

// errStore logs a failed store call (never the key or the record) and
// maps it: a store out of reach is errStoreUnavailable (503 with
// Retry-After), the rest the fixed internal error.
func (m *sessionRecords) errStore(op string, err error) *protocolError {
	m.logger.Error("session store failed", "op", op, "err", redactErr(err))
	return storeFailure(err)
}

// sweepMaybe removes a batch of expired records at most once per
// sweepEvery, on the initialize that comes along (no goroutine of its own).
func (m *sessionRecords) sweepMaybe(ctx context.Context, now time.Time) {
	m.mu.Lock()
	due := now.Sub(m.lastSweep) >= sweepEvery
	if due {
		m.lastSweep = now
		for k, cs := range m.cache {
			if !cs.rec.Live(now) {
				delete(m.cache, k)
			}
		}
		m.pruneSourcesLocked(now)
	}
	m.mu.Unlock()
	if due {
		if m.swept != nil {
			m.swept(now)
		}
		sctx, cancel := storeCtx(ctx)
		defer cancel()
		if _, err := m.store.Sweep(sctx, now, sweepBatch); err != nil {
			m.logger.Warn("session sweep failed", "err", redactErr(err))
		}
	}
}

// put caches cs, dropping an arbitrary entry when the cache is full.
func (m *sessionRecords) put(cs *cachedSession) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.cache[cs.rec.Key]; !ok && len(m.cache) >= m.opts.MaxSessions {
		for k := range m.cache {
			delete(m.cache, k)
			break
		}
	}
	m.cache[cs.rec.Key] = cs
}

// forget drops the session key from the cache and from its source's count.
func (m *sessionRecords) forget(key string) {
	m.mu.Lock()
	delete(m.cache, key)
	m.dropSourceLocked(key)
	m.mu.Unlock()
}

// lost forgets a session the store no longer has and ends its node-local
// state.
func (m *sessionRecords) lost(key string) {
	m.forget(key)
	if m.gone != nil {
		m.gone(key)
	}
}

// find returns the live session key names if it belongs to the identity on
// endpoint; any other case (unknown, expired, another identity's) is
// errSessionNotFound, the same bytes every time.
func (m *sessionRecords) find(ctx context.Context, key, endpoint string, id Identity) (*cachedSession, *protocolError) {
	now := m.now()
	m.mu.Lock()
	cs := m.cache[key]
	m.mu.Unlock()
	if cs == nil || now.Sub(cs.read) >= sessionCacheTTL || !cs.rec.Live(now) {
		sctx, cancel := storeCtx(ctx)
		rec, err := m.store.Load(sctx, key, now)
		cancel()
		if errors.Is(err, session.ErrNotFound) {
			m.lost(key)
			return nil, errSessionNotFound
		}
		if err != nil {
			return nil, m.errStore("load", err)
		}
		cs = &cachedSession{rec: rec, read: now}
		cs.legacyCaps = decodeLegacyCaps(rec.ClientCapabilities)
		cs.caps = cs.legacyCaps.ClientCapabilities()
		cs.clientInfo = decodeClientInfo(rec.ClientInfo)
		m.put(cs)
	}
	if cs.rec.Endpoint != endpoint || cs.rec.Tenant != id.Tenant || cs.rec.Principal != id.Principal {
		return nil, errSessionNotFound
	}
	if now.Sub(cs.rec.LastUsedAt) >= m.touchInterval() {
		sctx, cancel := storeCtx(ctx)
		err := m.store.Touch(sctx, key, now)
		cancel()
		if errors.Is(err, session.ErrNotFound) {
			m.lost(key)
			return nil, errSessionNotFound
		}
		if err != nil {
			return nil, m.errStore("touch", err)
		}
		c := *cs
		c.rec.LastUsedAt = now
		cs = &c
		m.put(cs)
	}
	return cs, nil
}

// setLogLevel records the session's log level in the store and the cache.
func (m *sessionRecords) setLogLevel(ctx context.Context, cs *cachedSession, level string) *protocolError {
	now := m.now()
	sctx, cancel := storeCtx(ctx)
	err := m.store.SetLogLevel(sctx, cs.rec.Key, level, now)
	cancel()
	if errors.Is(err, session.ErrNotFound) {
		m.lost(cs.rec.Key)
		return errSessionNotFound
	}
	if err != nil {
		return m.errStore("set log level", err)
	}
	c := *cs
	c.rec.LogLevel = level
	m.put(&c)
	return nil
}

// delete ends the session key names.
func (m *sessionRecords) delete(ctx context.Context, key string) *protocolError {
	m.forget(key)
	sctx, cancel := storeCtx(ctx)
	defer cancel()
	err := m.store.Delete(sctx, key, m.now())
	if errors.Is(err, session.ErrNotFound) {
		return errSessionNotFound
	}
	if err != nil {
		return m.errStore("delete", err)
	}
	return nil
}
