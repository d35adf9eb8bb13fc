package oauth

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// DPoPMode says whether a ResourceServer accepts DPoP-bound access tokens
// (RFC 9449) and whether it still accepts bearer tokens.
type DPoPMode string

// DPoP modes. Whatever the mode, a token bound to a key (a "cnf" claim
// with "jkt") is never accepted as a bearer token: without its proof it is
// refused like an invalid one.
const (
	// DPoPAllowed (the default) accepts bearer tokens, and DPoP-bound
	// tokens presented with "Authorization: DPoP TOKEN" and a valid proof.
	DPoPAllowed DPoPMode = "allowed"
	// DPoPRequired accepts only DPoP-bound tokens with their proof: a
	// bearer token, and a DPoP request with an unbound token, are refused.
	DPoPRequired DPoPMode = "required"
	// DPoPOff refuses the DPoP scheme: only bearer tokens, and no
	// challenge names DPoP.
	DPoPOff DPoPMode = "off"
)

// Defaults of DPoP.
const (
	// DefaultDPoPMaxProofBytes bounds a DPoP header before it is parsed.
	DefaultDPoPMaxProofBytes = 4 << 10
	// DefaultDPoPMaxProofAge is how old a proof's "iat" may be.
	DefaultDPoPMaxProofAge = time.Minute
	// DefaultDPoPReplayCacheSize bounds the proofs remembered against
	// replay.
	DefaultDPoPReplayCacheSize = 100_000
	// DefaultDPoPNonceLifetime is how long a server-provided nonce is
	// issued before the next one; each is accepted for twice that long.
	DefaultDPoPNonceLifetime = 5 * time.Minute
	// maxJTIBytes bounds a proof's "jti"; maxDPoPWindow bounds
	// MaxProofAge and NonceLifetime.
	maxJTIBytes   = 256
	maxDPoPWindow = 10 * time.Minute
)

// defaultDPoPAlgorithms are the proof algorithms accepted when
// DPoP.Algorithms is empty.
var defaultDPoPAlgorithms = []string{"ES256", "ES384", "ES512", "PS256", "RS256", "EdDSA"}

// DPoP configures the checking of DPoP proofs (RFC 9449). Its zero value
// is DPoPAllowed with the defaults.
type DPoP struct {
	// Mode is DPoPAllowed (""), DPoPRequired or DPoPOff.
	Mode DPoPMode
	// Algorithms are the JWS algorithms a proof may be signed with,
	// advertised in the challenges' algs and the metadata's
	// dpop_signing_alg_values_supported. Empty: ES256, ES384, ES512, PS256,
	// RS256 and EdDSA. Only asymmetric algorithms; never "none".
	Algorithms []string
	// MaxProofBytes bounds the DPoP header before it is parsed. Zero:
	// DefaultDPoPMaxProofBytes.
	MaxProofBytes int
	// MaxProofAge is how far in the past a proof's "iat" may be (a proof
	// may also be Options.Leeway ahead of this server's clock). Zero:
	// DefaultDPoPMaxProofAge; at most 10 minutes.
	MaxProofAge time.Duration
	// ReplayCacheSize bounds the proofs remembered (by a hash of their key
	// and "jti") until they are too old to be accepted anyway. When it is
	// full of proofs still that young, a new proof is not accepted: the
	// request gets HTTP 503 with Retry-After (dpop_busy), and no proof is
	// ever forgotten early. Zero: DefaultDPoPReplayCacheSize.
	ReplayCacheSize int
	// RequireNonce makes every proof carry a nonce this server provided
	// (RFC 9449 §9): a proof without a current one is refused with
	// error="use_dpop_nonce" and a DPoP-Nonce header holding one, and
	// WithMetadata adds a current DPoP-Nonce to every response to a DPoP
	// request. Nonces are derived from a secret the ResourceServer draws
	// at New, so every node of a fleet issues its own: a client that moves
	// to another node is asked for that node's nonce once.
	RequireNonce bool
	// NonceLifetime is how long a nonce is issued before the next one;
	// each is accepted until the one after it is issued. Zero:
	// DefaultDPoPNonceLifetime; at least a second, at most 10 minutes.
	NonceLifetime time.Duration
}

// validate checks d, fills in its defaults and returns a copy.
func (d DPoP) validate(bad func(string, ...any)) DPoP {
	switch d.Mode {
	case "":
		d.Mode = DPoPAllowed
	case DPoPAllowed, DPoPRequired, DPoPOff:
	default:
		bad("oauth: DPoP.Mode %q is not allowed, required or off", d.Mode)
	}
	if len(d.Algorithms) == 0 {
		d.Algorithms = slices.Clone(defaultDPoPAlgorithms)
	}
	for _, a := range d.Algorithms {
		if !slices.Contains(asymmetricAlgorithms, a) {
			bad("oauth: DPoP.Algorithms: %q is not a supported asymmetric algorithm", a)
		}
	}
	for _, f := range []struct {
		name     string
		v        *time.Duration
		def, min time.Duration
	}{
		{"MaxProofAge", &d.MaxProofAge, DefaultDPoPMaxProofAge, time.Second},
		{"NonceLifetime", &d.NonceLifetime, DefaultDPoPNonceLifetime, time.Second},
	} {
		switch {
		case *f.v == 0:
			*f.v = f.def
		case *f.v < f.min || *f.v > maxDPoPWindow:
			bad("oauth: DPoP.%s must be between %v and %v", f.name, f.min, maxDPoPWindow)
		}
	}
	for _, f := range []struct {
		name string
		v    *int
		def  int
	}{
		{"MaxProofBytes", &d.MaxProofBytes, DefaultDPoPMaxProofBytes},
		{"ReplayCacheSize", &d.ReplayCacheSize, DefaultDPoPReplayCacheSize},
	} {
		switch {
		case *f.v < 0:
			bad("oauth: DPoP.%s must not be negative", f.name)
		case *f.v == 0:
			*f.v = f.def
		}
	}
	return d
}

// ParseDPoPMode parses a --auth-dpop value: allowed, required or off.
func ParseDPoPMode(s string) (DPoPMode, error) {
	switch m := DPoPMode(strings.ToLower(strings.TrimSpace(s))); m {
	case DPoPAllowed, DPoPRequired, DPoPOff:
		return m, nil
	}
	return "", fmt.Errorf("DPoP mode %q is not allowed, required or off", s)
}
