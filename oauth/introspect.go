package oauth

import (
	"container/list"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Defaults of Introspection.
const (
	// DefaultIntrospectionCacheSize bounds the cached introspection answers.
	DefaultIntrospectionCacheSize = 1024
	// DefaultIntrospectionCacheTTL bounds how long an answer is reused.
	DefaultIntrospectionCacheTTL = time.Minute
)

// Introspection configures RFC 7662 token introspection, for
// authorization servers that issue opaque access tokens.
type Introspection struct {
	// URL is the introspection endpoint. Required.
	URL string
	// ClientID and ClientSecret authenticate this resource server to the
	// endpoint (HTTP Basic, client_secret_basic). ClientID is required.
	ClientID     string
	ClientSecret string
	// CacheSize bounds the active answers kept, by the token's SHA-256;
	// the least recently used go first. Zero: DefaultIntrospectionCacheSize.
	CacheSize int
	// CacheTTL bounds how long an answer is reused; never past the token's
	// "exp". Zero: DefaultIntrospectionCacheTTL.
	CacheTTL time.Duration
}

func (in *Introspection) validate() (*Introspection, error) {
	c := *in
	var errs []error
	if err := checkFetchURL(c.URL); err != nil {
		errs = append(errs, errors.New("oauth: Introspection.URL: "+err.Error()))
	}
	if c.ClientID == "" {
		errs = append(errs, errors.New("oauth: Introspection.ClientID is required"))
	}
	switch {
	case c.CacheSize < 0:
		errs = append(errs, errors.New("oauth: Introspection.CacheSize must not be negative"))
	case c.CacheSize == 0:
		c.CacheSize = DefaultIntrospectionCacheSize
	}
	switch {
	case c.CacheTTL < 0:
		errs = append(errs, errors.New("oauth: Introspection.CacheTTL must not be negative"))
	case c.CacheTTL == 0:
		c.CacheTTL = DefaultIntrospectionCacheTTL
	}
	return &c, errors.Join(errs...)
}

// introspector asks the introspection endpoint and caches active answers.
type introspector struct {
	rs   Options
	opts Introspection

	mu    sync.Mutex
	byKey map[[sha256.Size]byte]*list.Element
	lru   *list.List // of *cacheEntry, most recently used first
}

type cacheEntry struct {
	key     [sha256.Size]byte
	claims  claims
	expires time.Time
}

func newIntrospector(o Options) *introspector {
	return &introspector{rs: o, opts: *o.Introspection, byKey: make(map[[sha256.Size]byte]*list.Element), lru: list.New()}
}

// check returns the claims of an active token for this resource.
func (in *introspector) check(ctx context.Context, tok string) (claims, *tokenError) {
	key := sha256.Sum256([]byte(tok))
	now := in.rs.Now()
	if c, ok := in.cached(key, now); ok {
		return c, nil
	}
	m, err := in.ask(ctx, tok)
	if err != nil {
		return claims{}, refuse(CategoryIntrospection, err)
	}
	if active, _ := m["active"].(bool); !active {
		return claims{}, refuse(CategoryInactive, nil)
	}
	mc := jwt.MapClaims(m)
	leeway := in.rs.Leeway
	exp, err := mc.GetExpirationTime()
	switch {
	case err != nil:
		return claims{}, refuse(CategoryMalformed, err)
	case exp != nil && !now.Before(exp.Add(leeway)):
		return claims{}, refuse(CategoryExpired, nil)
	}
	if nbf, err := mc.GetNotBefore(); err != nil || nbf != nil && now.Before(nbf.Add(-leeway)) {
		return claims{}, refuse(CategoryNotYetValid, err)
	}
	// The endpoint is the issuer's own; an "iss" it names must still be it.
	if iss, err := mc.GetIssuer(); err != nil || iss != "" && iss != in.rs.Issuer {
		return claims{}, refuse(CategoryBadIssuer, err)
	}
	aud, err := mc.GetAudience()
	if err != nil || !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(in.rs.Audiences, a) }) {
		return claims{}, refuse(CategoryBadAudience, err)
	}
	c, terr := claimsOf(m, in.rs.TenantClaim)
	if terr != nil {
		return claims{}, terr
	}
	expires := now.Add(in.opts.CacheTTL)
	if exp != nil && exp.Before(expires) {
		expires = exp.Time
	}
	in.store(key, c, expires)
	return c, nil
}

// ask POSTs the token to the endpoint within the fetch timeout.
func (in *introspector) ask(ctx context.Context, tok string) (map[string]any, error) {
	ctx, cancel := context.WithTimeout(ctx, in.rs.FetchTimeout)
	defer cancel()
	form := url.Values{"token": {tok}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.opts.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(in.opts.ClientID), url.QueryEscape(in.opts.ClientSecret))
	var m map[string]any
	if err := doJSON(in.rs.HTTPClient, req, &m); err != nil {
		return nil, err
	}
	return m, nil
}

func (in *introspector) cached(key [sha256.Size]byte, now time.Time) (claims, bool) {
	in.mu.Lock()
	defer in.mu.Unlock()
	el, ok := in.byKey[key]
	if !ok {
		return claims{}, false
	}
	e := el.Value.(*cacheEntry)
	if !now.Before(e.expires) {
		in.lru.Remove(el)
		delete(in.byKey, key)
		return claims{}, false
	}
	in.lru.MoveToFront(el)
	return e.claims, true
}

func (in *introspector) store(key [sha256.Size]byte, c claims, expires time.Time) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if el, ok := in.byKey[key]; ok {
		in.lru.Remove(el)
		delete(in.byKey, key)
	}
	for in.lru.Len() >= in.opts.CacheSize {
		old := in.lru.Back()
		in.lru.Remove(old)
		delete(in.byKey, old.Value.(*cacheEntry).key)
	}
	in.byKey[key] = in.lru.PushFront(&cacheEntry{key: key, claims: c, expires: expires})
}
