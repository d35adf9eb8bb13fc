package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"slices"

	"github.com/taskwire/taskwire/mcp"
)

// errToolGone is the error of a call of a mirrored tool that the
// upstream's latest listing no longer offers.
var errToolGone = errors.New("gateway: the upstream no longer offers the tool")

// textToolGone is what a client reads for it.
const textToolGone = "The upstream server no longer offers this tool (its tools changed when it restarted)."

// setOffered records the mirrored tools of a listing as what the upstream
// offers now.
func (g *Gateway) setOffered(tools []*mcp.Tool) {
	m := make(map[string]*mcp.Tool, len(tools))
	for _, t := range tools {
		m[t.Name] = t
	}
	g.offered.Store(&m)
}

// isOffered reports whether the upstream's latest listing has name.
func (g *Gateway) isOffered(name string) bool {
	m := g.offered.Load()
	if m == nil {
		return true // not listed yet: New has not returned
	}
	_, ok := (*m)[name]
	return ok
}

// relist lists the upstream's tools again after its process restarted
// (list: before calls reach the new process),
// within ctx and Options.ListTimeout, and logs what changed against the
// previous listing. The mirror served downstream stays as New built it:
// a tool added is served once the gateway restarts, a tool removed answers
// textToolGone, a tool whose schemas changed is served with the schemas
// of the first listing. A listing that fails keeps the previous one.
func (g *Gateway) relist(ctx context.Context, list lister) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.ListTimeout)
	defer cancel()
	listed, err := list(ctx)
	if err != nil {
		g.log.Warn("gateway: listing the upstream's tools after its restart failed; keeping the previous list", "category", string(classify(ctx, err)))
		return
	}
	if len(listed) > g.opts.MaxTools {
		g.log.Warn("gateway: the restarted upstream lists more than MaxTools tools; keeping the previous list", "tools", len(listed))
		return
	}
	now := g.mirror(listed)
	var before map[string]*mcp.Tool
	if p := g.offered.Load(); p != nil {
		before = *p
	}
	added, removed, changed := diffTools(before, now)
	g.setOffered(now)
	if len(added)+len(removed)+len(changed) == 0 {
		g.log.Info("gateway: the restarted upstream lists the same tools")
		return
	}
	g.log.Warn("gateway: the restarted upstream's tools changed; added tools are served after the gateway restarts, removed ones answer an error",
		"added", added, "removed", removed, "changed", changed)
}

// diffTools names the tools of now that before lacks (added), those of
// before that now lacks (removed) and those whose JSON differs (changed),
// each sorted and clipped for a log line.
func diffTools(before map[string]*mcp.Tool, now []*mcp.Tool) (added, removed, changed []string) {
	seen := map[string]bool{}
	for _, t := range now {
		seen[t.Name] = true
		old, ok := before[t.Name]
		switch {
		case !ok:
			added = append(added, clip(t.Name))
		case !sameTool(old, t):
			changed = append(changed, clip(t.Name))
		}
	}
	for name := range before {
		if !seen[name] {
			removed = append(removed, clip(name))
		}
	}
	slices.Sort(removed)
	return added, removed, changed
}

func sameTool(a, b *mcp.Tool) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(ja) == string(jb)
}
