package oauthclient

import (
	"context"
	"errors"
	"net/url"
	"strings"
)

// discover finds the protected resource's metadata and its authorization
// server's. A server that publishes no Protected Resource Metadata (every
// well-known URL answered with a 4xx status) is taken for a 2025-03-26
// server: see discoverLegacy.
func (a *Authorizer) discover(ctx context.Context, ch Challenge) (*resourceMetadata, *serverMetadata, error) {
	prm, err := a.discoverResource(ctx, ch)
	if err != nil {
		if ch.ResourceMetadata != "" || !onlyClientErrors(err) {
			return nil, nil, err
		}
		return a.discoverLegacy(ctx)
	}
	asm, err := a.discoverServer(ctx, prm.AuthorizationServers[0])
	if err != nil {
		return nil, nil, err
	}
	return prm, asm, nil
}

// onlyClientErrors reports whether every metadata request behind err was
// answered with a 4xx status (none failed on the network or with a 5xx).
func onlyClientErrors(err error) bool {
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return false
	}
	errs := joined.Unwrap()
	for _, e := range errs {
		var se *statusError
		if !errors.As(e, &se) || se.status < 400 || se.status > 499 {
			return false
		}
	}
	return len(errs) > 0
}

// discoverLegacy is the discovery of MCP 2025-03-26 ("Server Metadata
// Discovery" and "Fallbacks for Servers without Metadata Discovery"): the
// authorization server is the MCP server's origin (its URL without the
// path), whose RFC 8414 metadata is at the root; when it has none either,
// its endpoints are /authorize, /token and /register there. The resource
// is the MCP server URL.
func (a *Authorizer) discoverLegacy(ctx context.Context) (*resourceMetadata, *serverMetadata, error) {
	origin := a.server.Scheme + "://" + a.server.Host
	prm := &resourceMetadata{Resource: canonicalResource(a.server), AuthorizationServers: []string{origin}}
	a.opts.Logger.Info("oauthclient: no protected resource metadata; using the 2025-03-26 discovery", "issuer", origin)
	asm, err := a.discoverServer(ctx, origin)
	if err == nil {
		return prm, asm, nil
	}
	if !onlyClientErrors(err) {
		return nil, nil, err
	}
	asm = &serverMetadata{
		Issuer:                        origin,
		AuthorizationEndpoint:         origin + "/authorize",
		TokenEndpoint:                 origin + "/token",
		RegistrationEndpoint:          origin + "/register",
		CodeChallengeMethodsSupported: []string{"S256"}, // PKCE is required in 2025-03-26
	}
	for _, e := range []string{asm.AuthorizationEndpoint, asm.TokenEndpoint} {
		if _, err := checkEndpoint("default endpoint", e); err != nil {
			return nil, nil, err
		}
	}
	a.opts.Logger.Info("oauthclient: no authorization server metadata; using the default endpoints", "issuer", origin)
	return prm, asm, nil
}

// canonicalResource is the server URL without fragment and query, as the
// resource indicator of a server that names none.
func canonicalResource(u *url.URL) string {
	c := *u
	c.Fragment, c.RawFragment, c.RawQuery = "", "", ""
	c.Scheme, c.Host = strings.ToLower(c.Scheme), strings.ToLower(c.Host)
	return c.String()
}
