package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync/atomic"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// Gateway is a connection to one upstream MCP server and the mirror of its
// tools, ready to be registered on an endpoint and a durable set. Build it
// with New; it is safe for concurrent use once registered. Close releases
// it after the node that serves it has stopped.
type Gateway struct {
	opts     Options
	upstream upstream
	tools    []*mcp.Tool     // mirrored, sorted by name
	plans    map[string]plan // of every mirrored tool, by name
	// offered are the tools of the upstream's latest listing, by name:
	// a mirrored tool it no longer offers answers errToolGone.
	offered atomic.Pointer[map[string]*mcp.Tool]
	slots   chan struct{}
	log     *slog.Logger
	cat     *catalog // keeps the mirror current (catalog.go)
	// subs follow the upstream resources downstream clients subscribe
	// to (subscribe.go).
	subs *resourceSubs
	// tasks runs task tools as upstream tasks where the upstream offers
	// them (uptask.go): for HTTP a client of its own, for stdio the
	// upstream itself; nil without task tools.
	tasks taskCaller
	// held are the inline calls kept open while their client answers
	// the upstream's input request (held.go).
	held *heldCalls
	// modern carries the HTTP clients' requests to a 2026-07-28
	// UpstreamCommand process (stdio_modern.go); nil otherwise.
	modern *stdioTransport
}

// New validates opts (every problem in one error, see Options.Validate),
// connects to the upstream, negotiates the protocol revision and lists its
// tools, within ctx and Options.ListTimeout. It fails when the upstream
// cannot be reached, refuses the gateway's credentials (a *client.AuthError
// in the chain), or lists more than Options.MaxTools tools. A tool the
// gateway cannot serve (a name or schema server.CheckTool refuses, or one
// larger than Options.MaxToolBytes) is left out and logged by name, so that
// one exotic tool does not take the others down.
func New(ctx context.Context, opts Options) (*Gateway, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	opts = opts.withDefaults()
	g := &Gateway{opts: opts, slots: make(chan struct{}, opts.MaxInFlight), log: opts.Logger, held: newHeldCalls()}
	g.cat = newCatalog(g)
	g.subs = newResourceSubs(g)
	lctx, cancel := context.WithTimeout(ctx, opts.ListTimeout)
	defer cancel()
	up, err := g.connect(lctx, opts)
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	g.upstream = up
	listed, err := up.listTools(lctx)
	if err != nil {
		g.closeConn()
		return nil, fmt.Errorf("gateway: listing the upstream's tools: %w", err)
	}
	if len(listed) > opts.MaxTools {
		g.closeConn()
		return nil, fmt.Errorf("gateway: the upstream lists %d tools, more than MaxTools (%d)", len(listed), opts.MaxTools)
	}
	g.tools = g.mirror(listed)
	plans := map[string]plan{}
	var errs []error
	for _, t := range g.tools {
		p, err := opts.planFor(t.Name)
		plans[t.Name] = p
		if err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		g.closeConn()
		return nil, fmt.Errorf("gateway: %w", errors.Join(errs...))
	}
	g.plans = plans
	g.warnPatterns()
	g.setOffered(g.tools)
	g.cat.start(up, g.tools) // from here on, list changes and restarts refresh the mirror
	g.subs.start()
	return g, nil
}

// connect starts the upstream's clients: a 2026-07-28 UpstreamCommand
// process is spoken to through the HTTP clients over its stdioTransport,
// a 2025-era one as a stdioUpstream, an HTTP upstream with the HTTP
// clients. It sets g.tasks and g.modern.
func (g *Gateway) connect(ctx context.Context, opts Options) (upstream, error) {
	if len(opts.UpstreamCommand) > 0 && speaksModern(opts.ProtocolVersions) {
		tr, err := startModernStdio(ctx, opts)
		if err != nil {
			return nil, err
		}
		if tr != nil {
			g.modern = tr
			tr.restarted = func() {
				g.cat.listChanged(client.ToolsChanged | client.PromptsChanged | client.ResourcesChanged)
				g.subs.lost() // the new process has no subscriptions
			}
			opts.Upstream, opts.Transport = modernCommandURL, tr
			opts.ProtocolVersions = []string{mcp.LatestProtocolVersion}
		} else if opts.ProtocolVersions != nil {
			if opts.ProtocolVersions = legacyVersions(opts.ProtocolVersions); len(opts.ProtocolVersions) == 0 {
				return nil, errors.New("the upstream command does not answer server/discover as a 2026-07-28 server, and ProtocolVersions allows no other revision")
			}
		}
	}
	if opts.Upstream == "" {
		restarted := func(ctx context.Context, list lister) {
			g.cat.restarted(ctx, list)
			g.subs.lost() // the new process has no subscriptions
		}
		s, err := startStdioUpstream(ctx, opts, g.cat.listChanged, g.subs.updated, restarted, g.isOffered)
		if err != nil {
			return nil, err
		}
		if opts.hasTaskTools() {
			g.tasks = s // runs task tools as upstream tasks where it offers them
		}
		return s, nil
	}
	h, err := newHTTPUpstream(opts, g.cat.listChanged, g.subs.updated)
	if err == nil {
		g.tasks, err = newTaskCaller(opts)
	}
	if err != nil {
		if g.modern != nil {
			_ = g.modern.close()
		}
		return nil, err
	}
	return h, nil
}

// legacyVersions are the 2025 revisions of versions.
func legacyVersions(versions []string) []string {
	var out []string
	for _, v := range versions {
		if v != mcp.LatestProtocolVersion {
			out = append(out, v)
		}
	}
	return out
}

// closeConn closes what connect started, for New's failures.
func (g *Gateway) closeConn() {
	_ = g.upstream.close()
	if g.tasks != nil {
		_ = g.tasks.close()
	}
	if g.modern != nil {
		_ = g.modern.close()
	}
}

// mirror copies what downstream clients see of each upstream tool, leaving
// out (and logging) those the gateway cannot serve.
func (g *Gateway) mirror(listed []*mcp.Tool) []*mcp.Tool {
	var out []*mcp.Tool
	seen := map[string]bool{}
	for _, t := range listed {
		if t == nil {
			continue
		}
		m := &mcp.Tool{
			Name: t.Name, Title: t.Title, Description: t.Description,
			InputSchema: t.InputSchema, OutputSchema: t.OutputSchema,
			Annotations: t.Annotations, Icons: t.Icons,
		}
		if len(m.InputSchema) == 0 {
			m.InputSchema = json.RawMessage(`{"type":"object"}`)
		}
		b, err := json.Marshal(m)
		switch {
		case err != nil:
			g.log.Warn("gateway: upstream tool left out: it does not encode", "tool", clip(t.Name))
			continue
		case len(b) > g.opts.MaxToolBytes:
			g.log.Warn("gateway: upstream tool left out: larger than MaxToolBytes", "tool", clip(t.Name), "bytes", len(b))
			continue
		case seen[t.Name]:
			g.log.Warn("gateway: upstream tool left out: listed twice", "tool", clip(t.Name))
			continue
		}
		if err := server.CheckTool(m); err != nil {
			g.log.Warn("gateway: upstream tool left out: the gateway cannot serve it", "tool", clip(t.Name), "reason", err.Error())
			continue
		}
		seen[t.Name] = true
		out = append(out, m)
	}
	slices.SortFunc(out, func(a, b *mcp.Tool) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// warnPatterns logs the TaskTools and RetryTools patterns that match no
// mirrored tool: most likely a typo.
func (g *Gateway) warnPatterns() {
	for _, p := range g.opts.TaskTools {
		if !slices.ContainsFunc(g.tools, func(t *mcp.Tool) bool { return matchAny([]string{p}, t.Name) }) {
			g.log.Warn("gateway: a TaskTools pattern matches no upstream tool", "pattern", p)
		}
	}
	for _, p := range g.opts.RetryTools {
		if !slices.ContainsFunc(g.tools, func(t *mcp.Tool) bool { return g.isTask(t.Name) && matchAny([]string{p}, t.Name) }) {
			g.log.Warn("gateway: a RetryTools pattern matches no task tool", "pattern", p)
		}
	}
}

// clip bounds an upstream-chosen string in a log line.
func clip(s string) string {
	const maxLog = 128
	if len(s) > maxLog {
		return s[:maxLog] + "…"
	}
	return s
}

// Tools returns copies of the mirrored upstream tools, sorted by name.
func (g *Gateway) Tools() []*mcp.Tool {
	out := make([]*mcp.Tool, len(g.tools))
	for i, t := range g.tools {
		c := *t
		out[i] = &c
	}
	return out
}

// IsTaskTool reports whether the upstream tool name is served as a durable
// task tool (it matches Options.TaskTools).
func (g *Gateway) IsTaskTool(name string) bool { return g.isTask(name) }

// IsRetryTool reports whether the task tool name is called again after a
// failed or interrupted run (it matches Options.TaskTools and
// Options.RetryTools).
func (g *Gateway) IsRetryTool(name string) bool { return g.isRetry(name) }

func (g *Gateway) isTask(name string) bool { return g.planOf(name).task }

func (g *Gateway) isRetry(name string) bool { return g.planOf(name).retry }

// planOf is the plan of the tool name: New's for a tool it listed, else
// resolved now (a tool the upstream added later; a contradiction in its
// settings leaves it out of the mirror, see catalog.sync).
func (g *Gateway) planOf(name string) plan {
	if p, ok := g.plans[name]; ok {
		return p
	}
	p, _ := g.opts.planFor(name)
	return p
}

// Register adds the mirrored tools: the task tools to tools (as durable raw
// tools whose worker handler calls the upstream, see durable.AddRaw) and
// the others to ep as inline tools that forward each call within
// Options.CallTimeout. An API node and its workers both register (the
// worker side needs only tools; ep may then be nil). Problems of the
// registrations themselves (a name ep or tools already holds) are reported
// by server.New and durable.Set.Check, as for any tool. On ep, Register
// also serves the upstream's resources, prompts and completion (those it
// advertised) and keeps the mirrored tools current once ep is served (see
// the package documentation); only the first endpoint is kept current.
// A task tool the upstream adds later is added to tools with
// durable.Set.AddRawLive, so that the node serving ep and the runtimes
// working tools take it at once: ep must then serve Tasks
// (server.EndpointOptions.TaskProtocolVersions when it may start with no
// task tool). Only the first set is kept current. Register fails only
// when it is given nothing to register on.
func (g *Gateway) Register(ep *server.Endpoint, tools *durable.Set) error {
	if tools == nil {
		return errors.New("gateway: Register needs a durable.Set")
	}
	for _, t := range g.tools {
		if g.isTask(t.Name) {
			durable.AddRaw(tools, g.rawTool(t))
			continue
		}
		if ep != nil {
			ep.AddRawTool(t, g.passThrough(t.Name))
		}
	}
	g.cat.register(ep, tools, g.tools)
	return nil
}

// rawTool is the durable tool of the task tool t.
func (g *Gateway) rawTool(t *mcp.Tool) durable.RawTool {
	rt := durable.RawTool{Tool: t, Run: g.runTask(t.Name)}
	// Relayed input: an upstream task's of every task tool, an inline
	// call's of retry tools (relay.go).
	rt.TaskInput = relayKinds
	if g.isRetry(t.Name) {
		rt.MaxAttempts = g.planOf(t.Name).maxAttempts
	}
	return rt
}

// Close closes the upstream connections: it ends the pass-through
// client's 2025-era session, and leaves the sessions of upstream tasks
// open (a server binds 2025-11-25 tasks to them; a gateway started later
// resumes them to follow those tasks). Calls still running fail; close
// the gateway after the node serving it has stopped. Close is idempotent.
func (g *Gateway) Close() error {
	g.cat.close()
	g.subs.close()
	g.held.close()
	err := g.upstream.close()
	if g.tasks != nil {
		err = errors.Join(err, g.tasks.close())
	}
	if g.modern != nil {
		err = errors.Join(err, g.modern.close())
	}
	if err != nil {
		return fmt.Errorf("gateway: closing the upstream connection: %w", err)
	}
	return nil
}

// ProtocolVersion returns the revision negotiated with the upstream.
func (g *Gateway) ProtocolVersion() string { return g.upstream.protocolVersion() }
