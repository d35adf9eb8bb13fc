package oauth

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/golang-jwt/jwt/v5"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// Category names why a token was refused. It is the only thing logged
// about a refused token.
type Category string

// Categories of refused tokens and requests.
const (
	CategoryMissing           Category = "missing"                // no Authorization header
	CategoryMalformed         Category = "malformed"              // not one "Bearer TOKEN" header, or not a parsable token
	CategoryOversized         Category = "oversized"              // longer than Options.MaxTokenBytes
	CategoryBadAlgorithm      Category = "bad_algorithm"          // an algorithm not allowed, "none" included
	CategoryBadHeader         Category = "bad_header"             // a "crit" header: no JWS extension is understood (RFC 7515 §4.1.11)
	CategoryUnknownKey        Category = "unknown_key"            // no key with the token's "kid", even after a refresh
	CategoryKeysUnavailable   Category = "keys_unavailable"       // the JWKS could not be fetched (yet): HTTP 503, see ErrUnavailable
	CategoryBadSignature      Category = "bad_signature"          // the signature does not verify
	CategoryExpired           Category = "expired"                // "exp" is past (beyond the leeway) or missing
	CategoryNotYetValid       Category = "not_yet_valid"          // "nbf" is in the future (beyond the leeway)
	CategoryBadIssuer         Category = "bad_issuer"             // "iss" is not Options.Issuer
	CategoryBadAudience       Category = "bad_audience"           // "aud" holds none of Options.Audiences
	CategoryBadSubject        Category = "bad_subject"            // "sub" missing, too long or not printable
	CategoryBadTenant         Category = "bad_tenant"             // the tenant claim is missing, too long or not printable
	CategoryInactive          Category = "introspection_inactive" // the introspection endpoint says the token is not active
	CategoryIntrospection     Category = "introspection_failed"   // the introspection endpoint could not be asked: HTTP 503
	CategoryIntrospectionBusy Category = "introspection_busy"     // Introspection.MaxConcurrent introspections were in flight already: HTTP 503
	CategoryInsufficientScope Category = "insufficient_scope"     // a valid token without a required scope
)

// ResourceServer admits requests that carry a valid access token for this
// resource, and serves the resource's metadata. It is safe for concurrent
// use. Build it with New, and Close it when it is no longer used.
//
// Requests to the authorization server (a JWKS refresh, an introspection)
// run in goroutines the ResourceServer owns, each bounded by
// Options.FetchTimeout, so that one request serves every caller waiting
// for it and none is cut short by the caller that started it. A
// ResourceServer dropped without Close leaves none of them running for
// longer than FetchTimeout.
type ResourceServer struct {
	opts        Options
	owner       *owner
	parser      *jwt.Parser
	keys        *keySet // nil without JWKSURL
	introspect  *introspector
	dpop        *dpopVerifier // nil when DPoP is off
	metadataURL string
	metadata    []byte
	wellKnown   []string // the paths the metadata is served at
}

var _ server.AdmissionController = (*ResourceServer)(nil)

// New validates opts in full and returns a ResourceServer. It does not
// reach the network: keys are fetched on first use.
func New(opts Options) (*ResourceServer, error) {
	o, err := opts.validate()
	if err != nil {
		return nil, err
	}
	rs := &ResourceServer{opts: o, owner: newOwner()}
	rs.parser = jwt.NewParser(
		jwt.WithValidMethods(o.Algorithms),
		jwt.WithLeeway(o.Leeway),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(o.Now),
		jwt.WithStrictDecoding(),
	)
	if o.JWKSURL != "" {
		rs.keys = &keySet{
			url: o.JWKSURL, client: o.HTTPClient, timeout: o.FetchTimeout,
			maxAge: o.KeysMaxAge, minRefresh: o.MinRefreshInterval, maxKeys: o.MaxKeys, now: o.Now,
			onFailure: func(err error) { o.Logger.Warn("oauth: signing keys not refreshed", "err", err) },
			fetches:   newFlights[struct{}, struct{}](rs.owner, 1, o.FetchTimeout),
			retry:     newBackoff(o.MinRefreshInterval),
		}
	}
	if o.Introspection != nil {
		rs.introspect = newIntrospector(o, rs.owner)
	}
	if o.DPoP.Mode != DPoPOff {
		if rs.dpop, err = newDPoPVerifier(o); err != nil {
			return nil, err
		}
	}
	if err := rs.buildMetadata(); err != nil {
		return nil, err
	}
	return rs, nil
}

// Close stops the requests to the authorization server in flight and waits
// for them to end. Afterwards Admit still verifies JWTs with the keys it
// has (stale or not) and answers from the introspection cache, but asks
// the authorization server nothing: a token that needs it is refused as
// unavailable (HTTP 503, keys_unavailable or introspection_failed). Close
// is idempotent and returns nil.
func (rs *ResourceServer) Close() error {
	rs.owner.close()
	return nil
}

// ErrUnavailable is what a token that cannot be checked now is, by
// errors.Is: the signing keys could not be fetched (keys_unavailable), or
// the introspection endpoint could not be asked (introspection_failed,
// introspection_busy). Such a token is not known to be bad: Admit answers
// HTTP 503 with Retry-After for it, and a caller of Verify should do the
// same rather than tell the client its token is invalid.
var ErrUnavailable = errors.New("oauth: the token cannot be checked now")

// tokenError is a refused token: its category, and the error behind it
// when there is one. Neither reaches the client; only the category is
// logged. retryAfter is set for a token that cannot be checked now.
type tokenError struct {
	category   Category
	cause      error
	retryAfter time.Duration
}

func (e *tokenError) Error() string { return "oauth: token refused: " + string(e.category) }
func (e *tokenError) Unwrap() error { return e.cause }

// Is reports a token that cannot be checked now as ErrUnavailable.
func (e *tokenError) Is(target error) bool { return target == ErrUnavailable && e.retryAfter > 0 }

// unavailable is the refusal of a token that cannot be checked now, to be
// asked again after retryAfter (at least a second).
func unavailable(c Category, cause error, retryAfter time.Duration) *tokenError {
	return &tokenError{category: c, cause: cause, retryAfter: max(retryAfter, time.Second)}
}

func refuse(c Category, cause error) *tokenError { return &tokenError{category: c, cause: cause} }

// Admit implements server.AdmissionController. It returns the caller's
// identity, or a *server.Rejection: HTTP 401 with a Bearer or DPoP
// challenge for a missing or refused token or DPoP proof, HTTP 403 with
// error="insufficient_scope" for a token without a required scope, HTTP
// 503 with Retry-After for a token that cannot be checked now because the
// authorization server could not be reached (ErrUnavailable): the token
// may well be good, and a client told invalid_token would discard it. It
// logs only the category of a refusal.
func (rs *ResourceServer) Admit(ctx context.Context, req *server.AdmissionRequest) (server.Identity, error) {
	required := rs.requiredScopes(req.Method, req.Tool)
	values := req.Header.Values("Authorization")
	if len(values) == 0 {
		rs.log(ctx, CategoryMissing)
		return server.Identity{}, rs.unauthorized(false, nil, required)
	}
	c, dpop, terr := rs.authenticate(ctx, req, values)
	if terr != nil {
		rs.log(ctx, terr.category)
		if terr.retryAfter > 0 {
			return server.Identity{}, rs.unavailable(terr.retryAfter)
		}
		return server.Identity{}, rs.unauthorized(dpop, terr, required)
	}
	if !hasScopes(c.scopes, required) {
		rs.log(ctx, CategoryInsufficientScope)
		return server.Identity{}, rs.forbidden(dpop, required)
	}
	principal := rs.opts.Issuer + "#" + c.subject
	tenant := principal
	if rs.opts.TenantClaim != "" {
		tenant = c.tenant
	}
	return server.Identity{Principal: principal, Tenant: tenant, RateKey: principal}, nil
}

// authenticate checks the credential of the Authorization header values:
// a bearer token, refused when it is bound to a key or DPoP is required;
// or a DPoP-bound token with its proof (checked before the token, so that
// a bad proof says nothing about the token), bound to the proof's key, and
// not replayed. dpop reports the DPoP scheme, when DPoP is not off.
func (rs *ResourceServer) authenticate(ctx context.Context, req *server.AdmissionRequest, values []string) (_ claims, dpop bool, _ *tokenError) {
	tok, dpop, terr := credential(values, rs.opts.MaxTokenBytes)
	switch {
	case terr != nil:
		return claims{}, dpop && rs.dpop != nil, terr
	case dpop && rs.dpop == nil:
		return claims{}, false, refuse(CategoryDPoPOff, nil)
	case !dpop && rs.opts.DPoP.Mode == DPoPRequired:
		return claims{}, false, refuse(CategoryDPoPRequired, nil)
	case !dpop:
		c, terr := rs.verify(ctx, tok)
		if terr == nil && c.jkt != "" {
			terr = refuse(CategoryDPoPUnproven, nil)
		}
		return c, false, terr
	}
	p, terr := rs.dpop.check(req, tok)
	if terr != nil {
		return claims{}, true, terr
	}
	c, terr := rs.verify(ctx, tok)
	switch {
	case terr != nil:
		return claims{}, true, terr
	case c.jkt == "":
		return claims{}, true, refuse(CategoryDPoPUnbound, nil)
	case c.jkt != p.jkt:
		return claims{}, true, refuse(CategoryDPoPKeyMismatch, nil)
	}
	if terr := rs.dpop.remember(p); terr != nil {
		return claims{}, true, terr
	}
	return c, true, nil
}

// log records a refusal's category, and nothing else about it.
func (rs *ResourceServer) log(ctx context.Context, c Category) {
	rs.opts.Logger.InfoContext(ctx, "oauth: request refused", "reason", string(c))
}

// credential returns the token of the only Authorization header, "Bearer
// TOKEN" or "DPoP TOKEN" with the scheme in any case, bounded by max
// bytes, and whether its scheme is DPoP.
func credential(values []string, max int) (string, bool, *tokenError) {
	if len(values) != 1 {
		return "", false, refuse(CategoryMalformed, nil)
	}
	scheme, tok, ok := strings.Cut(strings.TrimLeft(values[0], " \t"), " ")
	dpop := strings.EqualFold(scheme, "DPoP")
	if !ok || !dpop && !strings.EqualFold(scheme, "Bearer") {
		return "", false, refuse(CategoryMalformed, nil)
	}
	tok = strings.Trim(tok, " \t")
	if len(tok) > max {
		return "", dpop, refuse(CategoryOversized, nil)
	}
	if tok == "" || !isToken68(tok) {
		return "", dpop, refuse(CategoryMalformed, nil)
	}
	return tok, dpop, nil
}

// isToken68 reports whether s is a token68 (RFC 9110 §11.2), the syntax of
// a Bearer credential.
func isToken68(s string) bool {
	s = strings.TrimRight(s, "=")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '.' || c == '_' || c == '~' || c == '+' || c == '/':
		default:
			return false
		}
	}
	return true
}

// claims is what an admitted token says about its caller.
type claims struct {
	subject string
	tenant  string // the TenantClaim's value, when configured
	scopes  []string
	jkt     string // cnf.jkt: the thumbprint of the key the token is bound to (RFC 9449 §6)
}

// verify checks a token: as a JWT when it looks like one and keys are
// configured, else by introspection.
func (rs *ResourceServer) verify(ctx context.Context, tok string) (claims, *tokenError) {
	isJWT := strings.Count(tok, ".") == 2
	switch {
	case isJWT && (rs.keys != nil || rs.opts.HMACSecret != nil):
		return rs.verifyJWT(ctx, tok)
	case rs.introspect != nil:
		return rs.introspect.check(ctx, tok)
	}
	return claims{}, refuse(CategoryMalformed, nil)
}

// verifyJWT checks a JWT access token's signature and claims.
func (rs *ResourceServer) verifyJWT(ctx context.Context, tok string) (claims, *tokenError) {
	var mc jwt.MapClaims
	token, err := rs.parser.ParseWithClaims(tok, &mc, func(t *jwt.Token) (any, error) {
		return rs.key(ctx, t)
	})
	if err != nil {
		return claims{}, rs.jwtCategory(token, err)
	}
	// The parser checks the signature, "exp" and "nbf"; issuer and
	// audience are checked here, each with its own category.
	if iss, err := mc.GetIssuer(); err != nil || iss != rs.opts.Issuer {
		return claims{}, refuse(CategoryBadIssuer, err)
	}
	aud, err := mc.GetAudience()
	if err != nil || !slices.ContainsFunc(aud, func(a string) bool { return slices.Contains(rs.opts.Audiences, a) }) {
		return claims{}, refuse(CategoryBadAudience, err)
	}
	return claimsOf(map[string]any(mc), rs.opts.TenantClaim)
}

// key returns the verification key for a parsed token header: the shared
// secret for HS* (only with HMACSecret), else the JWKS key with its "kid"
// whose type fits the algorithm. A header with "crit" gets no key: it
// names extensions that must be understood, and none is (RFC 7515
// §4.1.11), while an empty list or one of standard names is invalid.
func (rs *ResourceServer) key(ctx context.Context, t *jwt.Token) (any, error) {
	if _, ok := t.Header["crit"]; ok {
		return nil, errCritical
	}
	alg := t.Method.Alg()
	if slices.Contains(hmacAlgorithms, alg) {
		if rs.opts.HMACSecret == nil {
			return nil, errBadAlgorithm
		}
		return rs.opts.HMACSecret, nil
	}
	if rs.keys == nil {
		return nil, errUnknownKey
	}
	kid, _ := t.Header["kid"].(string)
	k, err := rs.keys.lookup(ctx, kid)
	if err != nil {
		return nil, err
	}
	if !k.fits(alg) {
		return nil, errBadAlgorithm
	}
	return k.key, nil
}

var (
	errBadAlgorithm = errors.New("oauth: algorithm does not fit the key")
	errCritical     = errors.New(`oauth: the token header has "crit"`)
)

// jwtCategory maps a jwt parse error to a category.
func (rs *ResourceServer) jwtCategory(token *jwt.Token, err error) *tokenError {
	c := CategoryMalformed
	switch {
	case errors.Is(err, errBadAlgorithm):
		c = CategoryBadAlgorithm
	case errors.Is(err, errCritical):
		c = CategoryBadHeader
	case errors.Is(err, errUnknownKey):
		c = CategoryUnknownKey
	case errors.Is(err, errKeysFailed):
		retry := time.Second
		if rs.keys != nil {
			retry = rs.keys.retryAfter()
		}
		return unavailable(CategoryKeysUnavailable, err, retry)
	case errors.Is(err, jwt.ErrTokenSignatureInvalid):
		c = CategoryBadSignature
		// The parser refuses an algorithm outside the allow-list with
		// the same sentinel.
		if token != nil {
			if alg, _ := token.Header["alg"].(string); !slices.Contains(rs.opts.Algorithms, alg) {
				c = CategoryBadAlgorithm
			}
		}
	case errors.Is(err, jwt.ErrTokenExpired), errors.Is(err, jwt.ErrTokenRequiredClaimMissing): // "exp" is the only required claim
		c = CategoryExpired
	case errors.Is(err, jwt.ErrTokenNotValidYet):
		c = CategoryNotYetValid
	}
	return refuse(c, err)
}

// claimsOf reads subject, tenant and scopes from verified claims.
// tenantClaim, if not empty, names the claim holding the tenant.
func claimsOf(m map[string]any, tenantClaim string) (claims, *tokenError) {
	sub, _ := m["sub"].(string)
	if !printable(sub) {
		return claims{}, refuse(CategoryBadSubject, nil)
	}
	c := claims{subject: sub, scopes: scopesOf(m)}
	if cnf, ok := m["cnf"].(map[string]any); ok {
		if c.jkt, _ = cnf["jkt"].(string); c.jkt == "" && cnf["jkt"] != nil {
			return claims{}, refuse(CategoryMalformed, nil) // a binding that cannot be checked
		}
	}
	if tenantClaim != "" {
		c.tenant, _ = m[tenantClaim].(string)
		if !printable(c.tenant) {
			return claims{}, refuse(CategoryBadTenant, nil)
		}
	}
	return c, nil
}

// printable reports whether s is a usable identity part: non-empty, at
// most MaxSubjectBytes, valid UTF-8 without control characters.
func printable(s string) bool {
	if s == "" || len(s) > MaxSubjectBytes || !utf8.ValidString(s) {
		return false
	}
	return !strings.ContainsFunc(s, unicode.IsControl)
}

// unauthorized is the 401 rejection of a missing (terr nil) or refused
// credential. Its challenge is for the scheme used (DPoP where DPoP is
// required), with the error, the scopes the request needs and
// resource_metadata, and a DPoP challenge carries algs; where DPoP is
// allowed a second challenge, without an error, offers the other scheme.
// A refused DPoP request's error is invalid_dpop_proof for a bad proof,
// use_dpop_nonce (with a DPoP-Nonce header) for a missing nonce, and
// invalid_token for a bad token, as for a bearer token.
func (rs *ResourceServer) unauthorized(dpop bool, terr *tokenError, required []string) *server.Rejection {
	dpop = dpop || rs.opts.DPoP.Mode == DPoPRequired
	errCode := ""
	if terr != nil {
		errCode = "invalid_token"
		if dpop {
			errCode = dpopError(terr.category)
		}
	}
	rej := rs.rejection(http.StatusUnauthorized, "Unauthorized", rs.challenge(dpop, errCode, required))
	if rs.opts.DPoP.Mode == DPoPAllowed {
		rej.Header.Add("WWW-Authenticate", rs.challenge(!dpop, "", required))
	}
	if errCode == "use_dpop_nonce" {
		rej.Header.Set("DPoP-Nonce", rs.dpop.nonces.issue())
	}
	return rej
}

// challenge is one WWW-Authenticate challenge, Bearer or DPoP.
func (rs *ResourceServer) challenge(dpop bool, errCode string, required []string) string {
	var b strings.Builder
	b.WriteString("Bearer ")
	if dpop {
		b.Reset()
		b.WriteString("DPoP ")
	}
	if errCode != "" {
		b.WriteString(`error="` + errCode + `", `)
	}
	if len(required) > 0 {
		b.WriteString(`scope="` + strings.Join(required, " ") + `", `)
	}
	b.WriteString(`resource_metadata="` + rs.metadataURL + `"`)
	if dpop {
		b.WriteString(`, algs="` + rs.dpop.algs + `"`)
	}
	return b.String()
}

// forbidden is the 403 rejection of a token without a required scope, in
// the scheme of the request.
func (rs *ResourceServer) forbidden(dpop bool, required []string) *server.Rejection {
	return rs.rejection(http.StatusForbidden, "Forbidden: insufficient scope", rs.challenge(dpop, "insufficient_scope", required))
}

// unavailable is the 503 rejection of a token that cannot be checked now:
// no challenge, and Retry-After in whole seconds.
func (rs *ResourceServer) unavailable(retryAfter time.Duration) *server.Rejection {
	h := http.Header{}
	h.Set("Retry-After", strconv.FormatInt(int64((retryAfter+time.Second-1)/time.Second), 10))
	return &server.Rejection{Status: http.StatusServiceUnavailable, Header: h,
		Err: mcp.NewError(mcp.CodeInternalError, "Service unavailable: the access token cannot be checked now, retry later")}
}

func (rs *ResourceServer) rejection(status int, msg, challenge string) *server.Rejection {
	h := http.Header{}
	h.Set("WWW-Authenticate", challenge)
	return &server.Rejection{Status: status, Err: mcp.NewError(mcp.CodeInvalidRequest, msg), Header: h}
}
