package oauthclient

import (
	"context"
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
