package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/gateway"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/node/nodecmd"
	"github.com/taskwire/taskwire/server"
)

// gatewayCmd runs `taskwire gateway`: serve, with every flag of serve,
// for the tools of an upstream MCP server (package gateway) instead of the
// demo endpoint; `taskwire gateway worker` is worker, with the same
// upstream flags, for the workers of a fleet run apart from its API nodes.
// The upstream is connected (its process started, for --upstream-cmd) and
// its tools listed once the flags are checked; the connection is closed
// when the node has stopped.
func gatewayCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cmd := "serve"
	if len(args) > 0 && args[0] == "worker" {
		cmd, args = "worker", args[1:]
	}
	var gw *gateway.Gateway
	p := nodecmd.Program{
		Name:       "taskwire",
		Version:    version,
		ServeName:  "gateway",
		WorkerName: "gateway worker",
		Serves:     "the tools of the --upstream or --upstream-cmd MCP server",
		// As for serve: every admitted caller may listen for task
		// notifications; the store still authorizes each lookup.
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
		Flags: func(name string, fs *flag.FlagSet) func(*node.Config) error {
			gf := addGatewayFlags(fs)
			return func(cfg *node.Config) error {
				opts, err := gf.options()
				if err != nil {
					return err
				}
				opts.Logger = cfg.Logger
				g, err := gateway.New(ctx, opts)
				if err != nil {
					// Exit 1 like any failure of serve, not the client
					// commands' codes; the command names itself.
					return errors.New(flagNames.Replace(strings.ReplaceAll(strings.TrimPrefix(err.Error(), "gateway: "), "\n", "; ")))
				}
				gw = g
				var tools durable.Set
				if name == "worker" {
					// Workers only: the task tools, no endpoint.
					if err := g.Register(nil, &tools); err != nil {
						return err
					}
					cfg.Tools = &tools
					return nil
				}
				eo := server.EndpointOptions{Path: "/mcp", Name: cfg.Name + "-gateway", Version: cfg.Version, DynamicTools: true}
				if g.HasTaskTools() {
					// Tasks from the start: the upstream may add task
					// tools later.
					eo.TaskProtocolVersions = []string{mcp.LatestProtocolVersion}
				}
				ep := server.NewEndpoint(eo)
				if err := g.Register(ep, &tools); err != nil {
					return err
				}
				cfg.Endpoint, cfg.Tools = ep, &tools
				return nil
			}
		},
	}
	err := p.Command(cmd)(ctx, args, stdout, stderr, getenv)
	if gw != nil {
		err = errors.Join(err, gw.Close())
	}
	return err
}

// gatewayFlags are the flags gateway adds to serve's.
type gatewayFlags struct {
	upstream    *string
	upstreamCmd *string
	config      *string
	headers     headerFlag
	taskTools   *string
	retryTools  *string
	callTimeout *time.Duration
	taskTimeout *time.Duration
	inFlight    *int
	serial      *bool
	versions    *string
}

func addGatewayFlags(fs *flag.FlagSet) *gatewayFlags {
	gf := &gatewayFlags{}
	gf.upstream = fs.String("upstream", "", "`URL` of the upstream MCP server's Streamable HTTP endpoint (this or --upstream-cmd)")
	gf.upstreamCmd = fs.String("upstream-cmd", "", "`'CMD ARGS...'` of an upstream MCP server over stdio, which the gateway starts, restarts when it dies and stops; "+
		"split into words as a shell would (quotes, backslashes), but run without a shell and without expansions (this or --upstream)")
	gf.config = fs.String("config", "", "JSON `file` of per-tool settings: {\"tools\": [{\"match\": GLOB, \"task\": BOOL, \"retry\": BOOL, \"timeout\": \"2h\", \"maxAttempts\": N}, ...]}, "+
		"the first entry matching a tool applying to it; it must agree with --task-tools and --retry-tools")
	fs.Var(&gf.headers, "upstream-header", "`'Name: value'` sent with every upstream request, such as the gateway's own credentials (repeatable); "+
		"the callers' tokens are never forwarded")
	gf.taskTools = fs.String("task-tools", "", "comma-separated `globs` of the upstream tools served as durable task tools (path.Match: * does not cross /); "+
		"the other tools pass through inline")
	gf.retryTools = fs.String("retry-tools", "", "comma-separated `globs` of the task tools that are safe to call again after a failure or an interrupted run; "+
		"for the others such a task fails instead")
	gf.callTimeout = fs.Duration("call-timeout", gateway.DefaultCallTimeout, "deadline of a pass-through call (at most "+gateway.MaxCallTimeout.String()+")")
	gf.taskTimeout = fs.Duration("task-call-timeout", gateway.DefaultTaskCallTimeout, "deadline of the upstream call of one run of a task tool")
	gf.inFlight = fs.Int("upstream-max-inflight", gateway.DefaultMaxInFlight, "upstream calls this process makes at once")
	gf.versions = fs.String("upstream-versions", "", "comma-separated protocol `revisions` the gateway may speak to the upstream, preferred first "+
		"(2026-07-28, 2025-11-25, 2025-06-18; default: all, newest first)")
	gf.serial = fs.Bool("upstream-cmd-serial", false, "give the --upstream-cmd process one tools/call at a time, so that every elicitation or sampling request "+
		"it sends reaches the client of the call in flight (without it, such a request that names no task is refused while several calls are in flight)")
	return gf
}

// flagNames maps the fields named by gateway.Options.Validate to flags.
var flagNames = strings.NewReplacer(
	"UpstreamHeaders:", "--upstream-header:",
	"UpstreamHeaders apply to an HTTP Upstream, not to UpstreamCommand", "--upstream-header applies to --upstream, not to --upstream-cmd",
	"Upstream or UpstreamCommand is required", "--upstream or --upstream-cmd is required",
	"Upstream and UpstreamCommand exclude each other: give one", "--upstream and --upstream-cmd exclude each other: give one",
	"UpstreamCommand:", "--upstream-cmd:",
	"TaskTools pattern", "--task-tools pattern",
	"RetryTools pattern", "--retry-tools pattern",
	"Tools[", "--config tools[",
	"Upstream:", "--upstream:",
	"TaskTools:", "--task-tools:",
	"RetryTools:", "--retry-tools:",
	"TaskCallTimeout", "--task-call-timeout",
	"CallTimeout", "--call-timeout",
	"MaxInFlight", "--upstream-max-inflight",
	"ProtocolVersions:", "--upstream-versions:",
	"SerialCalls applies to UpstreamCommand, not to an HTTP Upstream", "--upstream-cmd-serial applies to --upstream-cmd, not to --upstream",
	" (the default)", "",
)

// options turns the flags into gateway.Options; a value the gateway
// refuses is a usage error naming its flag, all problems on one line.
func (gf *gatewayFlags) options() (gateway.Options, error) {
	opts := gateway.Options{
		Upstream:         *gf.upstream,
		TaskTools:        splitGlobs(*gf.taskTools),
		RetryTools:       splitGlobs(*gf.retryTools),
		CallTimeout:      *gf.callTimeout,
		TaskCallTimeout:  *gf.taskTimeout,
		MaxInFlight:      *gf.inFlight,
		SerialCalls:      *gf.serial,
		ProtocolVersions: splitGlobs(*gf.versions),
	}
	var problems []string
	if *gf.config != "" {
		tools, err := readGatewayConfig(*gf.config)
		if err != nil {
			problems = append(problems, strings.Split(err.Error(), "\n")...)
		}
		opts.Tools = tools
	}
	if strings.TrimSpace(*gf.upstreamCmd) != "" {
		words, err := splitWords(*gf.upstreamCmd)
		if err != nil {
			problems = append(problems, fmt.Sprintf("--upstream-cmd: %v", err))
		}
		opts.UpstreamCommand = words
	} else if *gf.upstreamCmd != "" {
		problems = append(problems, "--upstream-cmd: no command in it")
	}
	switch {
	case opts.CallTimeout <= 0:
		problems = append(problems, "--call-timeout must be positive")
	case opts.TaskCallTimeout <= 0:
		problems = append(problems, "--task-call-timeout must be positive")
	case opts.MaxInFlight < 1:
		problems = append(problems, "--upstream-max-inflight must be at least 1")
	}
	for _, h := range gf.headers {
		name, value, ok := strings.Cut(h, ":")
		if name = strings.TrimSpace(name); !ok || name == "" {
			problems = append(problems, fmt.Sprintf("--upstream-header %q: want 'Name: value'", h))
			continue
		}
		if opts.UpstreamHeaders == nil {
			opts.UpstreamHeaders = http.Header{}
		}
		opts.UpstreamHeaders.Add(name, strings.TrimSpace(value))
	}
	if len(problems) == 0 {
		if err := opts.Validate(); err != nil {
			problems = append(problems, strings.Split(flagNames.Replace(err.Error()), "\n")...)
		}
	}
	if len(problems) > 0 {
		return gateway.Options{}, nodecmd.Usagef("%s", strings.Join(problems, "; "))
	}
	return opts, nil
}

// splitGlobs splits a comma-separated list, trimming spaces; an empty list
// is nil, and an empty element stays (the gateway refuses it).
func splitGlobs(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}
