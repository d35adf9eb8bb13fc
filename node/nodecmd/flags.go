package nodecmd

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/taskwire/taskwire/console"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/server"
)

// adminAddrFlag is --admin-addr. Set accepts PORT, :PORT (both meaning
// 127.0.0.1:PORT) or HOST:PORT; any other value is a usage error. hosts
// is --admin-allowed-hosts.
type adminAddrFlag struct {
	addr  string
	hosts []string
}

// addAdminFlag defines --admin-addr and --admin-allowed-hosts on fs.
func addAdminFlag(fs *flag.FlagSet) *adminAddrFlag {
	f := &adminAddrFlag{}
	fs.Var(f, "admin-addr", "`address` of the admin listener (/metrics, /healthz, /readyz): PORT or :PORT for 127.0.0.1, "+
		"or HOST:PORT; off when empty (the default)")
	fs.Func("admin-allowed-hosts", "more `hosts` whose name a request's Host header on --admin-addr may carry, comma-separated, "+
		"without port (the name monitoring reaches it by); the loopback names and IP addresses are always accepted", f.setHosts)
	return f
}

// setHosts parses --admin-allowed-hosts.
func (f *adminAddrFlag) setHosts(v string) error {
	for h := range strings.SplitSeq(v, ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		if !validHostName(h) {
			return fmt.Errorf("%q is not a host name or IP address without port, or *", h)
		}
		f.hosts = append(f.hosts, h)
	}
	return nil
}

// check is the usage check of the two flags together.
func (f *adminAddrFlag) check() error {
	if f.hosts != nil && f.addr == "" {
		return usageErrorf("--admin-allowed-hosts needs --admin-addr")
	}
	return nil
}

func (f *adminAddrFlag) String() string { return f.addr }

func (f *adminAddrFlag) Set(v string) error {
	addr, err := parseAdminAddr(v)
	if err != nil {
		return err
	}
	f.addr = addr
	return nil
}

// parseAdminAddr resolves a --admin-addr value: "" is off, a bare port or
// ":PORT" is loopback, a host is taken only when named.
func parseAdminAddr(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	host, port := "", v
	if _, err := strconv.Atoi(v); err != nil {
		var splitErr error
		if host, port, splitErr = net.SplitHostPort(v); splitErr != nil {
			return "", fmt.Errorf("want PORT, :PORT or HOST:PORT, got %q", v)
		}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return "", fmt.Errorf("the port of %q must be a number from 0 to 65535", v)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// The operator console (package console) on the admin listener of serve:
// mounted at /console when --admin-addr is set and an operator token is
// configured with --admin-token-file or TASKWIRE_ADMIN_TOKEN. With
// --auth-issuer, access tokens that grant --console-scope are admitted too.

// adminTokenEnv names the variable that may hold the operator token.
const adminTokenEnv = "TASKWIRE_ADMIN_TOKEN"

// maxTokenFile bounds the bytes read from --admin-token-file.
const maxTokenFile = 4096

// consoleFlags are serve's console flags.
type consoleFlags struct {
	tokenFile *string
	showArgs  *bool
	scope     *string
}

// addConsoleFlags defines --admin-token-file, --console-show-arguments and
// --console-scope on fs.
func addConsoleFlags(fs *flag.FlagSet) consoleFlags {
	return consoleFlags{
		tokenFile: fs.String("admin-token-file", "", "`file` holding the operator token of the console at /console on --admin-addr "+
			"(at least 16 bytes; or set "+adminTokenEnv+"); without one the console is off"),
		showArgs: fs.Bool("console-show-arguments", false, "show tasks' tool arguments on the console's task pages"),
		scope: fs.String("console-scope", console.DefaultOperatorScope, "with --auth-issuer, the console also admits access tokens "+
			"that grant this `scope`"),
	}
}

// config reads the operator token: the file when given (surrounding white
// space removed), else the environment variable. Both at once is an
// error, as is a token shorter than console.MinTokenLen, or a
// --console-scope other than the default without rs (--auth-issuer);
// console.New checks the scope itself. Flags that do not go together are
// a *UsageError.
func (f consoleFlags) config(getenv func(string) string, adminAddr string, rs *oauth.ResourceServer) (node.Console, error) {
	if rs == nil && *f.scope != console.DefaultOperatorScope {
		return node.Console{}, usageErrorf("--console-scope needs --auth-issuer: it is the scope of access tokens")
	}
	env := getenv(adminTokenEnv)
	var tok []byte
	switch {
	case *f.tokenFile != "" && env != "":
		return node.Console{}, usageErrorf("give the operator token with --admin-token-file or %s, not both", adminTokenEnv)
	case *f.tokenFile != "":
		b, err := readTokenFile(*f.tokenFile)
		if err != nil {
			return node.Console{}, err
		}
		tok = b
	case env != "":
		tok = bytes.TrimSpace([]byte(env))
	}
	if tok == nil {
		return node.Console{ShowArguments: *f.showArgs}, nil
	}
	if adminAddr == "" {
		return node.Console{}, usageErrorf("an operator token needs --admin-addr: the console is served on the admin listener")
	}
	if len(tok) < console.MinTokenLen {
		return node.Console{}, fmt.Errorf("the operator token must be at least %d bytes", console.MinTokenLen)
	}
	return node.Console{Token: tok, ShowArguments: *f.showArgs, Scope: *f.scope, OAuth: rs}, nil
}

func readTokenFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--admin-token-file: %w", err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, maxTokenFile+1))
	if err != nil {
		return nil, fmt.Errorf("--admin-token-file: %w", err)
	}
	if len(b) > maxTokenFile {
		return nil, fmt.Errorf("--admin-token-file holds more than %d bytes", maxTokenFile)
	}
	return bytes.TrimSpace(b), nil
}

// discoveryTimeout bounds the discovery of the issuer's JWKS at start-up.
const discoveryTimeout = 10 * time.Second

// authFlags are serve's --auth-* flags, which make the node an OAuth 2.1
// resource server (see docs/authorization.md).
type authFlags struct {
	issuer, audience, jwksURL, tenantClaim, scopes *string
	dpop                                           *string // --auth-dpop
	dpopNonce                                      *bool   // --auth-dpop-nonce
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
		dpop: fs.String("auth-dpop", string(oauth.DPoPAllowed), "DPoP-bound access tokens (RFC 9449): `allowed` next to bearer tokens, "+
			"required (bearer tokens are refused) or off; a token bound to a key is never accepted without its proof"),
		dpopNonce: fs.Bool("auth-dpop-nonce", false, "require DPoP proofs to carry a nonce this server issues (DPoP-Nonce header)"),
	}
}

// given reports whether any --auth-* flag was set.
func (a authFlags) given() bool {
	return *a.issuer != "" || *a.audience != "" || *a.jwksURL != "" || *a.tenantClaim != "" || *a.scopes != "" ||
		*a.dpop != string(oauth.DPoPAllowed) || *a.dpopNonce
}

// resolve builds the resource server the flags describe, or nil without
// them. Without --auth-jwks-url it discovers the issuer's keys, bounded by
// discoveryTimeout. Flags that do not go together or do not parse are a
// *UsageError.
func (a authFlags) resolve(ctx context.Context, path string, logger *slog.Logger) (*oauth.ResourceServer, error) {
	if !a.given() {
		return nil, nil
	}
	if *a.issuer == "" || *a.audience == "" {
		return nil, usageErrorf("--auth-issuer and --auth-audience go together")
	}
	if u, err := url.Parse(*a.audience); err != nil || u.Path != path {
		return nil, usageErrorf("--auth-audience %q must be this server's MCP URL, ending in %s", *a.audience, path)
	}
	methods, tools, err := parseScopes(*a.scopes)
	if err != nil {
		return nil, usageErrorf("--auth-scopes: %v", err)
	}
	dpop := oauth.DPoP{RequireNonce: *a.dpopNonce}
	if dpop.Mode, err = oauth.ParseDPoPMode(*a.dpop); err != nil {
		return nil, usageErrorf("--auth-dpop: %v", err)
	}
	if dpop.Mode == oauth.DPoPOff && dpop.RequireNonce {
		return nil, usageErrorf("--auth-dpop-nonce needs --auth-dpop allowed or required")
	}
	jwks := *a.jwksURL
	if jwks == "" {
		if jwks, err = oauth.DiscoverJWKS(ctx, nil, *a.issuer, discoveryTimeout); err != nil {
			return nil, fmt.Errorf("%w (or give --auth-jwks-url)", err)
		}
	}
	rs, err := oauth.New(oauth.Options{
		Resource: *a.audience, Issuer: *a.issuer, JWKSURL: jwks, TenantClaim: *a.tenantClaim,
		MethodScopes: methods, ToolScopes: tools, Logger: logger, DPoP: dpop,
	})
	if err != nil {
		return nil, fmt.Errorf("auth: %w", err)
	}
	return rs, nil
}

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

// userDataDir returns the user's data directory, following the XDG base
// directory convention: $XDG_DATA_HOME when it is an absolute path, else
// %LocalAppData% on Windows, ~/Library/Application Support on macOS and
// ~/.local/share elsewhere. Go's os.UserConfigDir and os.UserCacheDir name
// the configuration and cache directories; tasks are data (they must not
// be wiped with a cache), hence this third convention.
func userDataDir(getenv func(string) string, goos string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	if goos == "windows" {
		if d := getenv("LocalAppData"); d != "" {
			return d, nil
		}
		return "", errors.New("%LocalAppData% is not set")
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("$HOME is not set")
	}
	if goos == "darwin" {
		return filepath.Join(home, "Library", "Application Support"), nil
	}
	return filepath.Join(home, ".local", "share"), nil
}

// stdioDefaultStore is the store of `serve --stdio` without --store or
// $TASKWIRE_STORE: a SQLite file in taskwire's data directory, created
// (mode 0700) when missing. A host starts the server in a working
// directory of its choosing, so the working directory is no place for it.
func stdioDefaultStore(name string, getenv func(string) string) (string, error) {
	base, err := userDataDir(getenv, runtime.GOOS)
	if err != nil {
		return "", fmt.Errorf("no data directory for the default store (give --store): %w", err)
	}
	dir := filepath.Join(base, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the data directory: %w", err)
	}
	return "sqlite:" + filepath.Join(dir, name+".db"), nil
}

// stdioFlags are the flags of `serve --stdio`.
type stdioFlags struct {
	on        *bool
	principal *string
	drain     *time.Duration
}

func addStdioFlags(fs *flag.FlagSet, name string) stdioFlags {
	return stdioFlags{
		on: fs.Bool("stdio", false, "serve one client on stdin and stdout instead of HTTP (--addr and the connection flags are ignored); "+
			"the store defaults to "+name+"/"+name+".db in the user's data directory"),
		principal: fs.String("principal", server.LocalPrincipal, "with --stdio: the `name` every request acts for; tasks are visible to it alone"),
		drain:     fs.Duration("drain-timeout", server.DefaultStdioDrainTimeout, "with --stdio: how long requests still running when stdin ends may take"),
	}
}

// defaultStore points --store at the data directory's file when neither
// --store nor $TASKWIRE_STORE names a store.
func (f stdioFlags) defaultStore(name string, common commonFlags, getenv func(string) string) error {
	if *common.store != "" || getenv(storeEnv) != "" {
		return nil
	}
	spec, err := stdioDefaultStore(name, getenv)
	if err != nil {
		return err
	}
	*common.store = spec
	return nil
}

// config returns the stdio part of the node's configuration (the node
// validates it).
func (f stdioFlags) config() *node.Stdio {
	return &node.Stdio{Principal: *f.principal, DrainTimeout: *f.drain}
}

// defaultStore is the store used when neither --store nor TASKWIRE_STORE is
// set: a SQLite file named after the program in the working directory, so
// that a fresh clone keeps its tasks across restarts without any set-up.
func defaultStore(name string) string { return "sqlite:" + name + ".db" }

// storeEnv is the environment variable read when --store is not given.
const storeEnv = "TASKWIRE_STORE"

// resolveStore returns the store spec to use: the --store flag when set,
// otherwise TASKWIRE_STORE, otherwise defaultStore.
func resolveStore(name, flagValue string, getenv func(string) string) string {
	if flagValue != "" {
		return flagValue
	}
	if v := getenv(storeEnv); v != "" {
		return v
	}
	return defaultStore(name)
}
