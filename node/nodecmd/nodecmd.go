// Package nodecmd is the command line of a taskwire node: a program
// passes its name, its durable tools and its endpoint, and gets the
// commands serve (with --stdio), worker and migrate, with the flags,
// environment variables, start-up checks, messages and exit codes of
// `taskwire serve|worker|migrate` (see the taskwire command's
// documentation for every flag). The wiring itself is package node's.
//
// A program's main is one line once its tools are declared:
//
//	os.Exit(nodecmd.Main(nodecmd.Program{Name: "invoices", Tools: &tools}))
//
// The store is --store, else $TASKWIRE_STORE, else sqlite:NAME.db in the
// working directory (serve --stdio: NAME/NAME.db in the user's data
// directory). Exit codes: 0 on success and help, 2 on a usage error (one
// line saying what is wrong, then where the usage is), 1 on any other
// failure.
package nodecmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/internal/cliflags"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
)

// Program is a node program's command line. Only Name is required.
type Program struct {
	// Name is the program's name, as users type it: the prefix of its
	// messages, its usage and its default store file (NAME.db). It must
	// be a non-empty word of letters, digits, '-' and '_'.
	Name string
	// Version is printed by `NAME version` and sent as the default
	// endpoint's version. Empty: "dev".
	Version string
	// Tools are the durable tools: served by serve, worked by serve's
	// in-process workers and by worker.
	Tools *durable.Set
	// Endpoint, if set, returns a new endpoint with the program's inline
	// tools, at the path of its choosing; Tools are served on it. Nil: an
	// endpoint at /mcp named Name serving Tools alone.
	Endpoint func() *server.Endpoint
	// Serves names what serve serves in its help. Empty: "the MCP
	// endpoint".
	Serves string
	// Flags, if set, defines the program's own flags of serve and worker
	// (cmd names which) on fs, and returns the function that completes
	// the node's configuration from them once the flags are parsed and
	// the store resolved; its error stops the command (a *UsageError
	// exits 2).
	Flags func(cmd string, fs *flag.FlagSet) func(*node.Config) error
	// Subscriptions configure task listen streams
	// (node.Config.Subscriptions). Nil: the server's default.
	Subscriptions *server.SubscriptionOptions
	// ServeName is the name the serve command has in its usage and its
	// messages, for a program that runs it under another name (taskwire
	// gateway). Empty: "serve". The Flags hook is still called with
	// "serve".
	ServeName string
	// WorkerName is the same for the worker command ("gateway worker").
	// Empty: "worker". The Flags hook is still called with "worker".
	WorkerName string
}

// CommandFunc runs one command with the arguments after its name. Its
// error maps to an exit code with ExitCode.
type CommandFunc func(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error

// Main runs the program's command line (os.Args) with the process's
// standard streams and environment, and returns the exit code, for
// os.Exit.
func Main(p Program) int {
	return p.Run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
}

// Run runs the command line args (without the program's name) and returns
// the exit code: serve, worker, migrate, version and help. An error is
// printed to stderr, as one line for a usage error (exit 2), followed by a
// hint at the help. Help asked for (-h, help) prints to stdout and is exit
// 0. serve --stdio reads os.Stdin.
func (p Program) Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if err := p.check(); err != nil {
		fmt.Fprintln(stderr, "nodecmd:", err)
		return 1
	}
	err := p.dispatch(ctx, args, stdout, stderr, getenv)
	code := ExitCode(err)
	if code == 0 {
		return code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(stderr, p.Name+":", msg)
	}
	if code == 2 {
		help := p.Name + " help"
		if len(args) > 0 && args[0] != "help" && p.command(args[0]) != nil {
			help = p.Name + " " + args[0] + " -h"
		}
		fmt.Fprintf(stderr, "Run '%s' for usage.\n", help)
	}
	return code
}

// Command returns the command called name (serve, worker or migrate), or
// nil, for a program with a command line of its own. It panics on a
// Program without a valid Name.
func (p Program) Command(name string) CommandFunc {
	if err := p.check(); err != nil {
		panic("nodecmd: " + err.Error())
	}
	switch name {
	case "serve":
		return p.serve
	case "worker":
		return p.worker
	case "migrate":
		return p.migrate
	}
	return nil
}

// ExitCode maps a command's error to its exit code: 0 for nil and
// flag.ErrHelp, 2 for a *UsageError, 1 for any other.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// UsageError is a mistake on the command line: exit code 2.
type UsageError struct{ msg string }

func (e *UsageError) Error() string { return e.msg }

// Usagef returns a *UsageError, for a Program.Flags hook refusing a flag.
func Usagef(format string, args ...any) error { return usageErrorf(format, args...) }

func usageErrorf(format string, args ...any) error {
	return &UsageError{msg: fmt.Sprintf(format, args...)}
}

// check refuses a Program without a valid name.
func (p *Program) check() error {
	if p.Name == "" || strings.ContainsFunc(p.Name, func(r rune) bool {
		return !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z')
	}) {
		return fmt.Errorf("Program.Name %q must be a word of letters, digits, '-' and '_'", p.Name)
	}
	return nil
}

// command is Command, and version and help.
func (p *Program) command(name string) CommandFunc {
	switch name {
	case "version":
		return p.version
	case "help":
		return p.help
	}
	return p.Command(name)
}

func (p *Program) dispatch(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return usageErrorf("a command is required")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, p.usage())
		return nil
	}
	cmd := p.command(args[0])
	if cmd == nil {
		return usageErrorf("unknown command %q", cliflags.OneLine(args[0], 100))
	}
	return cmd(ctx, args[1:], stdout, stderr, getenv)
}

// usage is the program's help.
func (p *Program) usage() string {
	return p.Name + " runs an MCP server with durable tasks.\n\n" +
		"Usage: " + p.Name + " COMMAND [flags]\n\n" +
		"Commands:\n" +
		"  serve     serve " + p.what() + " over HTTP (or --stdio), with in-process workers\n" +
		"  worker    run workers only, against a shared store\n" +
		"  migrate   apply the store's schema migrations and exit\n" +
		"  version   print the version\n" +
		"  help      print this help, or a command's: " + p.Name + " help COMMAND\n\n" +
		"The store is --store, else $" + storeEnv + ", else " + defaultStore(p.Name) + ":\n" +
		"  sqlite:PATH (or PATH.db)          a SQLite file, the default\n" +
		"  postgres://USER@HOST:PORT/DB      PostgreSQL, for fleets\n" +
		"  memory:                           in this process only, lost when it exits\n\n" +
		"Run \"" + p.Name + " COMMAND -h\" for the flags of a command.\n\n" +
		"Every command exits 2 on a usage error (an unknown command or flag, a flag\n" +
		"value or argument that does not parse or is refused) and 1 on another failure.\n"
}

// version runs `NAME version`.
func (p *Program) version(_ context.Context, args []string, stdout, _ io.Writer, _ func(string) string) error {
	fs := cliflags.New("version", "usage: "+p.Name+" version\n\nPrints the version of "+p.Name+".")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout, p.Name, p.versionText())
	return nil
}

func (p *Program) versionText() string {
	if p.Version == "" {
		return "dev"
	}
	return p.Version
}

// help runs `NAME help [COMMAND]`.
func (p *Program) help(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	switch {
	case len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
		fmt.Fprint(stdout, p.usage())
		return nil
	case len(args) > 1:
		return usageErrorf("help: want at most one command, got %d arguments", len(args))
	case args[0] == "help" || p.command(args[0]) == nil:
		return usageErrorf("help: unknown command %q", cliflags.OneLine(args[0], 100))
	}
	return p.command(args[0])(ctx, []string{"-h"}, stdout, stderr, getenv)
}

// serveName is the serve command's name in its usage and messages.
func (p *Program) serveName() string {
	if p.ServeName == "" {
		return "serve"
	}
	return p.ServeName
}

// workerName is the worker command's name in its usage and messages.
func (p *Program) workerName() string {
	if p.WorkerName == "" {
		return "worker"
	}
	return p.WorkerName
}

// what is what serve serves, for its help.
func (p *Program) what() string {
	if p.Serves == "" {
		return "the MCP endpoint"
	}
	return p.Serves
}

// path is the endpoint's path, for serve's help.
func (p *Program) path() string {
	if p.Endpoint == nil {
		return "/mcp"
	}
	return p.Endpoint().Path()
}

// config returns base with the program's part: its name, version, tools,
// endpoint and subscriptions.
func (p *Program) config(base node.Config) *node.Config {
	base.Name, base.Version, base.Tools, base.Subscriptions = p.Name, p.versionText(), p.Tools, p.Subscriptions
	if p.Endpoint != nil {
		base.Endpoint = p.Endpoint()
	}
	return &base
}

// flags defines the program's own flags of cmd on fs.
func (p *Program) flags(cmd string, fs *flag.FlagSet) func(*node.Config) error {
	if p.Flags == nil {
		return nil
	}
	return p.Flags(cmd, fs)
}

// endpointPath is the path of cfg's endpoint, which --auth-audience must
// name.
func endpointPath(cfg *node.Config) string {
	if cfg.Endpoint == nil {
		return "/mcp"
	}
	return cfg.Endpoint.Path()
}

// run builds the node of cfg and runs it; its errors are prefixed with
// cmd.
func (p *Program) run(ctx context.Context, cfg *node.Config, cmd string) error {
	n, err := node.New(*cfg)
	if err == nil {
		err = n.Run(ctx)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return nil
}

// parseFlags parses args into fs, a flag set of cliflags.New. -h (or -help)
// prints the command's help to stdout and returns flag.ErrHelp; any other
// mistake, positional arguments included, is a *UsageError naming the
// command.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if err := cliflags.Parse(fs, args, stdout, usageErrorf); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("%s: unexpected arguments %q", fs.Name(), fs.Args())
	}
	return nil
}

// withSchema sets the PostgreSQL schema named by --schema; an empty name
// keeps the default. SQLite has no schemas, so naming one is an error.
func withSchema(s *node.StoreSpec, name string) error {
	if name == "" {
		return nil
	}
	if s.Kind != store.Postgres {
		return errors.New("--schema applies to PostgreSQL stores only")
	}
	s.Schema = name
	return nil
}
