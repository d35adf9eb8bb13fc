package gateway

import (
	"context"

	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// Task tools the upstream adds after Register.
//
// Every process that builds a Gateway (an API node, a worker, or both)
// follows the upstream's tools/list changes with its own refresher. A
// listing with a task tool the durable set lacks adds it to the set with
// durable.Set.AddRawLive, which registers its handler on the runtimes
// that work the set (their next claims take the tool's jobs, its kind
// being the tool's name as for every durable tool) and the tool on the
// endpoint that serves it. A process that has not seen the tool yet does
// not claim its jobs: they wait in the store for one that has. A worker
// whose handler knows a tool its latest listing lacks lists the upstream
// again before it fails a task as "no longer offered" (confirm), so that
// a worker that heard of a re-added tool later than the API node does
// not fail that tool's new tasks.

// adopt records set and the task tools Register put in it, on the first
// call (it returns false on any other, logging it). On a worker (ep nil),
// a listing applied between New and Register is applied to set now; an
// API node applies it once ep is served.
func (c *catalog) adopt(ep *server.Endpoint, set *durable.Set, tools []*mcp.Tool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.set != nil {
		c.g.log.Warn("gateway: Register with a second durable set: only the first one follows the upstream's changes")
		return false
	}
	c.set, c.asTasks, c.refused = set, map[string]bool{}, map[string]bool{}
	for _, t := range tools {
		c.asTasks[t.Name] = c.g.isTask(t.Name)
	}
	if ep == nil {
		c.addTasks(c.latest, nil)
	}
	return true
}

// addTasks adds to the durable set the task tools of now it lacks, except
// those whose name is taken on the endpoint by another tool, and returns
// their names. Called with c.mu held.
func (c *catalog) addTasks(now []*mcp.Tool, taken map[string]bool) map[string]bool {
	added := map[string]bool{}
	if c.set == nil {
		return added // before Register
	}
	for _, t := range now {
		name := t.Name
		p, err := c.g.opts.planFor(name)
		if err != nil || !p.task || c.asTasks[name] || c.refused[name] || taken[name] {
			continue
		}
		if err := c.set.AddRawLive(c.g.rawTool(t)); err != nil {
			// A refusal of the endpoint or the runtime: logged once.
			c.refused[name] = true
			c.g.log.Error("gateway: new upstream task tool left out: it could not be added", "tool", clip(name), "err", err.Error())
			continue
		}
		c.asTasks[name], added[name] = true, true
		c.g.log.Info("gateway: new upstream task tool served", "tool", clip(name))
	}
	return added
}

// confirm lists the upstream's tools again, within ctx and
// Options.ListTimeout, when its latest listing lacks name: a run of a
// task the API node created after the upstream (re-)added the tool may
// reach a worker whose refresher has not heard of it yet. A listing that
// fails leaves the latest one.
func (c *catalog) confirm(ctx context.Context, name string) {
	c.mu.Lock()
	started := c.done != nil
	c.mu.Unlock()
	if !started || c.g.isOffered(name) {
		return
	}
	if err := c.refresh(ctx, c.up.listTools); err != nil {
		c.g.log.Warn("gateway: listing the upstream's tools for a tool it no longer listed failed", "tool", clip(name), "category", string(classify(ctx, err)))
	}
}

// HasTaskTools reports whether the options name any task tools
// (Options.TaskTools, or a Tools entry with Task), whether or not the
// upstream lists a matching tool now. An endpoint for such a gateway
// should serve Tasks from the start (server.EndpointOptions.
// TaskProtocolVersions), so that task tools the upstream adds later can
// be served.
func (g *Gateway) HasTaskTools() bool { return g.opts.hasTaskTools() }
