package oauth

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Defaults of Options.
const (
	// DefaultLeeway is the clock skew allowed on "exp" and "nbf".
	DefaultLeeway = 30 * time.Second
	// DefaultMaxTokenBytes bounds a bearer token before it is parsed.
	DefaultMaxTokenBytes = 8 << 10
	// DefaultFetchTimeout bounds a JWKS fetch or an introspection request.
	DefaultFetchTimeout = 5 * time.Second
	// DefaultKeysMaxAge is how long fetched keys are used before they are
	// fetched again.
	DefaultKeysMaxAge = time.Hour
	// DefaultMinRefreshInterval is the least time between a successful
	// JWKS fetch and the next, however many unknown key IDs arrive.
	DefaultMinRefreshInterval = 30 * time.Second
	// DefaultMaxKeys bounds the keys kept from one JWKS.
	DefaultMaxKeys = 64
	// MaxResponseBytes bounds a JWKS, metadata or introspection response.
	MaxResponseBytes = 256 << 10
	// MaxSubjectBytes bounds the "sub" claim and a tenant claim's value.
	MaxSubjectBytes = 512
)

// defaultAlgorithms are the JWS algorithms accepted when
// Options.Algorithms is empty: the asymmetric algorithms authorization
// servers sign access tokens with.
var defaultAlgorithms = []string{"RS256", "ES256", "PS256", "EdDSA"}

// DefaultAlgorithms returns the JWS algorithms accepted when
// Options.Algorithms is empty: RS256, ES256, PS256 and EdDSA.
func DefaultAlgorithms() []string { return slices.Clone(defaultAlgorithms) }

// asymmetricAlgorithms are the public-key algorithms Options.Algorithms
// may name; hmacAlgorithms need Options.HMACSecret.
var asymmetricAlgorithms = []string{
	"RS256", "RS384", "RS512", "PS256", "PS384", "PS512",
	"ES256", "ES384", "ES512", "EdDSA",
}

var hmacAlgorithms = []string{"HS256", "HS384", "HS512"}

// Options configure a ResourceServer. New validates them in full.
type Options struct {
	// Resource is this protected resource's URI, the MCP endpoint's
	// canonical URL (RFC 8707, RFC 9728): an absolute https URL, or http
	// on a loopback host, without a fragment. Required. It is the
	// "resource" of the metadata, its well-known URL is derived from it,
	// and it is the default audience.
	Resource string
	// Issuer is the authorization server's issuer identifier; a token's
	// "iss" must equal it exactly. An absolute URL without "#". Required.
	Issuer string
	// AuthorizationServers are the issuers listed in the metadata. Empty:
	// Issuer.
	AuthorizationServers []string
	// JWKSURL is where the issuer's signing keys are. Required unless
	// Introspection is set or HMACSecret is the only key.
	JWKSURL string
	// Audiences are the "aud" values accepted; a token must carry at least
	// one. Empty: Resource.
	Audiences []string
	// Algorithms are the JWS algorithms accepted. Empty:
	// DefaultAlgorithms. "none" is never accepted; HS256, HS384 and HS512
	// only together with HMACSecret.
	Algorithms []string
	// HMACSecret is a secret shared with the issuer for HS* tokens, at
	// least 32 bytes. Nil: HMAC-signed tokens are refused, whatever their
	// key ID.
	HMACSecret []byte
	// Leeway is the clock skew allowed on "exp" and "nbf". Zero:
	// DefaultLeeway; at most 5 minutes.
	Leeway time.Duration
	// MaxTokenBytes bounds a token before it is parsed. Zero:
	// DefaultMaxTokenBytes.
	MaxTokenBytes int
	// TenantClaim names a string claim holding the caller's tenant. Empty:
	// the tenant is the principal. A token without the claim is refused.
	TenantClaim string
	// MethodScopes lists the scopes each JSON-RPC method needs.
	MethodScopes map[string][]string
	// ToolScopes lists the scopes a tools/call of each tool needs, on top
	// of MethodScopes["tools/call"].
	ToolScopes map[string][]string
	// ScopesSupported is the metadata's scopes_supported. Empty: every
	// scope of MethodScopes and ToolScopes, sorted.
	ScopesSupported []string
	// Introspection, if set, checks opaque tokens with the authorization
	// server's RFC 7662 endpoint.
	Introspection *Introspection
	// DPoP configures DPoP-bound access tokens (RFC 9449). The zero value
	// accepts them next to bearer tokens (DPoPAllowed).
	DPoP DPoP

	// HTTPClient fetches keys and introspects tokens. Nil: a client
	// without proxies from the environment that follows a redirect only
	// to a URL this package would accept (https, or http on loopback).
	// Each request is bounded by FetchTimeout whatever the client's own
	// timeout.
	HTTPClient *http.Client
	// FetchTimeout bounds one JWKS fetch or introspection. Zero:
	// DefaultFetchTimeout.
	FetchTimeout time.Duration
	// KeysMaxAge is how long fetched keys are used before the JWKS is
	// fetched again. Zero: DefaultKeysMaxAge.
	KeysMaxAge time.Duration
	// MinRefreshInterval is the least time between a successful JWKS
	// fetch and the next. After a failed (or timed-out) fetch the next may
	// start one second later, then two, four, and five at most, never
	// later than MinRefreshInterval. Zero: DefaultMinRefreshInterval.
	MinRefreshInterval time.Duration
	// MaxKeys bounds the keys kept from a JWKS. Zero: DefaultMaxKeys.
	MaxKeys int
	// Logger receives token failure categories and key fetch failures.
	// Nil: nothing is logged.
	Logger *slog.Logger
	// Now is the clock, for tests. Nil: time.Now.
	Now func() time.Time
}

// validate checks o in full and fills in defaults; it returns a copy. The
// error joins one error per problem, each naming its field.
func (o Options) validate() (Options, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	o.checkIdentities(bad)
	o.checkAlgorithms(bad)
	o.checkLimits(bad)
	o.checkScopes(bad)
	o.DPoP = o.DPoP.validate(bad)
	if o.Introspection != nil {
		in, err := o.Introspection.validate()
		if err != nil {
			errs = append(errs, err)
		}
		o.Introspection = in
	}
	if o.TenantClaim != "" && strings.TrimSpace(o.TenantClaim) != o.TenantClaim {
		bad("oauth: TenantClaim %q has surrounding space", o.TenantClaim)
	}
	if o.HTTPClient == nil {
		o.HTTPClient = newHTTPClient()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, errors.Join(errs...)
}

// checkIdentities checks the URLs that name the resource, its issuers and
// its key set, and defaults AuthorizationServers and Audiences.
func (o *Options) checkIdentities(bad func(string, ...any)) {
	if err := checkResourceURI(o.Resource); err != nil {
		bad("oauth: Resource: %w", err)
	}
	if err := checkIssuer(o.Issuer); err != nil {
		bad("oauth: Issuer: %w", err)
	}
	for _, as := range o.AuthorizationServers {
		if err := checkIssuer(as); err != nil {
			bad("oauth: AuthorizationServers: %w", err)
		}
	}
	if len(o.AuthorizationServers) == 0 {
		o.AuthorizationServers = []string{o.Issuer}
	}
	if o.JWKSURL != "" {
		if err := checkFetchURL(o.JWKSURL); err != nil {
			bad("oauth: JWKSURL: %w", err)
		}
	}
	if len(o.Audiences) == 0 {
		o.Audiences = []string{o.Resource}
	}
	for _, a := range o.Audiences {
		if a == "" {
			bad("oauth: Audiences: empty audience")
		}
	}
}

// checkAlgorithms defaults Algorithms and checks that every algorithm is
// supported and has the key material it needs.
func (o *Options) checkAlgorithms(bad func(string, ...any)) {
	if len(o.Algorithms) == 0 {
		o.Algorithms = DefaultAlgorithms()
		if o.HMACSecret != nil {
			o.Algorithms = append(o.Algorithms, hmacAlgorithms...)
		}
	}
	hasHMAC, hasAsym := false, false
	for _, a := range o.Algorithms {
		switch {
		case slices.Contains(asymmetricAlgorithms, a):
			hasAsym = true
		case slices.Contains(hmacAlgorithms, a):
			hasHMAC = true
			if o.HMACSecret == nil {
				bad("oauth: Algorithms: %s needs HMACSecret", a)
			}
		default:
			bad("oauth: Algorithms: %q is not supported", a)
		}
	}
	if o.HMACSecret != nil && len(o.HMACSecret) < 32 {
		bad("oauth: HMACSecret must be at least 32 bytes")
	}
	if hasAsym && o.JWKSURL == "" && o.Introspection == nil && !hasHMAC {
		bad("oauth: JWKSURL is required to verify %v tokens", o.Algorithms)
	}
}

// checkLimits checks the durations and sizes and fills in their defaults.
func (o *Options) checkLimits(bad func(string, ...any)) {
	switch {
	case o.Leeway < 0 || o.Leeway > 5*time.Minute:
		bad("oauth: Leeway must be between 0 and 5m")
	case o.Leeway == 0:
		o.Leeway = DefaultLeeway
	}
	switch {
	case o.MaxTokenBytes < 0:
		bad("oauth: MaxTokenBytes must not be negative")
	case o.MaxTokenBytes == 0:
		o.MaxTokenBytes = DefaultMaxTokenBytes
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"FetchTimeout", &o.FetchTimeout, DefaultFetchTimeout},
		{"KeysMaxAge", &o.KeysMaxAge, DefaultKeysMaxAge},
		{"MinRefreshInterval", &o.MinRefreshInterval, DefaultMinRefreshInterval},
	} {
		switch {
		case *d.v < 0:
			bad("oauth: %s must not be negative", d.name)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	switch {
	case o.MaxKeys < 0:
		bad("oauth: MaxKeys must not be negative")
	case o.MaxKeys == 0:
		o.MaxKeys = DefaultMaxKeys
	}
}

// checkScopes checks the scope maps, copies them sorted and without
// repeats, and defaults ScopesSupported to every scope they name.
func (o *Options) checkScopes(bad func(string, ...any)) {
	o.MethodScopes = cleanScopes(o.MethodScopes, "MethodScopes", bad)
	o.ToolScopes = cleanScopes(o.ToolScopes, "ToolScopes", bad)
	if len(o.ScopesSupported) == 0 {
		o.ScopesSupported = allScopes(o.MethodScopes, o.ToolScopes)
	}
	for _, s := range o.ScopesSupported {
		if !validScope(s) {
			bad("oauth: ScopesSupported: %q is not a valid scope", s)
		}
	}
}

// cleanScopes checks a scope map and returns a copy with each list sorted
// and without repeats.
func cleanScopes(m map[string][]string, field string, bad func(string, ...any)) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, scopes := range m {
		if k == "" {
			bad("oauth: %s: empty name", field)
		}
		for _, s := range scopes {
			if !validScope(s) {
				bad("oauth: %s[%q]: %q is not a valid scope", field, k, s)
			}
		}
		c := slices.Clone(scopes)
		slices.Sort(c)
		out[k] = slices.Compact(c)
	}
	return out
}

// validScope reports whether s is a scope token of RFC 6749 §3.3:
// printable ASCII without space, '"' or '\'.
func validScope(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// checkResourceURI checks a resource identifier: absolute, https (or http
// on loopback), no fragment, no query.
func checkResourceURI(s string) error {
	u, err := parseServiceURL(s)
	if err != nil {
		return err
	}
	if u.RawQuery != "" {
		return fmt.Errorf("%q has a query", s)
	}
	return nil
}

// checkIssuer checks an issuer identifier (RFC 8414 §2): a URL without
// query or fragment, so that "#" can separate it from a subject.
func checkIssuer(s string) error {
	u, err := parseServiceURL(s)
	if err != nil {
		return err
	}
	if u.RawQuery != "" || strings.Contains(s, "#") {
		return fmt.Errorf("%q has a query or fragment", s)
	}
	return nil
}

// checkFetchURL checks a URL this package fetches from.
func checkFetchURL(s string) error {
	_, err := parseServiceURL(s)
	return err
}

// parseServiceURL parses an absolute https URL, or http on a loopback
// host, without a fragment or user information.
func parseServiceURL(s string) (*url.URL, error) {
	if s == "" {
		return nil, errors.New("required")
	}
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", s, err)
	}
	switch {
	case u.Host == "" || u.Opaque != "":
		return nil, fmt.Errorf("%q is not an absolute URL", s)
	case u.Fragment != "" || strings.Contains(s, "#"):
		return nil, fmt.Errorf("%q has a fragment", s)
	case u.User != nil:
		return nil, fmt.Errorf("%q has user information", s)
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopbackHost(u.Hostname()):
	default:
		return nil, fmt.Errorf("%q must be https (http only on a loopback host)", s)
	}
	return u, nil
}

// newHTTPClient is the default client: no proxies from the environment,
// and redirects only to https (or http on loopback), at most 5 of them.
func newHTTPClient() *http.Client {
	return &http.Client{
		Transport: &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if _, err := parseServiceURL(req.URL.String()); err != nil {
				return fmt.Errorf("redirect refused: %w", err)
			}
			return nil
		},
	}
}
