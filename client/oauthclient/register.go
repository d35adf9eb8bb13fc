package oauthclient

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// Token endpoint authentication methods (RFC 7591 §2).
const (
	AuthNone  = "none"
	AuthBasic = "client_secret_basic"
	AuthPost  = "client_secret_post"
)

// maxCredential bounds a registered client ID or secret.
const maxCredential = 4 << 10

// ErrNoRegistration: the authorization server offers no way to register
// this client; pre-register one and pass its ID (Options.ClientID).
var ErrNoRegistration = errors.New("oauthclient: the authorization server supports neither dynamic registration nor Client ID Metadata Documents; a pre-registered client ID is needed")

// registration is a client known to one authorization server.
type registration struct {
	clientID, secret, method string
}

// config is the x/oauth2 configuration of the flow.
func (r registration) config(asm *serverMetadata, redirect string, scopes []string) *oauth2.Config {
	style := oauth2.AuthStyleInParams
	if r.method == AuthBasic {
		style = oauth2.AuthStyleInHeader
	}
	return &oauth2.Config{
		ClientID: r.clientID, ClientSecret: r.secret, RedirectURL: redirect, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: asm.AuthorizationEndpoint, TokenURL: asm.TokenEndpoint, AuthStyle: style},
	}
}

// register returns the client to use with asm: the pre-registered one, the
// one registered earlier with the same issuer, a Client ID Metadata
// Document URL, or a new dynamic registration. A registration is never
// carried to another issuer.
func (a *Authorizer) register(ctx context.Context, asm *serverMetadata, redirect string) (registration, error) {
	supported := asm.TokenEndpointAuthMethodsSupported
	if len(supported) == 0 {
		supported = []string{AuthBasic} // RFC 8414 §2 default
	}
	if a.opts.ClientID != "" {
		m, err := chooseMethod(supported, a.opts.ClientSecret != "")
		return registration{a.opts.ClientID, a.opts.ClientSecret, m}, err
	}
	if prev := a.rec; prev != nil && prev.Issuer == asm.Issuer && prev.ClientID != "" {
		return registration{prev.ClientID, prev.ClientSecret, prev.AuthMethod}, nil
	}
	if asm.ClientIDMetadataDocumentSupported && a.opts.ClientIDMetadataURL != "" {
		return registration{clientID: a.opts.ClientIDMetadataURL, method: AuthNone}, nil
	}
	if asm.RegistrationEndpoint == "" {
		return registration{}, ErrNoRegistration
	}
	return a.registerDynamic(ctx, asm, supported, redirect)
}

// chooseMethod picks how to authenticate at the token endpoint.
func chooseMethod(supported []string, hasSecret bool) (string, error) {
	if hasSecret {
		for _, m := range []string{AuthBasic, AuthPost} {
			if slices.Contains(supported, m) {
				return m, nil
			}
		}
	}
	if slices.Contains(supported, AuthNone) {
		return AuthNone, nil
	}
	return "", fmt.Errorf("oauthclient: the token endpoint supports none of our authentication methods (it lists %s)", strings.Join(supported, ", "))
}

// registerDynamic registers a native client (RFC 7591), preferring a
// public one.
func (a *Authorizer) registerDynamic(ctx context.Context, asm *serverMetadata, supported []string, redirect string) (registration, error) {
	method := AuthNone
	if !slices.Contains(supported, AuthNone) {
		var err error
		if method, err = chooseMethod(supported, true); err != nil {
			return registration{}, err
		}
	}
	body, _ := json.Marshal(map[string]any{
		"client_name":                a.opts.ClientName,
		"redirect_uris":              []string{redirect},
		"grant_types":                []string{"authorization_code", "refresh_token"},
		"response_types":             []string{"code"},
		"token_endpoint_auth_method": method,
		"application_type":           "native",
	})
	var out struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthMethod   string `json:"token_endpoint_auth_method"`
	}
	if err := a.post(ctx, "client registration", asm.RegistrationEndpoint, "application/json", bytes.NewReader(body), nil, &out); err != nil {
		return registration{}, err
	}
	if out.ClientID == "" || len(out.ClientID) > maxCredential || len(out.ClientSecret) > maxCredential {
		return registration{}, errors.New("oauthclient: client registration: no usable client_id")
	}
	if out.AuthMethod != "" {
		method = out.AuthMethod
	}
	switch {
	case method == AuthNone:
		out.ClientSecret = ""
	case (method == AuthBasic || method == AuthPost) && out.ClientSecret != "":
	default:
		return registration{}, fmt.Errorf("oauthclient: client registration: unusable authentication method %q", method)
	}
	a.opts.Logger.Info("oauthclient: registered client", "issuer", asm.Issuer, "method", method)
	return registration{out.ClientID, out.ClientSecret, method}, nil
}

// post sends body to endpoint and decodes a 200 or 201 JSON answer into v;
// an OAuth error answer becomes an *AuthorizationError.
func (a *Authorizer) post(ctx context.Context, what, endpoint, contentType string, body io.Reader, hdr http.Header, v any) error {
	if _, err := checkEndpoint(what, endpoint); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, body)
	if err != nil {
		return fmt.Errorf("oauthclient: %s: %w", what, err)
	}
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Accept", "application/json")
	resp, err := a.tokenClient(ctx).Do(req) // a.hc, with DPoP proofs for a DPoP token request
	if err != nil {
		return fmt.Errorf("oauthclient: %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		if decodeBounded(resp.Body, 16<<10, what, &oe) == nil && oe.Error != "" {
			return &AuthorizationError{Code: oe.Error, Description: oe.Description}
		}
		return fmt.Errorf("oauthclient: %s: HTTP %d", what, resp.StatusCode)
	}
	return decodeBounded(resp.Body, a.opts.MaxBodyBytes, what, v)
}

// refreshLocked redeems rec's refresh token (RFC 6749 §6) with the RFC 8707
// resource parameter, and keeps the new token; a.mu must be held.
func (a *Authorizer) refreshLocked(ctx context.Context, rec *Record) (*Record, error) {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rec.RefreshToken}}
	if rec.Resource != "" {
		form.Set("resource", rec.Resource)
	}
	hdr := http.Header{}
	switch rec.AuthMethod {
	case AuthBasic:
		hdr.Set("Authorization", "Basic "+basicAuth(rec.ClientID, rec.ClientSecret))
	case AuthPost:
		form.Set("client_id", rec.ClientID)
		form.Set("client_secret", rec.ClientSecret)
	default:
		form.Set("client_id", rec.ClientID)
	}
	var out struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		RefreshToken string `json:"refresh_token"`
		ExpiresIn    int64  `json:"expires_in"`
		Scope        string `json:"scope"`
	}
	var key *dpopKey
	if rec.TokenType == TokenTypeDPoP { // RFC 9449 §5: a refresh with the token's key
		var err error
		if key, err = a.recordKey(rec); err != nil {
			return nil, err
		}
	}
	if err := a.post(withDPoPKey(ctx, key), "token refresh", rec.TokenURL, "application/x-www-form-urlencoded",
		strings.NewReader(form.Encode()), hdr, &out); err != nil {
		return nil, err
	}
	tok := &oauth2.Token{AccessToken: out.AccessToken, TokenType: out.TokenType, RefreshToken: out.RefreshToken}
	if out.ExpiresIn > 0 {
		tok.Expiry = a.opts.Now().Add(time.Duration(out.ExpiresIn) * time.Second)
	}
	if out.Scope != "" {
		tok = tok.WithExtra(map[string]any{"scope": out.Scope})
	}
	next := *rec
	if err := a.fill(&next, tok); err != nil {
		return nil, err
	}
	if err := a.bindRecord(&next, key, next.TokenType); err != nil {
		return nil, err
	}
	if out.Scope == "" {
		next.Granted = rec.Granted
	}
	if err := a.keep(&next); err != nil {
		return nil, err
	}
	return &next, nil
}

// basicAuth is RFC 6749 §2.3.1: both halves form-encoded, then base64.
func basicAuth(id, secret string) string {
	return base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(id) + ":" + url.QueryEscape(secret)))
}
