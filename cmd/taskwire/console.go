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
	"github.com/taskwire/taskwire/store/gauges"
	"github.com/taskwire/taskwire/task"
)

// The operator console (package console) on the admin listener of serve:
// mounted at /console when --admin-addr is set and an operator token is
// configured with --admin-token-file or TASKWIRE_ADMIN_TOKEN.

// adminTokenEnv names the variable that may hold the operator token.
const adminTokenEnv = "TASKWIRE_ADMIN_TOKEN"

// maxTokenFile bounds the bytes read from --admin-token-file.
const maxTokenFile = 4096

// consoleFlags are serve's console flags.
type consoleFlags struct {
	tokenFile *string
	showArgs  *bool
}

// addConsoleFlags defines --admin-token-file and --console-show-arguments
// on fs.
func addConsoleFlags(fs *flag.FlagSet) consoleFlags {
	return consoleFlags{
		tokenFile: fs.String("admin-token-file", "", "`file` holding the operator token of the console at /console on --admin-addr "+
			"(at least 16 bytes; or set "+adminTokenEnv+"); without one the console is off"),
		showArgs: fs.Bool("console-show-arguments", false, "show tasks' tool arguments on the console's task pages"),
	}
}

// consoleConfig is the console part of a nodeConfig.
type consoleConfig struct {
	// Token is the operator token; nil: no console.
	Token         []byte
	ShowArguments bool
}

// config reads the operator token: the file when given (surrounding white
// space removed), else the environment variable. Both at once is an
// error, as is a token shorter than console.MinTokenLen.
func (f consoleFlags) config(getenv func(string) string, adminAddr string) (consoleConfig, error) {
	env := getenv(adminTokenEnv)
	var tok []byte
	switch {
	case *f.tokenFile != "" && env != "":
		return consoleConfig{}, errors.New("give the operator token with --admin-token-file or " + adminTokenEnv + ", not both")
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
		return consoleConfig{}, errors.New("an operator token needs --admin-addr: the console is served on the admin listener")
	}
	if len(tok) < console.MinTokenLen {
		return consoleConfig{}, fmt.Errorf("the operator token must be at least %d bytes", console.MinTokenLen)
	}
	return consoleConfig{Token: tok, ShowArguments: *f.showArgs}, nil
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
	opts := console.Options{Store: op, Token: cfg.Token, ShowArguments: cfg.ShowArguments, Logger: logger}
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
