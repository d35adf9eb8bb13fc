package oauthclient

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"time"
)

// Defaults of Options.
const (
	DefaultTimeout         = 30 * time.Second
	DefaultRedirectTimeout = 5 * time.Minute
	DefaultMaxBodyBytes    = 1 << 20
	DefaultClientName      = "taskwire"
)

// Options configure New. Zero values mean the defaults.
type Options struct {
	// Store keeps tokens and client registrations between runs. Nil keeps
	// them in the Authorizer's memory only.
	Store Store
	// HTTPClient sends the metadata, registration and token requests. Nil:
	// a client of its own that follows no redirects. Its Timeout, if any,
	// applies in addition to Options.Timeout.
	HTTPClient *http.Client
	// Base is the RoundTripper the Authorizer sends MCP requests through.
	// Nil: a clone of http.DefaultTransport.
	Base http.RoundTripper

	// ClientID and ClientSecret are a pre-registered client. Without
	// ClientID the Authorizer uses ClientIDMetadataURL when the
	// authorization server supports Client ID Metadata Documents, and
	// dynamic client registration (RFC 7591) otherwise.
	ClientID, ClientSecret string
	// ClientKey, with ClientID, authenticates the client at the token
	// endpoint with a JWT it signs (private_key_jwt, RFC 7523 §2.2) instead
	// of a secret: an *ecdsa.PrivateKey (P-256, P-384 or P-521), an
	// *rsa.PrivateKey of at least 2048 bits or an ed25519.PrivateKey (see
	// ParsePrivateKey). It excludes ClientSecret. ClientKeyID, when set, is
	// the JWT header's kid.
	ClientKey   crypto.Signer
	ClientKeyID string
	// Grant, when set, obtains tokens with no user (machine to machine):
	// a *ClientCredentials, *JWTBearer or *EnterpriseAuthorization. It
	// excludes OpenURL.
	Grant Grant
	// ClientIDMetadataURL is the https URL of this client's Client ID
	// Metadata Document, used as its client_id where supported.
	ClientIDMetadataURL string
	// ClientName is the client_name sent in dynamic registration. Default
	// "taskwire".
	ClientName string
	// Scopes are requested in addition to the ones the server's challenge
	// (or, without one there, its metadata's scopes_supported) names.
	Scopes []string

	// OpenURL shows the user the authorization URL (a browser, a printed
	// line, or in tests an HTTP GET that an auto-approving server answers
	// with the redirect). The flow then waits for the redirect to the
	// loopback listener. Nil: the Authorizer never starts a flow by itself;
	// RoundTrip then only attaches and refreshes stored tokens, passing a
	// 401 or 403 through, and Login fails.
	OpenURL func(ctx context.Context, authURL string) error
	// RedirectTimeout bounds the wait for the redirect. Default 5 minutes.
	RedirectTimeout time.Duration
	// Timeout bounds each metadata, registration and token request. Default
	// 30 seconds.
	Timeout time.Duration
	// MaxBodyBytes bounds each metadata, registration and refresh
	// response. Default 1 MiB. (The code exchange goes through
	// golang.org/x/oauth2, which reads at most 1 MiB.)
	MaxBodyBytes int64
	// Now is the clock that decides when a token has expired. Default
	// time.Now.
	Now func() time.Time
	// Logger receives diagnostics; tokens and secrets are never logged. Nil
	// discards them.
	Logger *slog.Logger

	// DPoP says when to ask for DPoP-bound tokens (RFC 9449). Default
	// DPoPWhenSupported: when the authorization server advertises ES256.
	DPoP DPoPMode
	// DPoPKey is the ECDSA P-256 key DPoP proofs are signed with. Nil: a
	// new key for each token obtained, kept in the Record with the token.
	DPoPKey *ecdsa.PrivateKey
}

// validate checks every option and returns a copy with defaults filled in.
func (o Options) validate(serverURL string) (Options, *url.URL, error) {
	var errs []error
	u, err := url.Parse(serverURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, errors.New("server URL must be an absolute http or https URL"))
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		errs = append(errs, errors.New("ClientSecret needs ClientID"))
	}
	errs = append(errs, o.checkMachine()...)
	if o.ClientIDMetadataURL != "" {
		cu, err := url.Parse(o.ClientIDMetadataURL)
		if err != nil || cu.Scheme != "https" || cu.Host == "" || cu.Path == "" || cu.Path == "/" {
			errs = append(errs, errors.New("ClientIDMetadataURL must be an https URL with a path"))
		}
	}
	if o.RedirectTimeout < 0 || o.Timeout < 0 || o.MaxBodyBytes < 0 {
		errs = append(errs, errors.New("RedirectTimeout, Timeout and MaxBodyBytes must not be negative"))
	}
	if o.DPoP < DPoPWhenSupported || o.DPoP > DPoPAlways {
		errs = append(errs, fmt.Errorf("DPoP mode %d is unknown", o.DPoP))
	}
	if o.DPoPKey != nil && o.DPoPKey.Curve != elliptic.P256() {
		errs = append(errs, errors.New("DPoPKey must be an ECDSA P-256 key (ES256)"))
	}
	for _, s := range o.Scopes {
		if s == "" || !validScope(s) {
			errs = append(errs, fmt.Errorf("scope %q is not a valid OAuth scope token", s))
		}
	}
	if len(errs) > 0 {
		return o, nil, fmt.Errorf("oauthclient: %w", errors.Join(errs...))
	}
	if o.RedirectTimeout == 0 {
		o.RedirectTimeout = DefaultRedirectTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.ClientName == "" {
		o.ClientName = DefaultClientName
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, u, nil
}

// validScope: RFC 6749 §3.3 scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
func validScope(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// checkMachine checks the options of the machine flows: ClientKey and
// Grant.
func (o Options) checkMachine() []error {
	var errs []error
	if o.ClientKey != nil {
		if o.ClientID == "" {
			errs = append(errs, errors.New("ClientKey needs ClientID"))
		}
		if o.ClientSecret != "" {
			errs = append(errs, errors.New("ClientKey and ClientSecret exclude each other"))
		}
		if _, _, err := jwsAlg(o.ClientKey); err != nil {
			errs = append(errs, err)
		}
	}
	if o.ClientKeyID != "" && o.ClientKey == nil {
		errs = append(errs, errors.New("ClientKeyID needs ClientKey"))
	}
	if o.Grant != nil {
		if o.OpenURL != nil {
			errs = append(errs, errors.New("Grant and OpenURL exclude each other"))
		}
		errs = append(errs, o.Grant.check(&o)...)
	}
	return errs
}
