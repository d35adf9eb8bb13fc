package oauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Defaults of Introspection.
const (
	// DefaultIntrospectionCacheSize bounds the cached introspection answers.
	DefaultIntrospectionCacheSize = 1024
	// DefaultIntrospectionCacheTTL bounds how long an answer is reused.
	DefaultIntrospectionCacheTTL = time.Minute
	// DefaultIntrospectionNegativeCacheTTL is how long a refused token is
	// refused again without asking.
	DefaultIntrospectionNegativeCacheTTL = 30 * time.Second
	// DefaultIntrospectionConcurrency bounds the introspections in flight.
	DefaultIntrospectionConcurrency = 8
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
	// CacheSize bounds the admitted tokens kept, and separately the refused
	// ones, by the token's SHA-256; the least recently used go first.
	// Zero: DefaultIntrospectionCacheSize.
	CacheSize int
	// CacheTTL bounds how long an admitting answer is reused; never past
	// the token's "exp". Zero: DefaultIntrospectionCacheTTL.
	CacheTTL time.Duration
	// NegativeCacheTTL is how long a token the endpoint did not admit (not
	// active, or not for this resource) is refused again without asking.
	// Zero: DefaultIntrospectionNegativeCacheTTL. A failure to ask the
	// endpoint is not cached per token: new introspections are spaced from
	// one second up to five after it, and meanwhile a token without a
	// cached answer is refused as unavailable (HTTP 503 with Retry-After).
	NegativeCacheTTL time.Duration
	// MaxConcurrent bounds the introspection requests in flight, one per
	// distinct token: concurrent requests with one token share one
	// introspection, and a token that would need one more is refused at
	// once (introspection_busy, HTTP 503 with Retry-After: 1) without
	// asking. Zero: DefaultIntrospectionConcurrency.
	MaxConcurrent int
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
	switch {
	case c.NegativeCacheTTL < 0:
		errs = append(errs, errors.New("oauth: Introspection.NegativeCacheTTL must not be negative"))
	case c.NegativeCacheTTL == 0:
		c.NegativeCacheTTL = DefaultIntrospectionNegativeCacheTTL
	}
	switch {
	case c.MaxConcurrent < 0:
		errs = append(errs, errors.New("oauth: Introspection.MaxConcurrent must not be negative"))
	case c.MaxConcurrent == 0:
		c.MaxConcurrent = DefaultIntrospectionConcurrency
	}
	return &c, errors.Join(errs...)
}

// introspector asks the introspection endpoint, at most once at a time
// per token and MaxConcurrent times at once, and caches its answers: an
// admitted token's claims for CacheTTL (never past "exp"), a refused
// token's category for NegativeCacheTTL. A failure to ask is not an
// answer: it is not cached, and retry spaces the next introspections.
type introspector struct {
	rs       Options
	opts     Introspection
	admitted *lru[claims]
	refused  *lru[Category]
	asks     *flights[tokenKey, verdict]
	retry    *backoff
}

// verdict is what an introspection decided about a token.
type verdict struct {
	claims  claims
	refusal *tokenError
}

func newIntrospector(o Options, own *owner) *introspector {
	in := o.Introspection
	return &introspector{
		rs: o, opts: *in,
		admitted: newLRU[claims](in.CacheSize),
		refused:  newLRU[Category](in.CacheSize),
		asks:     newFlights[tokenKey, verdict](own, in.MaxConcurrent, o.FetchTimeout),
		retry:    newBackoff(maxRetry),
	}
}

// check returns the claims of an active token for this resource: from the
// caches, else from the introspection in flight for the token, else from
// a new one if fewer than MaxConcurrent are in flight and the backoff
// after a failure has passed.
func (in *introspector) check(ctx context.Context, tok string) (claims, *tokenError) {
	key := sha256.Sum256([]byte(tok))
	now := in.rs.Now()
	if c, ok := in.admitted.get(key, now); ok {
		return c, nil
	}
	if cat, ok := in.refused.get(key, now); ok {
		return claims{}, refuse(cat, nil)
	}
	f, err := in.asks.do(key, func() bool {
		wait, _ := in.retry.wait(now)
		return wait == 0
	}, func(ctx context.Context) (verdict, error) {
		m, err := in.ask(ctx, tok)
		return in.decide(key, m, err), nil
	})
	switch {
	case errors.Is(err, errBusy):
		return claims{}, unavailable(CategoryIntrospectionBusy, err, time.Second)
	case err != nil:
		return claims{}, unavailable(CategoryIntrospection, err, time.Second)
	case f == nil: // the endpoint failed a moment ago
		wait, _ := in.retry.wait(now)
		return claims{}, unavailable(CategoryIntrospection, nil, wait)
	}
	v, err := f.wait(ctx)
	if err != nil {
		return claims{}, unavailable(CategoryIntrospection, err, time.Second)
	}
	return v.claims, v.refusal
}

// decide turns an introspection answer into a verdict, and caches it; a
// failure to ask is recorded in the backoff and logged, not cached.
func (in *introspector) decide(key tokenKey, m map[string]any, err error) verdict {
	now := in.rs.Now()
	if err != nil {
		in.retry.failed(now)
		in.rs.Logger.Warn("oauth: introspection failed", "err", err)
		wait, _ := in.retry.wait(now)
		return verdict{refusal: unavailable(CategoryIntrospection, err, wait)}
	}
	in.retry.succeeded()
	c, exp, terr := in.judge(m, now)
	if terr != nil {
		in.refused.put(key, terr.category, now.Add(in.opts.NegativeCacheTTL))
		return verdict{refusal: terr}
	}
	expires := now.Add(in.opts.CacheTTL)
	if exp != nil && exp.Before(expires) {
		expires = exp.Time
	}
	in.admitted.put(key, c, expires)
	return verdict{claims: c}
}

// judge checks an introspection answer at now, returning the token's
// claims and "exp".
func (in *introspector) judge(m map[string]any, now time.Time) (claims, *jwt.NumericDate, *tokenError) {
	if active, _ := m["active"].(bool); !active {
		return claims{}, nil, refuse(CategoryInactive, nil)
	}
	mc := jwt.MapClaims(m)
	leeway := in.rs.Leeway
	exp, err := mc.GetExpirationTime()
	switch {
	case err != nil:
		return claims{}, nil, refuse(CategoryMalformed, err)
	case exp != nil && !now.Before(exp.Add(leeway)):
		return claims{}, nil, refuse(CategoryExpired, nil)
	}
	if nbf, err := mc.GetNotBefore(); err != nil || nbf != nil && now.Before(nbf.Add(-leeway)) {
		return claims{}, nil, refuse(CategoryNotYetValid, err)
	}
	// The endpoint is the issuer's own; an "iss" it names must still be it.
	if iss, err := mc.GetIssuer(); err != nil || iss != "" && iss != in.rs.Issuer {
		return claims{}, nil, refuse(CategoryBadIssuer, err)
	}
	aud, err := mc.GetAudience()
	if err != nil || !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(in.rs.Audiences, a) }) {
		return claims{}, nil, refuse(CategoryBadAudience, err)
	}
	c, terr := claimsOf(m, in.rs.TenantClaim)
	if terr != nil {
		return claims{}, nil, terr
	}
	return c, exp, nil
}

// ask POSTs the token to the endpoint; ctx bounds it.
func (in *introspector) ask(ctx context.Context, tok string) (map[string]any, error) {
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
