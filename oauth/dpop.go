package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/taskwire/taskwire/server"
)

// Categories of refused DPoP requests (RFC 9449). The ones of the proof
// itself are answered with error="invalid_dpop_proof", dpop_nonce with
// error="use_dpop_nonce"; the ones of the token's binding with
// error="invalid_token", like any refused token.
const (
	CategoryDPoPMissing     Category = "dpop_missing"       // the DPoP scheme without exactly one DPoP header
	CategoryDPoPOversized   Category = "dpop_oversized"     // a DPoP header longer than DPoP.MaxProofBytes
	CategoryDPoPMalformed   Category = "dpop_malformed"     // not a proof: typ, jwk, alg, jti or a claim is missing or wrong
	CategoryDPoPSignature   Category = "dpop_bad_signature" // the proof's signature does not verify with its own key
	CategoryDPoPTarget      Category = "dpop_wrong_target"  // htm or htu is not this request's method or URL
	CategoryDPoPStale       Category = "dpop_stale"         // iat is older than DPoP.MaxProofAge, or ahead of the clock beyond the leeway
	CategoryDPoPHash        Category = "dpop_bad_ath"       // ath is not the hash of the presented token
	CategoryDPoPNonce       Category = "dpop_nonce"         // DPoP.RequireNonce and no current nonce: answered with a new one
	CategoryDPoPReplay      Category = "dpop_replay"        // a proof (key and jti) seen before
	CategoryDPoPBusy        Category = "dpop_busy"          // the replay cache is full: HTTP 503
	CategoryDPoPUnproven    Category = "dpop_unproven"      // a token bound to a key, presented as a bearer token
	CategoryDPoPUnbound     Category = "dpop_unbound"       // the DPoP scheme with a token bound to no key
	CategoryDPoPKeyMismatch Category = "dpop_key_mismatch"  // the token is bound to another key than the proof's
	CategoryDPoPRequired    Category = "dpop_required"      // a bearer token where DPoP.Mode is DPoPRequired
	CategoryDPoPOff         Category = "dpop_off"           // the DPoP scheme where DPoP.Mode is DPoPOff
)

// dpopError is the error code of a refused DPoP request's challenge.
func dpopError(c Category) string {
	switch c {
	case CategoryDPoPMissing, CategoryDPoPOversized, CategoryDPoPMalformed, CategoryDPoPSignature,
		CategoryDPoPTarget, CategoryDPoPStale, CategoryDPoPHash, CategoryDPoPReplay:
		return "invalid_dpop_proof"
	case CategoryDPoPNonce:
		return "use_dpop_nonce"
	}
	return "invalid_token"
}

// dpopVerifier checks DPoP proofs for one resource.
type dpopVerifier struct {
	opts   DPoP
	leeway time.Duration
	now    func() time.Time
	parser *jwt.Parser
	origin string // the resource's scheme://host, normalized
	scheme string // the resource's scheme
	algs   string // the algorithms, space-separated, for challenges
	replay *replayCache
	nonces *nonceSource // nil without RequireNonce
}

func newDPoPVerifier(o Options) (*dpopVerifier, error) {
	u, err := url.Parse(o.Resource)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(u.Scheme)
	v := &dpopVerifier{
		opts: o.DPoP, leeway: o.Leeway, now: o.Now,
		parser: jwt.NewParser(jwt.WithValidMethods(o.DPoP.Algorithms), jwt.WithoutClaimsValidation(), jwt.WithStrictDecoding()),
		origin: scheme + "://" + normalHost(scheme, u.Host), scheme: scheme,
		algs:   strings.Join(o.DPoP.Algorithms, " "),
		replay: newReplayCache(o.DPoP.ReplayCacheSize),
	}
	if o.DPoP.RequireNonce {
		if v.nonces, err = newNonceSource(o.DPoP.NonceLifetime, o.Now); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// proof is a verified DPoP proof: its key's thumbprint, and the key under
// which it is remembered against replay.
type proof struct {
	jkt    string
	replay tokenKey
}

var (
	errDPoPHeader = errors.New("oauth: not a DPoP proof header")
	errDPoPKey    = errors.New("oauth: the DPoP proof's jwk is not a usable public key")
)

// check verifies the DPoP proof of req for the access token tok (RFC 9449
// §4.3, §7.1): one DPoP header of at most MaxProofBytes, typ dpop+jwt, an
// allowed algorithm, a public jwk that verifies the signature, a jti, htm
// and htu naming this request, a fresh iat, ath the hash of tok, and a
// current nonce when one is required. It does not look at the replay
// cache: remember does, once the token is known to be good.
func (v *dpopVerifier) check(req *server.AdmissionRequest, tok string) (proof, *tokenError) {
	values := req.Header.Values("DPoP")
	if len(values) != 1 {
		return proof{}, refuse(CategoryDPoPMissing, nil)
	}
	raw := values[0]
	if len(raw) > v.opts.MaxProofBytes {
		return proof{}, refuse(CategoryDPoPOversized, nil)
	}
	if strings.Count(raw, ".") != 2 {
		return proof{}, refuse(CategoryDPoPMalformed, nil)
	}
	var jkt string
	var mc jwt.MapClaims
	_, err := v.parser.ParseWithClaims(raw, &mc, func(t *jwt.Token) (any, error) {
		key, thumb, err := proofKey(t)
		jkt = thumb
		return key, err
	})
	switch {
	case errors.Is(err, jwt.ErrTokenSignatureInvalid) && jkt != "":
		return proof{}, refuse(CategoryDPoPSignature, err)
	case err != nil:
		return proof{}, refuse(CategoryDPoPMalformed, err)
	}
	jti, _ := mc["jti"].(string)
	if jti == "" || len(jti) > maxJTIBytes {
		return proof{}, refuse(CategoryDPoPMalformed, nil)
	}
	if htm, _ := mc["htm"].(string); htm == "" || htm != req.HTTPMethod {
		return proof{}, refuse(CategoryDPoPTarget, nil)
	}
	if htu, _ := mc["htu"].(string); !v.targets(htu, req) {
		return proof{}, refuse(CategoryDPoPTarget, nil)
	}
	iat, err := mc.GetIssuedAt()
	switch now := v.now(); {
	case err != nil || iat == nil:
		return proof{}, refuse(CategoryDPoPMalformed, err)
	case iat.Before(now.Add(-v.opts.MaxProofAge)) || iat.After(now.Add(v.leeway)):
		return proof{}, refuse(CategoryDPoPStale, nil)
	}
	if ath, _ := mc["ath"].(string); ath != tokenHash(tok) {
		return proof{}, refuse(CategoryDPoPHash, nil)
	}
	if v.nonces != nil {
		if n, _ := mc["nonce"].(string); !v.nonces.valid(n) {
			return proof{}, refuse(CategoryDPoPNonce, nil)
		}
	}
	return proof{jkt: jkt, replay: sha256.Sum256([]byte(jkt + "\x00" + jti))}, nil
}

// remember records p against replay, until it would be too old anyway.
func (v *dpopVerifier) remember(p proof) *tokenError {
	now := v.now()
	switch v.replay.add(p.replay, now, now.Add(v.opts.MaxProofAge+v.leeway)) {
	case replayed:
		return refuse(CategoryDPoPReplay, nil)
	case full:
		return unavailable(CategoryDPoPBusy, nil, time.Second)
	}
	return nil
}

// proofKey returns the public key of a proof's header and its RFC 7638
// thumbprint: typ must be dpop+jwt, no crit, and jwk a public key (no
// private member) that fits the algorithm.
func proofKey(t *jwt.Token) (any, string, error) {
	if typ, _ := t.Header["typ"].(string); typ != "dpop+jwt" {
		return nil, "", errDPoPHeader
	}
	if _, ok := t.Header["crit"]; ok {
		return nil, "", errDPoPHeader
	}
	m, ok := t.Header["jwk"].(map[string]any)
	if !ok {
		return nil, "", errDPoPKey
	}
	for _, private := range []string{"d", "p", "q", "dp", "dq", "qi", "oth", "k"} {
		if _, ok := m[private]; ok {
			return nil, "", errDPoPKey
		}
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return nil, "", errDPoPKey
	}
	_, k, ok := parseJWK(raw)
	if !ok || !k.fits(t.Method.Alg()) {
		return nil, "", errDPoPKey
	}
	thumb, err := thumbprint(m)
	if err != nil {
		return nil, "", err
	}
	return k.key, thumb, nil
}

// thumbprint is the RFC 7638 SHA-256 thumbprint of a public JWK,
// base64url: the hash of its required members in lexicographic order.
func thumbprint(m map[string]any) (string, error) {
	var members []string
	switch m["kty"] {
	case "EC":
		members = []string{"crv", "kty", "x", "y"}
	case "RSA":
		members = []string{"e", "kty", "n"}
	case "OKP":
		members = []string{"crv", "kty", "x"}
	default:
		return "", errDPoPKey
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, name := range members {
		s, ok := m[name].(string)
		if !ok {
			return "", errDPoPKey
		}
		if i > 0 {
			b.WriteByte(',')
		}
		q, _ := json.Marshal(s)
		b.WriteString(`"` + name + `":`)
		b.Write(q)
	}
	b.WriteByte('}')
	sum := sha256.Sum256([]byte(b.String()))
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// tokenHash is a proof's ath for tok: base64url(SHA-256(tok)).
func tokenHash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// targets reports whether htu names req: its path is the request's, and
// its scheme and host (normalized as RFC 3986 §6.2.2 and §6.2.3 say:
// case, default port) are the resource's, or the resource's scheme with
// the request's Host. The query and fragment are ignored (RFC 9449 §4.3).
func (v *dpopVerifier) targets(htu string, req *server.AdmissionRequest) bool {
	if htu == "" || req.Path == "" {
		return false
	}
	u, err := url.Parse(htu)
	if err != nil || u.Host == "" || u.User != nil {
		return false
	}
	path := u.Path
	if path == "" {
		path = "/"
	}
	if path != req.Path {
		return false
	}
	scheme := strings.ToLower(u.Scheme)
	host := normalHost(scheme, u.Host)
	return scheme+"://"+host == v.origin || (scheme == v.scheme && req.Host != "" && host == normalHost(scheme, req.Host))
}

// normalHost lower-cases host and drops the scheme's default port.
func normalHost(scheme, host string) string {
	host = strings.ToLower(host)
	switch {
	case scheme == "https" && strings.HasSuffix(host, ":443"):
		return strings.TrimSuffix(host, ":443")
	case scheme == "http" && strings.HasSuffix(host, ":80"):
		return strings.TrimSuffix(host, ":80")
	}
	return host
}
