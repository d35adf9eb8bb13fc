package main

import (
	"go/parser"
	"go/token"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// runMainOut runs the command line as main does and returns its exit code
// and output.
func runMainOut(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut syncBuffer
	code = runMain(t.Context(), args, &out, &errOut, noEnv)
	return code, out.String(), errOut.String()
}

// TestUsageErrors: a mistake on the command line of any command prints
// one line saying what is wrong and one pointing at the usage, nothing on
// stdout, and exits 2.
func TestUsageErrors(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/x.db"
	tests := []struct {
		args []string
		msg  string // the first line, after "taskwire: "
		help string // the command of the hint
	}{
		{nil, "a command is required", "taskwire help"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, "taskwire help"},
		{[]string{"--frobnicate"}, `unknown command "--frobnicate"`, "taskwire help"},
		{[]string{"help", "frobnicate"}, `help: unknown command "frobnicate"`, "taskwire help"},
		{[]string{"serve", "--frobnicate"}, "serve: flag provided but not defined: -frobnicate", "taskwire serve -h"},
		{[]string{"serve", "extra"}, `serve: unexpected arguments ["extra"]`, "taskwire serve -h"},
		{[]string{"serve", "--workers", "many"}, `serve: invalid value "many" for flag -workers: parse error`, "taskwire serve -h"},
		{[]string{"serve", "--store", db, "--workers", "-1"}, "serve: --workers must be between 0 and 1024", "taskwire serve -h"},
		{[]string{"serve", "--store", db, "--task-burst", "0"}, "serve: --task-burst must be at least 1", "taskwire serve -h"},
		{[]string{"serve", "--store", db, "--log-level", "loud"}, `serve: --log-level: slog: level string "loud": unknown name`, "taskwire serve -h"},
		{[]string{"serve", "--store", db, "--auth-issuer", "http://127.0.0.1:1"}, "serve: --auth-issuer and --auth-audience go together", "taskwire serve -h"},
		{[]string{"serve", "--stdio", "--admin-addr", "9090"}, "serve: --admin-addr does not apply to --stdio", "taskwire serve -h"},
		{[]string{"serve", "--stdio", "--store", db, "--workers", "2000"}, "serve --stdio: --workers must be between 0 and 1024", "taskwire serve -h"},
		{[]string{"serve", "--stdio", "--store", db, "--workers", "0", "--shutdown-grace", "0s"}, "serve --stdio: --shutdown-grace must be positive", "taskwire serve -h"},
		{[]string{"worker", "--frobnicate"}, "worker: flag provided but not defined: -frobnicate", "taskwire worker -h"},
		{[]string{"worker", "--store", db, "--workers", "0"}, "worker: --workers must be at least 1", "taskwire worker -h"},
		{[]string{"worker", "--store", db, "--lease", "1ms"}, "worker: --lease must be at least 1s", "taskwire worker -h"},
		{[]string{"migrate", "--store", "tasks.txt"}, `migrate: store "tasks.txt": not recognised; use sqlite:PATH (or a path ending in .db), postgres://USER@HOST/DB or memory:`, "taskwire migrate -h"},
		{[]string{"migrate", "now"}, `migrate: unexpected arguments ["now"]`, "taskwire migrate -h"},
		{[]string{"version", "--frobnicate"}, "version: flag provided but not defined: -frobnicate", "taskwire version -h"},
		{[]string{"login"}, "login: exactly one server URL is required", "taskwire login -h"},
		{[]string{"login", "http://127.0.0.1:1/mcp", "--client-secret", "s"}, "login: --client-secret: secrets are not taken on the command line, where other users can see them; use --client-secret-file, $TASKWIRE_CLIENT_SECRET or $TASKWIRE_IDP_CLIENT_SECRET", "taskwire login -h"},
		{[]string{"login", "http://127.0.0.1:1/mcp", "--client-credentials"}, "login: --client-credentials, --client-key-file and --idp-token-url need --client-id; --client-credentials needs $TASKWIRE_CLIENT_SECRET, --client-secret-file or --client-key-file", "taskwire login -h"},
		{[]string{"logout", "a", "b"}, "logout: exactly one server URL is required", "taskwire logout -h"},
		{[]string{"tools", "--frobnicate"}, "tools: flag provided but not defined: -frobnicate", "taskwire tools -h"},
		{[]string{"tools", "extra"}, `tools: unexpected arguments ["extra"]`, "taskwire tools -h"},
		{[]string{"call"}, "call: a tool name is required (taskwire tools lists them)", "taskwire call -h"},
		{[]string{"call", "--timeout", "-1s", "x"}, "--timeout must not be negative", "taskwire call -h"},
		{[]string{"task"}, "task: a subcommand is required: get, wait, cancel or answer", "taskwire task -h"},
		{[]string{"task", "frob"}, `task: unknown subcommand "frob": want get, wait, cancel or answer`, "taskwire task -h"},
		{[]string{"task", "get", "--frobnicate", "id"}, "task get: flag provided but not defined: -frobnicate", "taskwire task -h"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMainOut(t, tc.args...)
			want := "taskwire: " + tc.msg + "\nRun '" + tc.help + "' for usage.\n"
			if diff := cmp.Diff([]any{exitUsage, "", want}, []any{code, stdout, stderr}); diff != "" {
				t.Errorf("exit code, stdout, stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// TestHelp: -h, -help and help print the usage to stdout and exit 0.
func TestHelp(t *testing.T) {
	tests := []struct {
		args []string
		want string // how stdout starts
	}{
		{[]string{"-h"}, "taskwire runs MCP servers"},
		{[]string{"--help"}, "taskwire runs MCP servers"},
		{[]string{"help"}, "taskwire runs MCP servers"},
		{[]string{"help", "worker"}, "usage: taskwire worker [flags]\n"},
		{[]string{"serve", "-h"}, "usage: taskwire serve [flags]\n"},
		{[]string{"serve", "--help"}, "usage: taskwire serve [flags]\n"},
		{[]string{"worker", "-h"}, "usage: taskwire worker [flags]\n"},
		{[]string{"migrate", "-h"}, "usage: taskwire migrate [flags]\n"},
		{[]string{"version", "-h"}, "usage: taskwire version\n"},
		{[]string{"login", "-h"}, "usage: taskwire login URL [flags]\n"},
		{[]string{"logout", "-h"}, "usage: taskwire logout URL [flags]\n"},
		{[]string{"tools", "-h"}, "usage: taskwire tools [flags]\n"},
		{[]string{"call", "-h"}, "usage: taskwire call [flags] TOOL"},
		{[]string{"call", "text.stats", "-h"}, "usage: taskwire call [flags] TOOL"},
		{[]string{"task", "-h"}, "usage: taskwire task get|wait|cancel [flags] ID\n"},
		{[]string{"task", "wait", "-h"}, "usage: taskwire task get|wait|cancel [flags] ID\n"},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runMainOut(t, tc.args...)
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, tc.want) {
				t.Errorf("exit %d, stderr %q, stdout:\n%s\nwant exit 0, nothing on stderr, stdout starting with %q", code, stderr, stdout, tc.want)
			}
		})
	}
}

var (
	helpFlag    = regexp.MustCompile(`^  -([a-z][a-z-]*)`)
	helpDefault = regexp.MustCompile(`\(default "?([^"]*?)"?\)$`)
	docFlag     = regexp.MustCompile(`--([a-z][a-z-]*)(?: ([^\s\[\]]+))?`)
)

// TestUsageTextIsComplete keeps the usage text of the package's doc
// comment (what go doc shows) in step with the commands: every command
// that run dispatches is listed there and in taskwire help, every flag of
// a command's -h is in its lines, every flag its lines name exists, and a
// value shown that is not a placeholder (NAME) is the flag's default.
func TestUsageTextIsComplete(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "main.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{} // command: its usage lines
	cmd := ""
	for line := range strings.SplitSeq(f.Doc.Text(), "\n") {
		switch {
		case strings.HasPrefix(line, "\ttaskwire "):
			cmd = strings.Fields(line)[1]
			blocks[cmd] += line + "\n"
		case strings.HasPrefix(line, "\t ") && cmd != "":
			blocks[cmd] += line + "\n"
		default:
			cmd = ""
		}
	}
	for name := range blocks {
		if command(name) == nil {
			t.Errorf("the usage text lists %q, which is no command", name)
		}
	}
	tests := []struct {
		args []string // the command; -h is added
		uses []string // the usage lines that list its flags
	}{
		{[]string{"serve"}, []string{"serve"}},
		{[]string{"worker"}, []string{"worker"}},
		{[]string{"migrate"}, []string{"migrate"}},
		{[]string{"version"}, []string{"version"}},
		{[]string{"help"}, []string{"help"}},
		{[]string{"tools"}, []string{"tools"}},
		{[]string{"call"}, []string{"call", "tools"}},
		{[]string{"task", "get"}, []string{"task", "tools"}},
		{[]string{"skills"}, []string{"skills", "tools"}},
		{[]string{"login"}, []string{"login"}},
		{[]string{"logout"}, []string{"logout"}},
	}
	for _, tc := range tests {
		name := tc.args[0]
		if !strings.Contains(usage, "\n  "+name+" ") {
			t.Errorf("taskwire help does not list %s", name)
		}
		if blocks[name] == "" {
			t.Errorf("the usage text does not list %s", name)
			continue
		}
		var text string
		for _, u := range tc.uses {
			text += blocks[u]
		}
		defaults := helpFlags(t, append(tc.args, "-h"))
		for flag := range defaults {
			if !regexp.MustCompile(`--` + flag + `\b[^-]`).MatchString(text) {
				t.Errorf("the usage text of %s lacks --%s", name, flag)
			}
		}
		for _, m := range docFlag.FindAllStringSubmatch(blocks[name], -1) {
			def, ok := defaults[m[1]]
			switch {
			case !ok && name != "help":
				t.Errorf("the usage text of %s names --%s, which it does not take", name, m[1])
			case ok && m[2] != "" && !isPlaceholder(m[2]) && !sameValue(m[2], def):
				t.Errorf("the usage text of %s shows --%s %s, but its default is %q", name, m[1], m[2], def)
			}
		}
	}
}

// helpFlags runs args (ending in -h) and returns the flags its help lists,
// each with the default it prints ("" when none).
func helpFlags(t *testing.T, args []string) map[string]string {
	t.Helper()
	code, stdout, stderr := runMainOut(t, args...)
	if code != 0 {
		t.Fatalf("%q: exit %d\n%s", args, code, stderr)
	}
	flags := map[string]string{}
	cur := ""
	for line := range strings.SplitSeq(stdout, "\n") {
		if m := helpFlag.FindStringSubmatch(line); m != nil {
			cur = m[1]
			flags[cur] = ""
		} else if m := helpDefault.FindStringSubmatch(line); m != nil && cur != "" {
			flags[cur] = m[1]
		}
	}
	return flags
}

// isPlaceholder: a value in upper case (SPEC, K:V, NAME=SCOPE,...) stands
// for one the user chooses.
func isPlaceholder(v string) bool { return v != strings.ToLower(v) || strings.HasSuffix(v, "...") }

// sameValue reports whether a value shown in the usage text is def,
// durations compared as durations (30m is 30m0s).
func sameValue(shown, def string) bool {
	if shown == def {
		return true
	}
	a, errA := time.ParseDuration(shown)
	b, errB := time.ParseDuration(def)
	return errA == nil && errB == nil && a == b
}
