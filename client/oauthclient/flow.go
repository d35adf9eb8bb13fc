package oauthclient

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// ErrStateMismatch: the redirect's state parameter is not the one this
// flow sent, so the response belongs to another flow (or to an attacker).
var ErrStateMismatch = errors.New("oauthclient: the authorization response's state does not match")

// AuthorizationError is an error the authorization server sent back on the
// redirect or from its token endpoint (RFC 6749 §4.1.2.1, §5.2).
type AuthorizationError struct {
	Code        string // for example "access_denied"
	Description string
}

// Error implements error.
func (e *AuthorizationError) Error() string {
	if e.Description == "" {
		return "oauthclient: authorization server: " + e.Code
	}
	return "oauthclient: authorization server: " + e.Code + ": " + e.Description
}

// callbackPath is the loopback redirect URI's path.
const callbackPath = "/callback"

// flowLocked runs discovery, registration and the authorization code flow
// (or, with Options.Grant, the machine grant), and keeps the token; a.mu
// must be held.
func (a *Authorizer) flowLocked(ctx context.Context, ch Challenge, scopes []string) (*Record, error) {
	if a.opts.Grant != nil {
		return a.grantLocked(ctx, ch, scopes)
	}
	if a.opts.OpenURL == nil {
		return nil, ErrNoOpenURL
	}
	prm, asm, err := a.discover(ctx, ch)
	if err != nil {
		return nil, err
	}
	issuer := asm.Issuer
	if asm.AuthorizationEndpoint == "" {
		return nil, errors.New("oauthclient: the authorization server has no authorization endpoint")
	}
	if !slices.Contains(asm.CodeChallengeMethodsSupported, "S256") {
		return nil, errors.New("oauthclient: the authorization server does not advertise PKCE S256")
	}
	key, err := a.dpopKeyFor(asm)
	if err != nil {
		return nil, err
	}
	if len(scopes) == 0 {
		scopes = slices.Clone(prm.ScopesSupported)
	}
	scopes = union(scopes, a.opts.Scopes)
	// SEP-2207: ask for a refresh token where the server offers one.
	if slices.Contains(asm.ScopesSupported, "offline_access") && !slices.Contains(scopes, "offline_access") {
		scopes = append(scopes, "offline_access")
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oauthclient: loopback listener: %w", err)
	}
	redirect := fmt.Sprintf("http://%s%s", ln.Addr().String(), callbackPath)
	cb := newCallback(ln)
	defer cb.close()

	reg, err := a.register(ctx, asm, redirect)
	if err != nil {
		return nil, err
	}
	cfg := reg.config(asm, redirect, scopes)
	verifier := oauth2.GenerateVerifier()
	state := randomString()
	resource := oauth2.SetAuthURLParam("resource", prm.Resource)
	authURL := cfg.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), resource)

	a.opts.Logger.Info("oauthclient: authorizing", "issuer", issuer, "scopes", strings.Join(scopes, " "))
	if err := a.opts.OpenURL(ctx, authURL); err != nil {
		return nil, fmt.Errorf("oauthclient: open the authorization URL: %w", err)
	}
	code, err := cb.wait(ctx, a.opts.RedirectTimeout, state, asm)
	if err != nil {
		return nil, err
	}

	xctx, cancel := context.WithTimeout(context.WithValue(ctx, oauth2.HTTPClient, a.tokenClient(withDPoPKey(ctx, key))), a.opts.Timeout)
	defer cancel()
	tok, err := cfg.Exchange(xctx, code, oauth2.VerifierOption(verifier), resource)
	if err != nil {
		return nil, tokenError(err)
	}
	rec := &Record{
		Resource: prm.Resource, Issuer: issuer, TokenURL: asm.TokenEndpoint,
		ClientID: reg.clientID, ClientSecret: reg.secret, AuthMethod: reg.method, Scopes: scopes,
	}
	if err := a.fill(rec, tok); err != nil {
		return nil, err
	}
	if err := a.bindRecord(rec, key, rec.TokenType); err != nil {
		return nil, err
	}
	if err := a.keep(rec); err != nil {
		return nil, err
	}
	return rec, nil
}

// fill copies tok into rec, checking its type.
func (a *Authorizer) fill(rec *Record, tok *oauth2.Token) error {
	if tok.AccessToken == "" {
		return errors.New("oauthclient: the token response has no access_token")
	}
	typ := "Bearer"
	switch {
	case strings.EqualFold(tok.Type(), TokenTypeDPoP):
		typ = TokenTypeDPoP // bindRecord checks that a key was asked for
	case !strings.EqualFold(tok.Type(), "Bearer"):
		return fmt.Errorf("oauthclient: unsupported token type %q", tok.Type())
	}
	rec.AccessToken, rec.TokenType, rec.Expiry = tok.AccessToken, typ, tok.Expiry
	if tok.RefreshToken != "" {
		rec.RefreshToken = tok.RefreshToken
	}
	rec.Granted = nil
	if s, ok := tok.Extra("scope").(string); ok {
		rec.Granted = strings.Fields(s)
	}
	return nil
}

// tokenError turns an x/oauth2 error into an AuthorizationError where the
// server sent an OAuth error code. The response body is not kept.
func tokenError(err error) error {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) && re.ErrorCode != "" {
		return &AuthorizationError{Code: re.ErrorCode, Description: re.ErrorDescription}
	}
	if errors.As(err, &re) {
		return fmt.Errorf("oauthclient: token request: HTTP %d", re.Response.StatusCode)
	}
	return fmt.Errorf("oauthclient: token request: %w", err)
}

func randomString() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	return base64.RawURLEncoding.EncodeToString(b)
}

// callback is the loopback redirect listener of one flow.
type callback struct {
	srv    *http.Server
	done   chan struct{} // closed when Serve returned
	result chan callbackResult
}

type callbackResult struct {
	state, code, iss string
	hasIss           bool
	errCode, errDesc string
}

func newCallback(ln net.Listener) *callback {
	cb := &callback{done: make(chan struct{}), result: make(chan callbackResult, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+callbackPath, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		iss, hasIss := q["iss"]
		res := callbackResult{
			state: q.Get("state"), code: q.Get("code"), hasIss: hasIss,
			errCode: q.Get("error"), errDesc: q.Get("error_description"),
		}
		if hasIss {
			res.iss = iss[0]
		}
		select {
		case cb.result <- res:
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			fmt.Fprintln(w, "Authorization received. You can close this window.")
		default:
			http.Error(w, "this authorization flow has already received its response", http.StatusConflict)
		}
	})
	cb.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: 16 << 10}
	go func() {
		defer close(cb.done)
		_ = cb.srv.Serve(ln)
	}()
	return cb
}

func (cb *callback) close() {
	_ = cb.srv.Close()
	<-cb.done
}

// wait returns the authorization code of the first redirect, after the
// state and RFC 9207 iss checks.
func (cb *callback) wait(ctx context.Context, timeout time.Duration, state string, asm *serverMetadata) (string, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	var res callbackResult
	select {
	case res = <-cb.result:
	case <-t.C:
		return "", fmt.Errorf("oauthclient: no authorization response within %v", timeout)
	case <-ctx.Done():
		return "", fmt.Errorf("oauthclient: waiting for the authorization response: %w", ctx.Err())
	}
	if res.state != state {
		return "", ErrStateMismatch
	}
	// RFC 9207: a present iss must be the issuer exactly; a server that
	// advertises the parameter must send it.
	if res.hasIss && res.iss != asm.Issuer {
		return "", fmt.Errorf("%w: the authorization response names %q", ErrIssuerMismatch, res.iss)
	}
	if !res.hasIss && asm.IssParameterSupported {
		return "", fmt.Errorf("%w: the authorization response has no iss parameter", ErrIssuerMismatch)
	}
	if res.errCode != "" {
		return "", &AuthorizationError{Code: res.errCode, Description: res.errDesc}
	}
	if res.code == "" {
		return "", errors.New("oauthclient: the authorization response has no code")
	}
	return res.code, nil
}
