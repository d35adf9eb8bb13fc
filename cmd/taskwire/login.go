package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/cliflags"
)

// The login and logout commands: the authorization code flow against an
// MCP server's authorization server, with the token kept per server in the
// user's configuration directory.

// browserTimeout bounds the command that hands the URL to a browser.
const browserTimeout = 10 * time.Second

// serverURLArgs parses fs (of cliflags.New) from args and returns the one
// server URL, which may stand before or after the flags. Anything else is
// a usage error; -h prints the help to stdout (see cliflags.Parse).
func serverURLArgs(fs *flag.FlagSet, args []string, stdout io.Writer) (string, error) {
	var url string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		url, args = args[0], args[1:]
	}
	if err := cliflags.Parse(fs, args, stdout, usageErrorf); err != nil {
		return "", err
	}
	rest := fs.Args()
	if url == "" && len(rest) > 0 {
		url, rest = rest[0], rest[1:]
	}
	if url == "" || len(rest) > 0 {
		return "", usageErrorf("%s: exactly one server URL is required", fs.Name())
	}
	return url, nil
}

// tokenStore opens the FileStore in dir, or in the default directory.
func tokenStore(dir string) (*oauthclient.FileStore, error) {
	if dir == "" {
		return oauthclient.DefaultFileStore()
	}
	return oauthclient.NewFileStore(dir)
}

func loginCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := cliflags.New("login", "usage: taskwire login URL [flags]\n\n"+
		"Authorizes taskwire for the MCP server at URL (OAuth 2.1 authorization code with PKCE; the\n"+
		"browser returns to a listener on 127.0.0.1) and stores the token for later commands.\n\n"+
		"Machines log in with no browser: --client-credentials (a secret or --client-key-file),\n"+
		"--assertion-file or --assertion-command (a workload identity token), or --idp-token-url\n"+
		"(enterprise-managed authorization). Secrets are read from files or the environment only.")
	clientID := fs.String("client-id", "", "a pre-registered OAuth client `ID`; without it the client uses --client-metadata-url "+
		"where the authorization server accepts one, else registers itself (dynamic registration)")
	metadataURL := fs.String("client-metadata-url", "", "the https `URL` of a Client ID Metadata Document describing this client, "+
		"used as its client ID where supported")
	scopes := fs.String("scopes", "", "extra `scopes` to request, comma- or space-separated, besides those the server names")
	noBrowser := fs.Bool("no-browser", false, "only print the authorization URL; do not try to open a browser")
	timeout := fs.Duration("timeout", oauthclient.DefaultRedirectTimeout, "how long to wait for the browser's redirect")
	dir := fs.String("token-dir", "", "`directory` of the token store (default: the user's config directory/taskwire/tokens)")
	mf := addMachineFlags(fs)
	if err := refuseSecretFlags(args); err != nil {
		return err
	}
	url, err := serverURLArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	secret, err := mf.clientSecret(getenv)
	if err != nil {
		return err
	}
	if secret != "" && *clientID == "" {
		return usageErrorf("login: a client secret needs --client-id")
	}
	store, err := tokenStore(*dir)
	if err != nil {
		return err
	}
	open := func(ctx context.Context, authURL string) error {
		fmt.Fprintf(stdout, "Open this URL in a browser to authorize taskwire:\n\n  %s\n\nWaiting up to %v for the redirect ...\n", authURL, *timeout)
		if !*noBrowser {
			if err := openBrowser(ctx, authURL); err != nil {
				fmt.Fprintf(stderr, "taskwire: could not open a browser (%v); open the URL yourself\n", err)
			}
		}
		return nil
	}
	opts := oauthclient.Options{
		Store: store, ClientID: *clientID, ClientSecret: secret, ClientIDMetadataURL: *metadataURL,
		Scopes: strings.FieldsFunc(*scopes, func(r rune) bool { return r == ',' || r == ' ' }), OpenURL: open, RedirectTimeout: *timeout,
	}
	if mf.machine() {
		opts.OpenURL, opts.ClientIDMetadataURL = nil, ""
		if err := mf.apply(&opts, getenv); err != nil {
			return err
		}
	}
	az, err := oauthclient.New(url, opts)
	if err != nil {
		return err
	}
	rec, err := az.Login(ctx)
	if err != nil {
		return fmt.Errorf("login %s: %w", url, err)
	}
	scope := strings.Join(rec.Granted, " ")
	if scope == "" {
		scope = strings.Join(rec.Scopes, " ")
	}
	if scope == "" {
		scope = "(none named)"
	}
	fmt.Fprintf(stdout, "Logged in to %s through %s; scopes: %s.\nThe token is stored in %s.\n", url, rec.Issuer, scope, store.Path(url))
	return nil
}

func logoutCmd(_ context.Context, args []string, stdout, stderr io.Writer, _ func(string) string) error {
	fs := cliflags.New("logout", "usage: taskwire logout URL [flags]\n\n"+
		"Forgets the token and client registration stored for the MCP server at URL.")
	dir := fs.String("token-dir", "", "`directory` of the token store (default: the user's config directory/taskwire/tokens)")
	url, err := serverURLArgs(fs, args, stdout)
	if err != nil {
		return err
	}
	store, err := tokenStore(*dir)
	if err != nil {
		return err
	}
	if err := store.Delete(url); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Logged out of %s.\n", url)
	return nil
}

// openBrowser hands url to the desktop's browser launcher.
func openBrowser(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, browserTimeout)
	defer cancel()
	var cmd *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		cmd = exec.CommandContext(ctx, "open", url)
	case "windows":
		cmd = exec.CommandContext(ctx, "rundll32", "url.dll,FileProtocolHandler", url)
	default:
		cmd = exec.CommandContext(ctx, "xdg-open", url)
	}
	return cmd.Run()
}
