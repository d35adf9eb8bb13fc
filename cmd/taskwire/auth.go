package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

// discoveryTimeout bounds the discovery of the issuer's JWKS at start-up.
const discoveryTimeout = 10 * time.Second

// authFlags are serve's --auth-* flags, which make the node an OAuth 2.1
// resource server (see docs/authorization.md).
type authFlags struct {
	issuer, audience, jwksURL, tenantClaim, scopes *string
}

// addAuthFlags defines the --auth-* flags on fs.
func addAuthFlags(fs *flag.FlagSet) authFlags {
	return authFlags{
		issuer: fs.String("auth-issuer", "", "admit only callers with an access token from this issuer `URL` (exact \"iss\"); "+
			"without it, callers get development identities and serve stays on loopback"),
		audience: fs.String("auth-audience", "", "this server's MCP `URI` (…/mcp), which tokens must name in \"aud\"; required with --auth-issuer"),
		jwksURL: fs.String("auth-jwks-url", "", "`URL` of the issuer's signing keys (default: discovered from the issuer's "+
			"/.well-known/openid-configuration or /.well-known/oauth-authorization-server at start-up)"),
		tenantClaim: fs.String("auth-tenant-claim", "", "token claim `name` holding the caller's tenant (default: each caller is its own tenant)"),
		scopes: fs.String("auth-scopes", "", "required scopes, `NAME=SCOPE,...`: a NAME with a slash is a JSON-RPC method "+
			"(tasks/cancel=tasks:write), else a tool (reports.generate=reports); a NAME given twice needs both scopes"),
	}
}

// given reports whether any --auth-* flag was set.
func (a authFlags) given() bool {
	return *a.issuer != "" || *a.audience != "" || *a.jwksURL != "" || *a.tenantClaim != "" || *a.scopes != ""
}

// resolve builds the resource server the flags describe, or nil without
// them. Without --auth-jwks-url it discovers the issuer's keys, bounded by
// discoveryTimeout. Flags that do not go together or do not parse are a
// *usageError.
func (a authFlags) resolve(ctx context.Context, logger *slog.Logger) (*oauth.ResourceServer, error) {
	if !a.given() {
		return nil, nil
	}
	if *a.issuer == "" || *a.audience == "" {
		return nil, usageErrorf("--auth-issuer and --auth-audience go together")
	}
	if u, err := url.Parse(*a.audience); err != nil || u.Path != demoPath {
		return nil, usageErrorf("--auth-audience %q must be this server's MCP URL, ending in %s", *a.audience, demoPath)
	}
	methods, tools, err := parseScopes(*a.scopes)
	if err != nil {
		return nil, usageErrorf("--auth-scopes: %v", err)
	}
	jwks := *a.jwksURL
	if jwks == "" {
		if jwks, err = oauth.DiscoverJWKS(ctx, nil, *a.issuer, discoveryTimeout); err != nil {
			return nil, fmt.Errorf("%w (or give --auth-jwks-url)", err)
		}
	}
	rs, err := oauth.New(oauth.Options{
		Resource: *a.audience, Issuer: *a.issuer, JWKSURL: jwks, TenantClaim: *a.tenantClaim,
		MethodScopes: methods, ToolScopes: tools, Logger: logger,
	})
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return rs, nil
}

// demoPath is the path of the demo endpoint.
const demoPath = "/mcp"

// parseScopes parses --auth-scopes into method and tool scope lists.
func parseScopes(s string) (methods, tools map[string][]string, err error) {
	if s == "" {
		return nil, nil, nil
	}
	methods, tools = map[string][]string{}, map[string][]string{}
	for pair := range strings.SplitSeq(s, ",") {
		name, scope, ok := strings.Cut(strings.TrimSpace(pair), "=")
		if !ok || name == "" || scope == "" {
			return nil, nil, fmt.Errorf("%q is not NAME=SCOPE", pair)
		}
		m := tools
		if strings.Contains(name, "/") {
			m = methods
		}
		m[name] = append(m[name], scope)
	}
	return methods, tools, nil
}

// loopbackHosts are the Host names a node always accepts.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// allowedHosts returns the Host names serve accepts (server.Options.AllowedHosts):
// nil, the loopback names only, unless there is an audience or a list; else
// the loopback names, the audience URI's host, and the entries of list
// (comma-separated host names or IP addresses without port, or "*").
func allowedHosts(list, audience string) ([]string, error) {
	var extra []string
	if audience != "" {
		u, err := url.Parse(audience)
		if err != nil || u.Hostname() == "" {
			return nil, fmt.Errorf("--auth-audience %q has no host", audience)
		}
		extra = append(extra, strings.ToLower(u.Hostname()))
	}
	if list != "" {
		for h := range strings.SplitSeq(list, ",") {
			h = strings.ToLower(strings.TrimSpace(h))
			if !validHostName(h) {
				return nil, fmt.Errorf("--allowed-hosts: %q is not a host name or IP address without port, or *", h)
			}
			extra = append(extra, h)
		}
	}
	if extra == nil {
		return nil, nil
	}
	hosts := append(slices.Clone(loopbackHosts), extra...)
	slices.Sort(hosts)
	return slices.Compact(hosts), nil
}

// validHostName reports whether h is "*", an IP address, or a DNS name
// (letters, digits, '-', '_' and '.').
func validHostName(h string) bool {
	if h == "*" || net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, c := range h {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// admission is the node's admission controller: the resource server, or
// the development identities without one.
func (c *nodeConfig) admission() server.AdmissionController {
	if c.Auth != nil {
		return c.Auth
	}
	// A caller names itself with development identities: its address
	// bounds its sessions and listens, whatever names it rotates.
	return server.SourceByAddress(server.DevAdmission())
}

// handler is the node's HTTP handler: the MCP server and, with a resource
// server, its metadata.
func (c *nodeConfig) handler(srv *server.Server) http.Handler {
	if c.Auth != nil {
		return c.Auth.WithMetadata(srv)
	}
	return srv
}

// printAuth says how callers are admitted.
func printAuth(w io.Writer, c nodeConfig) {
	switch {
	case c.Auth != nil:
		fmt.Fprintf(w, "taskwire: callers need access tokens for this resource; metadata at %s\n", c.Auth.MetadataURL())
	case c.InsecureDevAuth && !isLoopbackAddr(c.Addr):
		fmt.Fprintln(w, "taskwire: WARNING: development identities on a non-loopback address (--insecure-dev-auth): "+
			"any Bearer NAME is taken as caller NAME, unchecked")
	default:
		fmt.Fprintln(w, "taskwire: development identities (any Bearer NAME is caller NAME, unchecked), so loopback only; "+
			"give --auth-issuer and --auth-audience to require access tokens")
	}
}
