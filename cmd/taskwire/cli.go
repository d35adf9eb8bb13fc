package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/client/oauthclient"
	"github.com/taskwire/taskwire/internal/cliflags"
	"github.com/taskwire/taskwire/mcp"
)

// Environment of the client commands.
const (
	defaultURL = "http://127.0.0.1:8080/mcp"
	urlEnv     = "TASKWIRE_URL"
	tokenEnv   = "TASKWIRE_TOKEN"
)

// cliCloseTimeout bounds the DELETE that ends a 2025-era session when a
// command ends: --timeout and Ctrl-C end the command at most this much
// later, also when the server stopped answering.
const cliCloseTimeout = time.Second

// cliEnv is what a client command reads and writes besides its arguments.
type cliEnv struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// terminal: stderr is a terminal (the progress line is redrawn in
	// place); interactive: stdin is one too (forms are asked).
	terminal, interactive bool
	// interrupts delivers Ctrl-C; nil when the command cannot be
	// interrupted (tests).
	interrupts <-chan os.Signal
	// releaseInterrupts, when set, is called once the first Ctrl-C has
	// been taken from interrupts: it gives SIGINT back to its default, so
	// that a second Ctrl-C ends the process while the command winds down.
	releaseInterrupts func()
	now               func() time.Time
}

// processEnv is the environment of the running process. stop ends the
// delivery of SIGINT to the command.
func processEnv(stdout, stderr io.Writer, getenv func(string) string) (env *cliEnv, stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	// Once no channel is notified of SIGINT, the runtime's default (the
	// process dies of the signal) applies again.
	release := sync.OnceFunc(func() { signal.Stop(ch) })
	return &cliEnv{
		stdin: os.Stdin, stdout: stdout, stderr: stderr, getenv: getenv,
		terminal:          isTerminal(stderr),
		interactive:       isTerminal(os.Stdin) && isTerminal(stderr),
		interrupts:        ch,
		releaseInterrupts: release,
		now:               time.Now,
	}, release
}

// isTerminal reports whether w is an *os.File on a terminal.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	return isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())
}

// clientFlags are the flags every client command takes.
type clientFlags struct {
	url      string
	token    string
	headers  headerFlag
	timeout  time.Duration
	json     bool
	protocol string
	tokenDir string
}

// headerFlag collects repeated --header K:V flags.
type headerFlag []string

func (h *headerFlag) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlag) Set(v string) error { *h = append(*h, v); return nil }

// newClientFlagSet defines the common flags on a new flag set (see
// cliflags.New) whose help is synopsis, then the flags.
func newClientFlagSet(name, synopsis string, cf *clientFlags) *flag.FlagSet {
	fs := cliflags.New(name, synopsis)
	fs.StringVar(&cf.url, "url", "", "MCP endpoint `URL` (default $"+urlEnv+", else "+defaultURL+")")
	fs.StringVar(&cf.token, "token", "", "bearer `token` sent as Authorization (default $"+tokenEnv+")")
	fs.Var(&cf.headers, "header", "extra request header `K:V` (repeatable)")
	fs.DurationVar(&cf.timeout, "timeout", 0, "give up waiting after this `duration` (exit 124; the task runs on); 0 waits for ever")
	fs.BoolVar(&cf.json, "json", false, "print JSON instead of text")
	fs.StringVar(&cf.tokenDir, "token-dir", "", "`directory` of the tokens `taskwire login` stored, sent when --token is not given (default: the user's config directory/taskwire/tokens)")
	fs.StringVar(&cf.protocol, "protocol", "", "pin the protocol `revision`: "+strings.Join(client.DefaultProtocolVersions(), ", ")+" (default: the newest the server speaks)")
	return fs
}

// parseInterleaved parses flags that may come before, between or after the
// positional arguments (a "--" ends the flags) and returns the positional
// arguments. Flag errors are usage errors; -h prints the command's help to
// stdout and returns flag.ErrHelp (see cliflags.Parse).
func parseInterleaved(fs *flag.FlagSet, args []string, stdout io.Writer) ([]string, error) {
	var pos []string
	for {
		if err := cliflags.Parse(fs, args, stdout, usageErrorf); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// resolvedURL is the endpoint: --url, else $TASKWIRE_URL, else the default.
func (cf *clientFlags) resolvedURL(env *cliEnv) string {
	switch {
	case cf.url != "":
		return cf.url
	case env.getenv(urlEnv) != "":
		return env.getenv(urlEnv)
	}
	return defaultURL
}

// clientSession is a connected client command: the client, its endpoint, and the
// context bounded by --timeout.
type clientSession struct {
	c        *client.Client
	url      string // the endpoint as printed: see redactedURL
	redacted bool   // url differs from the endpoint
	flags    *clientFlags
	env      *cliEnv
	tokened  bool

	ctx       context.Context // the command's, once context has made it
	watched   bool            // context started the watch of Ctrl-C
	stopWatch chan struct{}   // closed by close
	watching  chan struct{}   // closed when the watch has ended
	interrupt chan struct{}   // closed on Ctrl-C
}

// open validates the common flags and creates the client. A form handler
// is installed when the command is interactive; otherwise form elicitation
// is declared without one, so that a task that needs input reports it
// (exit 7) instead of being refused. That is 2026-07-28 only: a 2025-era
// session declares no elicitation without a handler, so the server fails
// what needs a form (a task: exit 5).
func (cf *clientFlags) open(env *cliEnv, elicit func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)) (*clientSession, error) {
	if cf.timeout < 0 {
		return nil, usageErrorf("--timeout must not be negative")
	}
	header := http.Header{}
	for _, h := range cf.headers {
		k, v, ok := strings.Cut(h, ":")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, usageErrorf("--header %q: want K:V", h)
		}
		header.Add(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	token := cf.token
	if token == "" {
		token = env.getenv(tokenEnv)
	}
	opts := client.Options{
		Header:       header,
		ClientInfo:   mcp.Implementation{Name: "taskwire-cli", Version: version},
		CloseTimeout: cliCloseTimeout,
	}
	if cf.protocol != "" {
		opts.ProtocolVersions = []string{cf.protocol}
	}
	url := cf.resolvedURL(env)
	if token != "" {
		opts.Token = func(context.Context) (string, error) { return token, nil }
	} else {
		az, err := cf.storedLogin(url)
		if err != nil {
			return nil, err
		}
		if az != nil {
			opts.Transport = az
		}
	}
	if elicit != nil {
		opts.Handlers.Elicit = elicit
	} else {
		opts.Handlers.Declare = &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapability{Form: mcp.Object{}}}
	}
	c, err := client.New(url, opts)
	if err != nil {
		return nil, &usageError{msg: err.Error()}
	}
	shown := redactedURL(url)
	return &clientSession{c: c, url: shown, redacted: shown != url, flags: cf, env: env, tokened: token != "",
		stopWatch: make(chan struct{}), watching: make(chan struct{}), interrupt: make(chan struct{})}, nil
}

// storedLogin returns the authorizer that sends the token `taskwire login`
// stored for url (refreshed when it has expired), or nil when there is no
// token store: --token-dir not given and no user config directory. A server
// for which no token is stored gets no Authorization header, as before.
func (cf *clientFlags) storedLogin(url string) (*oauthclient.Authorizer, error) {
	var (
		store *oauthclient.FileStore
		err   error
	)
	if cf.tokenDir != "" {
		store, err = oauthclient.NewFileStore(cf.tokenDir)
		if err != nil {
			return nil, usageErrorf("--token-dir: %v", err)
		}
	} else if store, err = oauthclient.DefaultFileStore(); err != nil {
		return nil, nil // no config directory: nothing was stored
	}
	az, err := oauthclient.Stored(store, url)
	if err != nil {
		return nil, &usageError{msg: err.Error()}
	}
	return az, nil
}

// openBounded opens the session of a command that does not wait for a
// task, with its context bounded by --timeout. stop closes both.
func (cf *clientFlags) openBounded(ctx context.Context, env *cliEnv) (_ context.Context, _ *clientSession, stop func(), _ error) {
	s, err := cf.open(env, nil)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := s.context(ctx)
	return ctx, s, func() {
		cancel()
		s.close()
	}, nil
}

// context returns the command's context, bounded by --timeout and ended
// by Ctrl-C (see interrupted). Call it once; close ends the watch.
func (s *clientSession) context(ctx context.Context) (context.Context, context.CancelFunc) {
	var cancel context.CancelFunc
	if s.flags.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, s.flags.timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	s.ctx, s.watched = ctx, true
	go func() {
		defer close(s.watching)
		select {
		case <-s.env.interrupts: // nil: never
			if s.env.releaseInterrupts != nil {
				s.env.releaseInterrupts()
			}
			close(s.interrupt)
			cancel()
		case <-s.stopWatch:
		}
	}()
	return ctx, cancel
}

// interrupted reports whether Ctrl-C ended the command's context.
func (s *clientSession) interrupted() bool {
	select {
	case <-s.interrupt:
		return true
	default:
		return false
	}
}

// fail turns a client error into the command's error, with its message.
func (s *clientSession) fail(err error) error {
	if err == nil {
		return nil
	}
	var ue *usageError
	var ee *exitError
	switch {
	case errors.As(err, &ue) || errors.As(err, &ee):
		return err
	case s.interrupted():
		return &exitError{code: exitInterrupted, msg: "interrupted"}
	case s.ctx != nil && errors.Is(s.ctx.Err(), context.DeadlineExceeded):
		return &exitError{code: exitTimeout, msg: fmt.Sprintf("--timeout %v passed", s.flags.timeout)}
	}
	return &exitError{code: exitCode(err), msg: describe(err, s.url)}
}

// resumeCommand is the command that resumes waiting for the task id. It
// names the URL when it is not the default, never the token.
func (s *clientSession) resumeCommand(id string) string {
	cmd := "taskwire task wait"
	if s.url != defaultURL {
		cmd += " --url " + shellQuote(s.url)
	}
	return cmd + " " + quoteID(id)
}

// quoteID makes a task ID, which the server chose, safe to print in a
// command to copy: on one line, and quoted for a shell unless it needs no
// quoting (a well-formed ID never does).
func quoteID(id string) string { return shellQuote(cliflags.OneLine(id, 200)) }

// credentialsNote reminds that the resume command needs the same token,
// and the credentials redacted from the URL.
func (s *clientSession) credentialsNote() string {
	switch {
	case s.tokened && s.redacted:
		return " (with the same --token or $" + tokenEnv + ", and the URL's redacted values)"
	case s.tokened:
		return " (with the same --token or $" + tokenEnv + ")"
	case s.redacted:
		return " (with the URL's redacted values)"
	}
	return ""
}

// shellQuote quotes s for a POSIX shell when it needs quoting.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// runClientCommand runs tools, call, task or skills in the process's environment.
func runClientCommand(ctx context.Context, cmd string, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	env, stop := processEnv(stdout, stderr, getenv)
	defer stop()
	return clientCommand(ctx, cmd, args, env)
}

// clientCommand dispatches a client command.
func clientCommand(ctx context.Context, cmd string, args []string, env *cliEnv) error {
	switch cmd {
	case "tools":
		return toolsCmd(ctx, args, env)
	case "call":
		return callCmd(ctx, args, env)
	case "task":
		return taskCmd(ctx, args, env)
	case "skills":
		return skillsCmd(ctx, args, env)
	}
	return usageErrorf("unknown command %q", cmd)
}

// close closes the session's client; the command's result stands.
func (s *clientSession) close() {
	if s.watched {
		close(s.stopWatch)
		<-s.watching
	}
	if err := s.c.Close(); err != nil {
		fmt.Fprintln(s.env.stderr, "taskwire: closing the client:", printable(err))
	}
}
