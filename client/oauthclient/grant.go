package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Grant types of the machine flows (RFC 6749 §4.4, RFC 7523 §2.1, RFC 8693).
const (
	GrantClientCredentials = "client_credentials"
	GrantJWTBearer         = "urn:ietf:params:oauth:grant-type:jwt-bearer"
	GrantTokenExchange     = "urn:ietf:params:oauth:grant-type:token-exchange"
)

// AuthPrivateKeyJWT is the token endpoint authentication method of a client
// that signs a JWT with its private key (RFC 7523 §2.2, Options.ClientKey).
const AuthPrivateKeyJWT = "private_key_jwt"

// clientAssertionType is RFC 7523 §2.2's client_assertion_type.
const clientAssertionType = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"

// Grant obtains tokens with no user present (machine to machine): set
// Options.Grant to a *ClientCredentials, a *JWTBearer or an
// *EnterpriseAuthorization. The Authorizer then discovers the
// authorization server as for the authorization code flow, sends the
// grant's token request (with the RFC 8707 resource and the scopes the
// server names), and runs the grant again when the token has expired or
// the server answers 401 or a 403 insufficient_scope; it keeps no refresh
// token and registers no client. OpenURL must then be nil.
//
// The interface is closed: only this package's grants implement it.
type Grant interface {
	// grantType is the grant_type of the request at the MCP authorization
	// server.
	grantType() string
	// check reports what is wrong with the grant together with o.
	check(o *Options) []error
	// params returns the grant's parameters for the token request at t.
	params(ctx context.Context, a *Authorizer, t target) (url.Values, error)
}

// target is the authorization server a grant's token request goes to.
type target struct {
	issuer, tokenURL, resource string
	scopes                     []string
	// authMethods and grantTypes are the server's advertised ones; nil
	// when unknown.
	authMethods, grantTypes []string
	// dpop is the key the token is asked for with (DPoP, RFC 9449); nil
	// for a bearer token.
	dpop *dpopKey
}

// ClientCredentials is the OAuth client credentials grant (RFC 6749 §4.4;
// MCP's SEP-1046): the client acts on its own behalf, authenticated by
// Options.ClientID with Options.ClientSecret (client_secret_basic, or
// client_secret_post where the server offers only that) or with
// Options.ClientKey (private_key_jwt). One of the two is required.
type ClientCredentials struct{}

func (*ClientCredentials) grantType() string { return GrantClientCredentials }

func (*ClientCredentials) check(o *Options) []error {
	if o.ClientID == "" || (o.ClientSecret == "" && o.ClientKey == nil) {
		return []error{errors.New("ClientCredentials needs ClientID and ClientSecret or ClientKey")}
	}
	return nil
}

func (*ClientCredentials) params(context.Context, *Authorizer, target) (url.Values, error) {
	return url.Values{"grant_type": {GrantClientCredentials}}, nil
}

// JWTBearer is the JWT bearer authorization grant (RFC 7523 §2.1) with an
// assertion the platform issues to the workload (workload identity
// federation, SEP-1933): a Kubernetes service account token, a CI job's
// OIDC token, a cloud instance identity. Assertion is called for every
// token request, so a file the platform rotates is read again; an
// assertion that is a JWT whose exp has passed is refused before it is
// sent (ErrAssertionExpired). The client authenticates as configured
// (Options.ClientSecret or ClientKey), or sends Options.ClientID alone, or
// nothing.
type JWTBearer struct {
	// Assertion returns the JWT to present: AssertionFile,
	// AssertionCommand or StaticAssertion.
	Assertion AssertionSource
}

func (*JWTBearer) grantType() string { return GrantJWTBearer }

func (g *JWTBearer) check(*Options) []error {
	if g.Assertion == nil {
		return []error{errors.New("JWTBearer needs an Assertion")}
	}
	return nil
}

func (g *JWTBearer) params(ctx context.Context, a *Authorizer, _ target) (url.Values, error) {
	assertion, err := a.assertion(ctx, g.Assertion)
	if err != nil {
		return nil, err
	}
	return url.Values{"grant_type": {GrantJWTBearer}, "assertion": {assertion}}, nil
}

// grantLocked discovers the authorization server and runs Options.Grant;
// a.mu must be held.
func (a *Authorizer) grantLocked(ctx context.Context, ch Challenge, scopes []string) (*Record, error) {
	prm, asm, err := a.discover(ctx, ch)
	if err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		scopes = slices.Clone(prm.ScopesSupported)
	}
	key, err := a.dpopKeyFor(asm)
	if err != nil {
		return nil, err
	}
	return a.runGrant(ctx, target{
		issuer: asm.Issuer, tokenURL: asm.TokenEndpoint, resource: prm.Resource,
		scopes:      union(scopes, a.opts.Scopes),
		authMethods: asm.TokenEndpointAuthMethodsSupported, grantTypes: asm.GrantTypesSupported,
		dpop: key,
	})
}

// regrantLocked runs Options.Grant again at the server rec came from, for
// a token that has expired; a.mu must be held.
func (a *Authorizer) regrantLocked(ctx context.Context, rec *Record) (*Record, error) {
	t := target{
		issuer: rec.Issuer, tokenURL: rec.TokenURL, resource: rec.Resource,
		scopes: rec.Scopes, authMethods: []string{rec.AuthMethod},
	}
	if strings.EqualFold(rec.TokenType, TokenTypeDPoP) {
		// The next token is bound to the same key.
		key, err := a.recordKey(rec)
		if err != nil {
			return nil, err
		}
		t.dpop = key
	}
	return a.runGrant(ctx, t)
}

// runGrant sends the grant's token request to t and keeps the token.
func (a *Authorizer) runGrant(ctx context.Context, t target) (*Record, error) {
	g := a.opts.Grant
	if len(t.grantTypes) > 0 && !slices.Contains(t.grantTypes, g.grantType()) {
		return nil, fmt.Errorf("oauthclient: the authorization server does not offer the %s grant (it lists %s)",
			g.grantType(), strings.Join(t.grantTypes, ", "))
	}
	form, err := g.params(ctx, a, t)
	if err != nil {
		return nil, err
	}
	if len(t.scopes) > 0 {
		form.Set("scope", strings.Join(t.scopes, " "))
	}
	if t.resource != "" {
		form.Set("resource", t.resource)
	}
	hdr := http.Header{}
	method, err := a.authenticate(form, hdr, t)
	if err != nil {
		return nil, err
	}
	a.opts.Logger.Info("oauthclient: requesting a token", "issuer", t.issuer, "grant", g.grantType(), "auth", method)
	// With a DPoP key, the token request carries a proof (a.post's
	// client, tokenClient) and the token is bound to the key.
	tok, _, err := a.tokenRequest(withDPoPKey(ctx, t.dpop), "token request", t.tokenURL, form, hdr)
	if err != nil {
		return nil, err
	}
	rec := &Record{
		Resource: t.resource, Issuer: t.issuer, TokenURL: t.tokenURL,
		ClientID: a.opts.ClientID, AuthMethod: method, Scopes: t.scopes, Grant: g.grantType(),
	}
	if err := a.fill(rec, tok); err != nil {
		return nil, err
	}
	if err := a.bindRecord(rec, t.dpop, rec.TokenType); err != nil {
		return nil, err
	}
	// A machine obtains its next token with the grant again (SEP-1046);
	// a refresh token would only be one more secret at rest.
	rec.RefreshToken = ""
	if err := a.keep(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// authenticate adds the client's authentication to a token request at t
// and returns the method: private_key_jwt with Options.ClientKey,
// client_secret_basic or client_secret_post with Options.ClientSecret,
// else the bare client_id when there is one ("none").
func (a *Authorizer) authenticate(form url.Values, hdr http.Header, t target) (string, error) {
	id := a.opts.ClientID
	switch {
	case a.opts.ClientKey != nil:
		assertion, err := a.clientAssertion(t.issuer)
		if err != nil {
			return "", err
		}
		form.Set("client_id", id)
		form.Set("client_assertion_type", clientAssertionType)
		form.Set("client_assertion", assertion)
		return AuthPrivateKeyJWT, nil
	case a.opts.ClientSecret != "":
		supported := t.authMethods
		if len(supported) == 0 {
			supported = []string{AuthBasic} // RFC 8414 §2 default
		}
		m, err := chooseMethod(supported, true)
		if err != nil {
			return "", err
		}
		if m == AuthBasic {
			hdr.Set("Authorization", "Basic "+basicAuth(id, a.opts.ClientSecret))
			return m, nil
		}
		if m == AuthPost {
			form.Set("client_secret", a.opts.ClientSecret)
		}
		form.Set("client_id", id)
		return m, nil
	case id != "":
		form.Set("client_id", id)
	}
	return AuthNone, nil
}

// tokenResponse is an RFC 6749 §5.1 token response, with RFC 8693's
// issued_token_type.
type tokenResponse struct {
	AccessToken     string `json:"access_token"`
	TokenType       string `json:"token_type"`
	RefreshToken    string `json:"refresh_token"`
	ExpiresIn       int64  `json:"expires_in"`
	Scope           string `json:"scope"`
	IssuedTokenType string `json:"issued_token_type"`
}

// tokenRequest posts form to endpoint and returns the token; the raw
// response is returned too for the fields an oauth2.Token does not hold.
func (a *Authorizer) tokenRequest(ctx context.Context, what, endpoint string, form url.Values, hdr http.Header) (*oauth2.Token, *tokenResponse, error) {
	var out tokenResponse
	if err := a.post(ctx, what, endpoint, "application/x-www-form-urlencoded",
		strings.NewReader(form.Encode()), hdr, &out); err != nil {
		return nil, nil, err
	}
	if len(out.AccessToken) > MaxRecordBytes/2 {
		return nil, nil, fmt.Errorf("oauthclient: %s: the access token exceeds %d bytes", what, MaxRecordBytes/2)
	}
	tok := &oauth2.Token{AccessToken: out.AccessToken, TokenType: out.TokenType, RefreshToken: out.RefreshToken}
	if out.ExpiresIn > 0 {
		tok.Expiry = a.opts.Now().Add(time.Duration(out.ExpiresIn) * time.Second)
	}
	if out.Scope != "" {
		tok = tok.WithExtra(map[string]any{"scope": out.Scope})
	}
	return tok, &out, nil
}
