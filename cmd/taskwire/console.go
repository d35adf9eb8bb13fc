package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/console"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/store/gauges"
	"github.com/taskwire/taskwire/task"
)

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

// consoleConfig is the console part of a nodeConfig.
type consoleConfig struct {
	// Token is the operator token; nil: no console.
	Token         []byte
	ShowArguments bool
	// Scope is the operator scope of access tokens verified by OAuth,
	// the node's resource server (nil: the operator token only).
	Scope string
	OAuth *oauth.ResourceServer
}

// config reads the operator token: the file when given (surrounding white
// space removed), else the environment variable. Both at once is an
// error, as is a token shorter than console.MinTokenLen, or a
// --console-scope other than the default without rs (--auth-issuer);
// console.New checks the scope itself. Flags that do not go together are
// a *usageError.
func (f consoleFlags) config(getenv func(string) string, adminAddr string, rs *oauth.ResourceServer) (consoleConfig, error) {
	if rs == nil && *f.scope != console.DefaultOperatorScope {
		return consoleConfig{}, usageErrorf("--console-scope needs --auth-issuer: it is the scope of access tokens")
	}
	env := getenv(adminTokenEnv)
	var tok []byte
	switch {
	case *f.tokenFile != "" && env != "":
		return consoleConfig{}, usageErrorf("give the operator token with --admin-token-file or %s, not both", adminTokenEnv)
	case *f.tokenFile != "":
		b, err := readTokenFile(*f.tokenFile)
		if err != nil {
			return consoleConfig{}, err
		}
		tok = b
	case env != "":
		tok = bytes.TrimSpace([]byte(env))
	}
	if tok == nil {
		return consoleConfig{ShowArguments: *f.showArgs}, nil
	}
	if adminAddr == "" {
		return consoleConfig{}, usageErrorf("an operator token needs --admin-addr: the console is served on the admin listener")
	}
	if len(tok) < console.MinTokenLen {
		return consoleConfig{}, fmt.Errorf("the operator token must be at least %d bytes", console.MinTokenLen)
	}
	return consoleConfig{Token: tok, ShowArguments: *f.showArgs, Scope: *f.scope, OAuth: rs}, nil
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

// newConsole returns the console of st, or nil when cfg has no token or
// st is not an operator store.
func newConsole(cfg consoleConfig, st any, logger *slog.Logger) (*console.Console, error) {
	if cfg.Token == nil {
		return nil, nil
	}
	op, ok := st.(backend.Operator)
	if !ok {
		return nil, errors.New("the store does not support the console")
	}
	opts := console.Options{Store: op, Token: cfg.Token, ShowArguments: cfg.ShowArguments, Logger: logger,
		OAuth: cfg.OAuth, OperatorScope: cfg.Scope}
	if g, ok := st.(gauges.Source); ok {
		opts.Gauges = g
	}
	if m, ok := st.(task.Manager); ok {
		opts.Events = m.EventPublisher()
	}
	return console.New(opts)
}

// consoleHandler is c as the admin listener's handler, nil when c is.
func consoleHandler(c *console.Console) http.Handler {
	if c == nil {
		return nil
	}
	return c
}

// printConsole says where the console is, or why it is off.
func printConsole(w io.Writer, adminAddr string, on bool) {
	switch {
	case adminAddr == "":
	case on:
		fmt.Fprintf(w, "taskwire: operator console at http://%s/console\n", adminAddr)
	default:
		fmt.Fprintln(w, "taskwire: operator console off: no operator token (--admin-token-file or "+adminTokenEnv+")")
	}
}
