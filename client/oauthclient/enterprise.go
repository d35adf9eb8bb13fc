package oauthclient

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
)

// Token types of the enterprise flow (RFC 8693 §3; the Identity Assertion
// JWT Authorization Grant draft).
const (
	TokenTypeIDToken = "urn:ietf:params:oauth:token-type:id_token"
	TokenTypeIDJAG   = "urn:ietf:params:oauth:token-type:id-jag"
)

// EnterpriseAuthorization is enterprise-managed authorization (MCP's
// SEP-990, the Identity Assertion JWT Authorization Grant): the user has
// signed in to the enterprise's identity provider (IdP), and the IdP, not
// the user, decides whether this client may reach the MCP server.
//
// For each token it makes two requests. At the IdP's token endpoint, an
// RFC 8693 token exchange of the user's identity assertion (IDToken) for
// an ID-JAG, an assertion whose audience is the MCP server's
// authorization server and whose resource is the MCP server (the request
// names both, and the scopes). Then at the MCP authorization server, the
// RFC 7523 JWT bearer grant with the ID-JAG as the assertion, the client
// authenticated by Options.ClientID and ClientSecret or ClientKey. An
// error at either step is returned as it is (an *AuthorizationError when
// the server sent an OAuth error code); nothing is retried.
type EnterpriseAuthorization struct {
	// IdPTokenURL is the IdP's token endpoint (https, or http on a
	// loopback host).
	IdPTokenURL string
	// IdPClientID is this client's ID at the IdP; IdPClientSecret, when
	// set, authenticates it there (client_secret_basic).
	IdPClientID, IdPClientSecret string
	// IDToken returns the user's identity assertion, an OpenID Connect ID
	// token the IdP issued to IdPClientID (obtained when the user signed
	// in; see AssertionFile).
	IDToken AssertionSource
}

func (*EnterpriseAuthorization) grantType() string { return GrantJWTBearer }

func (g *EnterpriseAuthorization) check(o *Options) []error {
	var errs []error
	if _, err := checkEndpoint("IdPTokenURL", g.IdPTokenURL); err != nil {
		errs = append(errs, err)
	}
	if g.IdPClientID == "" || g.IDToken == nil {
		errs = append(errs, errors.New("EnterpriseAuthorization needs IdPClientID and IDToken"))
	}
	if g.IdPClientSecret != "" && g.IdPClientID == "" {
		errs = append(errs, errors.New("EnterpriseAuthorization: IdPClientSecret needs IdPClientID"))
	}
	if o.ClientID == "" {
		errs = append(errs, errors.New("EnterpriseAuthorization needs ClientID (the client registered at the MCP authorization server)"))
	}
	return errs
}

// params exchanges the identity assertion for an ID-JAG at the IdP and
// returns the JWT bearer grant that presents it.
func (g *EnterpriseAuthorization) params(ctx context.Context, a *Authorizer, t target) (url.Values, error) {
	idToken, err := a.assertion(ctx, g.IDToken)
	if err != nil {
		return nil, err
	}
	form := url.Values{
		"grant_type":           {GrantTokenExchange},
		"requested_token_type": {TokenTypeIDJAG},
		"audience":             {t.issuer},
		"subject_token":        {idToken},
		"subject_token_type":   {TokenTypeIDToken},
	}
	if t.resource != "" {
		form.Set("resource", t.resource)
	}
	if len(t.scopes) > 0 {
		form.Set("scope", strings.Join(t.scopes, " "))
	}
	hdr := http.Header{}
	if g.IdPClientSecret != "" {
		hdr.Set("Authorization", "Basic "+basicAuth(g.IdPClientID, g.IdPClientSecret))
	} else {
		form.Set("client_id", g.IdPClientID)
	}
	a.opts.Logger.Info("oauthclient: exchanging the identity assertion at the IdP", "idp", g.IdPTokenURL)
	_, out, err := a.tokenRequest(ctx, "token exchange", g.IdPTokenURL, form, hdr)
	if err != nil {
		return nil, err
	}
	if out.IssuedTokenType != TokenTypeIDJAG || out.AccessToken == "" {
		return nil, fmt.Errorf("oauthclient: token exchange: the IdP issued %q, not an ID-JAG", out.IssuedTokenType)
	}
	return url.Values{"grant_type": {GrantJWTBearer}, "assertion": {out.AccessToken}}, nil
}
