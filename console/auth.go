package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/taskwire/taskwire/oauth"
)

// Operator access. The console's own credential is the operator token.
// A request presents it as "Authorization: Bearer TOKEN", or holds a
// session cookie the login form set: "s1." + base64url(expiry (8 bytes,
// Unix seconds) | nonce (16 bytes)) + "." + base64url(HMAC-SHA-256 of the
// body under a key derived from the token). Sessions are stateless: every
// node with the same token accepts them, and changing the token ends them
// all. Signing out ends a session at once on the console that served the
// sign-out, which remembers it (signOuts) until its cookie expires. With
// Options.OAuth, a Bearer credential that is not the operator
// token is verified as an OAuth access token, which must grant
// Options.OperatorScope.

const (
	cookieName   = "taskwire_console"
	cookiePrefix = "s1."
	nonceLen     = 16
	maxCookieLen = 128
	maxTokenLen  = 4096
)

// operator is an authenticated request's operator: how it authenticated
// and, for a session, the session's nonce (which keys its CSRF token and
// its event stream).
type operator struct {
	via     string    // "bearer", "session" or "oauth"
	nonce   []byte    // the session's; nil otherwise
	expires time.Time // when the session's cookie expires
	who     string    // for oauth, PrincipalRef of the token's principal
}

// name is the operator as the audit log names it: the credential kind and,
// for a session, a short hash of its nonce, for an access token a short
// hash of its principal, so that the actions of one login or one caller
// can be told apart without logging anything that authenticates or names
// anyone.
func (o operator) name() string {
	switch {
	case o.nonce != nil:
		sum := sha256.Sum256(o.nonce)
		return "session:" + hex.EncodeToString(sum[:4])
	case o.who != "":
		return "oauth:" + o.who
	}
	return "bearer"
}

// PrincipalRef is how the audit log names the principal of an OAuth access
// token (ISSUER#SUBJECT): the first 12 hex digits of its SHA-256, like
// TaskRef.
func PrincipalRef(principal string) string { return TaskRef(principal) }

// verdict is the outcome of authenticating a request.
type verdict int

const (
	authOK          verdict = iota
	authNone                // no credential, or a wrong one: 401
	authForbidden           // a valid access token without the operator scope: 403
	authLimited             // refused by the sign-in limits: 429
	authUnavailable         // an access token that cannot be checked now (oauth.ErrUnavailable): 503
)

// keys are the secrets derived from the token.
type keys struct {
	tokenSum [32]byte // SHA-256 of the token, for constant-time comparison
	session  []byte   // MAC key of session cookies
	csrf     []byte   // MAC key of CSRF tokens
	class    []byte   // MAC key of the sign-in limits' credential classes
}

func deriveKeys(token []byte) keys {
	mac := func(label string) []byte {
		h := hmac.New(sha256.New, token)
		h.Write([]byte("taskwire console " + label))
		return h.Sum(nil)
	}
	return keys{tokenSum: sha256.Sum256(token), session: mac("session v1"), csrf: mac("csrf v1"),
		class: mac("sign-in class v1")}
}

// signInClass is the credential class of a presented credential (limit.go):
// the first byte of its MAC under a key derived from the token, so that
// no one who lacks the token can tell which credentials share the right
// token's class.
func (k *keys) signInClass(presented string) uint8 {
	h := hmac.New(sha256.New, k.class)
	h.Write([]byte(presented))
	return h.Sum(nil)[0]
}

// tokenOK compares a presented token with the operator token in constant
// time (of the hashes: the length of the token does not leak either).
func (k *keys) tokenOK(presented string) bool {
	if len(presented) == 0 || len(presented) > maxTokenLen {
		return false
	}
	sum := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(sum[:], k.tokenSum[:]) == 1
}

// newSession returns a cookie value valid until expires.
func (k *keys) newSession(expires time.Time) (string, error) {
	body := binary.BigEndian.AppendUint64(nil, uint64(expires.Unix()))
	nonce := make([]byte, nonceLen)
	if _, err := rand.Read(nonce); err != nil {
		return "", err
	}
	body = append(body, nonce...)
	return cookiePrefix + base64.RawURLEncoding.EncodeToString(body) + "." +
		base64.RawURLEncoding.EncodeToString(k.sessionMAC(body)), nil
}

func (k *keys) sessionMAC(body []byte) []byte {
	h := hmac.New(sha256.New, k.session)
	h.Write(body)
	return h.Sum(nil)
}

// checkSession checks a cookie value at now and returns its nonce and
// expiry; ok false for a malformed, altered, forged or expired one.
func (k *keys) checkSession(v string, now time.Time) (nonce []byte, expires time.Time, ok bool) {
	if len(v) > maxCookieLen || !strings.HasPrefix(v, cookiePrefix) {
		return nil, time.Time{}, false
	}
	b64body, b64mac, found := strings.Cut(v[len(cookiePrefix):], ".")
	if !found {
		return nil, time.Time{}, false
	}
	body, err1 := base64.RawURLEncoding.Strict().DecodeString(b64body)
	mac, err2 := base64.RawURLEncoding.Strict().DecodeString(b64mac)
	if err1 != nil || err2 != nil || len(body) != 8+nonceLen || !hmac.Equal(mac, k.sessionMAC(body)) {
		return nil, time.Time{}, false
	}
	expires = time.Unix(int64(binary.BigEndian.Uint64(body[:8])), 0)
	if !now.Before(expires) {
		return nil, time.Time{}, false
	}
	return body[8:], expires, true
}

// csrfToken is the CSRF token of a session: a MAC of its nonce, so that
// it needs no storage and another session's token never matches.
func (k *keys) csrfToken(nonce []byte) string {
	h := hmac.New(sha256.New, k.csrf)
	h.Write(nonce)
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
}

// authenticate returns the request's operator and the verdict on it, and
// for authLimited how long the client should wait. A request with an
// Authorization header is judged by it alone, and is a sign-in under the
// sign-in limits.
func (c *Console) authenticate(r *http.Request) (operator, verdict, time.Duration) {
	if vals := r.Header.Values("Authorization"); len(vals) > 0 {
		addr := clientAddr(r)
		now := c.opts.Now()
		cred := bearerCredential(vals)
		if wait := c.signInBlocked("bearer", addr, cred, now); wait > 0 {
			return operator{}, authLimited, wait
		}
		op, v := c.bearer(r, vals)
		if v == authUnavailable {
			return operator{}, v, time.Second
		}
		if v == authNone {
			if wait := c.signInFailed("bearer", addr, cred, now); wait > 0 {
				return operator{}, authLimited, wait
			}
		}
		return op, v, 0
	}
	ck, err := r.Cookie(cookieName)
	if err != nil {
		return operator{}, authNone, 0
	}
	nonce, expires, ok := c.keys.checkSession(ck.Value, c.opts.Now())
	if !ok || c.signOuts.revoked(nonce, expires) {
		return operator{}, authNone, 0
	}
	return operator{via: "session", nonce: nonce, expires: expires}, authOK, 0
}

// bearerCredential is what the sign-in limits class a request's
// Authorization values by: the token of one "Bearer TOKEN" (as the form
// would present it), else all the values.
func bearerCredential(vals []string) string {
	if len(vals) == 1 {
		if scheme, tok, _ := strings.Cut(vals[0], " "); strings.EqualFold(scheme, "Bearer") {
			return strings.TrimSpace(tok)
		}
	}
	return strings.Join(vals, "\n")
}

// bearer judges the Authorization header values of a request: the
// operator token, or with Options.OAuth an access token that grants the
// operator scope.
func (c *Console) bearer(r *http.Request, vals []string) (operator, verdict) {
	if len(vals) != 1 {
		return operator{}, authNone
	}
	scheme, tok, _ := strings.Cut(vals[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return operator{}, authNone
	}
	if c.keys.tokenOK(strings.TrimSpace(tok)) {
		return operator{via: "bearer"}, authOK
	}
	if c.opts.OAuth == nil {
		return operator{}, authNone
	}
	ctx, cancel := c.bound(r)
	defer cancel()
	g, err := c.opts.OAuth.Verify(ctx, vals[0])
	if errors.Is(err, oauth.ErrUnavailable) { // not a wrong credential: not a failed sign-in
		c.log.Warn("console: sign-in refused", "operator", "oauth", "reason", "unavailable")
		return operator{}, authUnavailable
	}
	if err != nil {
		return operator{}, authNone
	}
	op := operator{via: "oauth", who: PrincipalRef(g.Principal)}
	if !g.HasScope(c.opts.OperatorScope) {
		c.log.Warn("console: sign-in refused", "operator", op.name(), "reason", "insufficient_scope")
		return operator{}, authForbidden
	}
	return op, authOK
}

// sameOrigin checks the browser's view of where a state-changing request
// comes from: Sec-Fetch-Site, when sent, must be same-origin, and Origin,
// when sent, must be this console's own scheme and host. Requests without
// either (non-browser clients) pass: the CSRF token still guards sessions.
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	if err != nil {
		return false
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return u.Scheme == scheme && strings.EqualFold(u.Host, r.Host)
}

// csrfOK checks a state-changing request of op: same origin, and for a
// session the form's CSRF token. Bearer requests carry no ambient
// credential, so a token in the form adds nothing for them.
func (c *Console) csrfOK(r *http.Request, op operator) bool {
	if !sameOrigin(r) {
		return false
	}
	if op.nonce == nil {
		return true
	}
	got := r.PostFormValue("csrf")
	want := c.keys.csrfToken(op.nonce)
	return subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

// setSessionCookie sets (or, with an empty value, clears) the session
// cookie.
func (c *Console) setSessionCookie(w http.ResponseWriter, r *http.Request, value string, expires time.Time) {
	ck := &http.Cookie{
		Name: cookieName, Value: value, Path: c.prefix + "/", HttpOnly: true, Secure: r.TLS != nil,
		SameSite: http.SameSiteStrictMode,
	}
	if value == "" {
		ck.MaxAge = -1
	} else {
		ck.Expires = expires
	}
	http.SetCookie(w, ck)
}
