package oauthclient

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Challenge is the Bearer challenge of a WWW-Authenticate header (RFC 6750
// and RFC 9728 §5.1).
type Challenge struct {
	// ResourceMetadata is the resource_metadata URL, if any.
	ResourceMetadata string
	// Scopes are the scope parameter's scopes, if any.
	Scopes []string
	// Error is the error parameter, for example "invalid_token" or
	// "insufficient_scope".
	Error string
}

// ParseChallenge returns the first Bearer or DPoP (RFC 9449 §7.1)
// challenge of a WWW-Authenticate header value, and false when it has
// none. Unknown parameters are ignored; a malformed header yields what
// could be read before the fault.
func ParseChallenge(header string) (Challenge, bool) {
	return challengeOf(header, "Bearer", TokenTypeDPoP)
}

// challengeOf returns the first challenge of header for one of schemes.
func challengeOf(header string, schemes ...string) (Challenge, bool) {
	var c Challenge
	s := header
	for s != "" {
		s = strings.TrimLeft(s, " \t,")
		scheme := s
		if i := strings.IndexAny(s, " \t"); i >= 0 {
			scheme, s = s[:i], s[i:]
		} else {
			s = ""
		}
		bearer := slices.ContainsFunc(schemes, func(s string) bool { return strings.EqualFold(scheme, s) })
		// auth-params until the next scheme token (a token not followed by '=').
		for {
			s = strings.TrimLeft(s, " \t,")
			name, rest, ok := cutToken(s)
			if !ok || !strings.HasPrefix(strings.TrimLeft(rest, " \t"), "=") {
				break
			}
			rest = strings.TrimLeft(strings.TrimLeft(rest, " \t")[1:], " \t")
			var value string
			value, s, ok = cutValue(rest)
			if !ok {
				return c, bearer
			}
			if !bearer {
				continue
			}
			switch strings.ToLower(name) {
			case "resource_metadata":
				c.ResourceMetadata = value
			case "scope":
				c.Scopes = strings.Fields(value)
			case "error":
				c.Error = value
			}
		}
		if bearer {
			return c, true
		}
	}
	return c, false
}

func cutToken(s string) (tok, rest string, ok bool) {
	i := 0
	for i < len(s) && s[i] > ' ' && s[i] < 0x7f && !strings.ContainsRune("=,\"", rune(s[i])) {
		i++
	}
	return s[:i], s[i:], i > 0
}

func cutValue(s string) (value, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		tok, rest, ok := cutToken(s)
		return tok, rest, ok
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return "", "", false
}

// resourceMetadata is an RFC 9728 Protected Resource Metadata document (the
// members this package uses).
type resourceMetadata struct {
	Resource             string   `json:"resource"`
	AuthorizationServers []string `json:"authorization_servers"`
	ScopesSupported      []string `json:"scopes_supported"`
}

// serverMetadata is an RFC 8414 authorization server metadata document
// (the members this package uses).
type serverMetadata struct {
	Issuer                            string   `json:"issuer"`
	AuthorizationEndpoint             string   `json:"authorization_endpoint"`
	TokenEndpoint                     string   `json:"token_endpoint"`
	RegistrationEndpoint              string   `json:"registration_endpoint"`
	ScopesSupported                   []string `json:"scopes_supported"`
	CodeChallengeMethodsSupported     []string `json:"code_challenge_methods_supported"`
	TokenEndpointAuthMethodsSupported []string `json:"token_endpoint_auth_methods_supported"`
	GrantTypesSupported               []string `json:"grant_types_supported"`
	ClientIDMetadataDocumentSupported bool     `json:"client_id_metadata_document_supported"`
	IssParameterSupported             bool     `json:"authorization_response_iss_parameter_supported"`
	DPoPSigningAlgValuesSupported     []string `json:"dpop_signing_alg_values_supported"` // RFC 9449 §5.1
}

// ErrResourceMismatch: the protected resource metadata names a resource
// that does not cover the server URL, so a token for it must not be sent
// there.
var ErrResourceMismatch = errors.New("oauthclient: the protected resource metadata names another resource")

// ErrIssuerMismatch: authorization server metadata (or an authorization
// response's iss parameter) names an issuer other than the one it was
// fetched for.
var ErrIssuerMismatch = errors.New("oauthclient: the authorization server's issuer does not match")

// statusError is a metadata request answered with an unexpected status.
type statusError struct {
	url    string
	status int
}

func (e *statusError) Error() string {
	return fmt.Sprintf("oauthclient: GET %s: HTTP %d", e.url, e.status)
}

// checkEndpoint refuses URLs that are not absolute http(s) URLs, and plain
// http to anything but a loopback host.
func checkEndpoint(what, raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") || u.User != nil {
		return nil, fmt.Errorf("oauthclient: %s %q is not an absolute http(s) URL", what, raw)
	}
	if u.Fragment != "" {
		return nil, fmt.Errorf("oauthclient: %s %q has a fragment", what, raw)
	}
	if u.Scheme == "http" && !isLoopback(u.Hostname()) {
		return nil, fmt.Errorf("oauthclient: %s %q must use https", what, raw)
	}
	return u, nil
}

func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// getJSON fetches raw and decodes its JSON body into v, at most max bytes.
func (a *Authorizer) getJSON(ctx context.Context, what, raw string, v any) error {
	if _, err := checkEndpoint(what, raw); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return fmt.Errorf("oauthclient: %s: %w", what, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := a.hc.Do(req)
	if err != nil {
		return fmt.Errorf("oauthclient: %s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4<<10))
		return &statusError{url: raw, status: resp.StatusCode}
	}
	return decodeBounded(resp.Body, a.opts.MaxBodyBytes, what, v)
}

func decodeBounded(r io.Reader, max int64, what string, v any) error {
	data, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return fmt.Errorf("oauthclient: %s: %w", what, err)
	}
	if int64(len(data)) > max {
		return fmt.Errorf("oauthclient: %s: the response exceeds %d bytes", what, max)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("oauthclient: %s: not a JSON object: %w", what, err)
	}
	return nil
}

// wellKnown inserts the well-known suffix between u's host and path (RFC
// 8414 §3.1, RFC 9728 §3.1): https://h/.well-known/SUFFIX/PATH.
func wellKnown(u *url.URL, suffix string) string {
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + "/.well-known/" + suffix + path
}

// resourceMetadataURLs lists where to look for the protected resource
// metadata, in order: the challenge's URL, the path-inserted well-known URL,
// the root one.
func resourceMetadataURLs(server *url.URL, challenge string) []string {
	var urls []string
	if challenge != "" {
		urls = append(urls, challenge)
	}
	if p := strings.TrimSuffix(server.EscapedPath(), "/"); p != "" {
		urls = append(urls, wellKnown(server, "oauth-protected-resource"))
	}
	root := *server
	root.Path, root.RawPath = "", ""
	return append(urls, wellKnown(&root, "oauth-protected-resource"))
}

// discoverResource fetches the protected resource metadata and checks that
// its resource covers the server URL.
func (a *Authorizer) discoverResource(ctx context.Context, ch Challenge) (*resourceMetadata, error) {
	var errs []error
	for _, u := range resourceMetadataURLs(a.server, ch.ResourceMetadata) {
		var md resourceMetadata
		err := a.getJSON(ctx, "protected resource metadata", u, &md)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if !covers(md.Resource, a.server) {
			return nil, fmt.Errorf("%w: %q does not cover %s", ErrResourceMismatch, md.Resource, a.serverURL)
		}
		if len(md.AuthorizationServers) == 0 {
			return nil, errors.New("oauthclient: the protected resource metadata names no authorization server")
		}
		return &md, nil
	}
	return nil, fmt.Errorf("oauthclient: no protected resource metadata: %w", errors.Join(errs...))
}

// covers reports whether resource identifies server: the same scheme, host
// and port, and a path that is server's path or a parent of it on a
// segment boundary.
func covers(resource string, server *url.URL) bool {
	r, err := url.Parse(resource)
	if err != nil || r.Fragment != "" || !strings.EqualFold(r.Scheme, server.Scheme) || !strings.EqualFold(r.Host, server.Host) {
		return false
	}
	rp := strings.TrimSuffix(r.Path, "/")
	sp := strings.TrimSuffix(server.Path, "/")
	return rp == "" || rp == sp || strings.HasPrefix(sp, rp+"/")
}

// serverMetadataURLs lists where to look for the metadata of issuer, in
// order (MCP authorization, "Authorization Server Metadata Discovery").
func serverMetadataURLs(issuer *url.URL) []string {
	if strings.TrimSuffix(issuer.EscapedPath(), "/") == "" {
		return []string{wellKnown(issuer, "oauth-authorization-server"), wellKnown(issuer, "openid-configuration")}
	}
	return []string{
		wellKnown(issuer, "oauth-authorization-server"),
		wellKnown(issuer, "openid-configuration"),
		strings.TrimSuffix(issuer.String(), "/") + "/.well-known/openid-configuration",
	}
}

// discoverServer fetches issuer's metadata and checks its issuer and its
// endpoints (PKCE support is the authorization code flow's to check).
func (a *Authorizer) discoverServer(ctx context.Context, issuer string) (*serverMetadata, error) {
	iu, err := checkEndpoint("authorization server", issuer)
	if err != nil {
		return nil, err
	}
	if iu.RawQuery != "" {
		return nil, fmt.Errorf("oauthclient: authorization server %q has a query", issuer)
	}
	var errs []error
	for _, u := range serverMetadataURLs(iu) {
		var md serverMetadata
		err := a.getJSON(ctx, "authorization server metadata", u, &md)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		// RFC 8414 §3.3: the issuer must be identical, byte for byte.
		if md.Issuer != issuer {
			return nil, fmt.Errorf("%w: metadata fetched for %q names %q", ErrIssuerMismatch, issuer, md.Issuer)
		}
		for _, e := range [][2]string{
			{"authorization endpoint", md.AuthorizationEndpoint},
			{"token endpoint", md.TokenEndpoint},
			{"registration endpoint", md.RegistrationEndpoint},
		} {
			if e[1] == "" && e[0] != "token endpoint" {
				continue
			}
			if _, err := checkEndpoint(e[0], e[1]); err != nil {
				return nil, err
			}
		}
		return &md, nil
	}
	return nil, fmt.Errorf("oauthclient: no authorization server metadata for %s: %w", issuer, errors.Join(errs...))
}
