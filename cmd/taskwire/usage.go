package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/taskwire/taskwire/internal/cliflags"
)

// The command line's usage: the commands, their help (-h), and how a
// mistake on the command line is reported (one line, a hint, exit 2).

const usage = `taskwire runs MCP servers with durable tasks.

Usage: taskwire COMMAND [flags] [arguments]

Commands:
  serve     serve the demo MCP endpoint over HTTP (or --stdio), with in-process workers
  gateway   serve the tools of an --upstream (or --upstream-cmd) MCP server, the
            --task-tools as durable task tools, with every flag of serve;
            gateway worker runs its workers apart
  worker    run workers only, against a shared store
  migrate   apply the store's schema migrations and exit
  version   print the version
  help      print this help, or a command's: taskwire help COMMAND

Client commands, for any MCP server over HTTP:
  tools     list the server's tools and their inputs
  call      call a tool: taskwire call TOOL key=value key:=JSON ...; waits for a
            task with a progress line, asks its forms on a terminal
  task      get, wait for, cancel or answer a task: taskwire task wait ID,
            taskwire task answer ID KEY=JSON ...
  login     authorize taskwire for an MCP server (OAuth) and store the token
  logout    forget the token stored for an MCP server
They talk to --url, else $TASKWIRE_URL, else http://127.0.0.1:8080/mcp, with
--token (else $TASKWIRE_TOKEN, else the token login stored) as a Bearer token
and --header K:V (repeatable); --timeout bounds the wait, --json prints JSON.

The store is --store, else $TASKWIRE_STORE, else sqlite:taskwire.db:
  sqlite:PATH (or PATH.db)          a SQLite file, the default
  postgres://USER@HOST:PORT/DB      PostgreSQL, for fleets
  memory:                           in this process only, lost when it exits

Run "taskwire COMMAND -h" for the flags of a command.

Every command exits 2 on a usage error (an unknown command or flag, a flag
value or argument that does not parse or is refused) and 1 on another failure.
` + exitCodes

// commandFunc runs one command with the arguments after its name.
type commandFunc func(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error

// command returns the command called name, or nil when there is none.
func command(name string) commandFunc {
	switch name {
	case "serve", "worker", "migrate":
		return commandFunc(program().Command(name))
	case "gateway":
		return gatewayCmd
	case "tools", "call", "task":
		return func(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
			return runClientCommand(ctx, name, args, stdout, stderr, getenv)
		}
	case "login":
		return loginCmd
	case "logout":
		return logoutCmd
	case "version":
		return versionCmd
	case "help":
		return helpCmd
	}
	return nil
}

// run runs the command line args (without the program's name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) == 0 {
		return usageErrorf("a command is required")
	}
	switch args[0] {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	cmd := command(args[0])
	if cmd == nil {
		return usageErrorf("unknown command %q", cliflags.OneLine(args[0], 100))
	}
	return cmd(ctx, args[1:], stdout, stderr, getenv)
}

// runMain runs the command line as main does and returns the exit code.
// An error is printed to stderr, as one line for a usage error (exit 2),
// which is followed by a hint at the help: the command's when the command
// exists, else the list of commands. Help asked for (-h, help) prints to
// stdout and is exit 0.
func runMain(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	err := run(ctx, args, stdout, stderr, getenv)
	code := exitCode(err)
	if code == exitOK {
		return code
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(stderr, "taskwire:", msg)
	}
	if code == exitUsage {
		help := "taskwire help"
		if len(args) > 0 && args[0] != "help" && command(args[0]) != nil {
			help = "taskwire " + args[0] + " -h"
		}
		fmt.Fprintf(stderr, "Run '%s' for usage.\n", help)
	}
	return code
}

// versionCmd runs `taskwire version`.
func versionCmd(_ context.Context, args []string, stdout, _ io.Writer, _ func(string) string) error {
	fs := cliflags.New("version", "usage: taskwire version\n\nPrints the version of taskwire.")
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "taskwire", version)
	return nil
}

// helpCmd runs `taskwire help [COMMAND]`: the list of commands, or the
// help of one (as COMMAND -h).
func helpCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	switch {
	case len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help":
		fmt.Fprint(stdout, usage)
		return nil
	case len(args) > 1:
		return usageErrorf("help: want at most one command, got %d arguments", len(args))
	case args[0] == "help" || command(args[0]) == nil:
		return usageErrorf("help: unknown command %q", cliflags.OneLine(args[0], 100))
	}
	return command(args[0])(ctx, []string{"-h"}, stdout, stderr, getenv)
}

// parseFlags is cliflags.Parse for a command that takes no positional
// arguments: any is a usage error.
func parseFlags(fs *flag.FlagSet, args []string, stdout io.Writer) error {
	if err := cliflags.Parse(fs, args, stdout, usageErrorf); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("%s: unexpected arguments %q", fs.Name(), fs.Args())
	}
	return nil
}
