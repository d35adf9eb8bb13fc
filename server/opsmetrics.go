package server

import (
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// ToolMetrics is an optional extension of Metrics: when Options.Metrics
// also implements it, the server reports every admitted tools/call once
// more, with the tool it named, after Metrics.RequestFinished. Tool is a
// name registered on the endpoint (whether or not the caller may see it),
// or "unknown" for any other name, so the label is bounded by the
// registrations. Implementations must be safe for concurrent use and
// must not block.
type ToolMetrics interface {
	ToolCallFinished(info ToolCallInfo, outcome Outcome, elapsed time.Duration)
}

// ToolCallInfo names an admitted tools/call with bounded values only: the
// endpoint's configured name and a registered tool name or "unknown".
type ToolCallInfo struct {
	Endpoint string
	Tool     string
}

// unknownTool is the tool label of names no tool is registered under.
const unknownTool = "unknown"

// toolCallFinished reports a finished tools/call to Options.Metrics when it
// implements ToolMetrics; other methods are ignored.
func (s *Server) toolCallFinished(ep *Endpoint, method string, p *rawParams, outcome Outcome, elapsed time.Duration) {
	tm, ok := s.opts.Metrics.(ToolMetrics)
	if !ok || method != mcp.MethodToolsCall {
		return
	}
	tool := unknownTool
	if p != nil {
		if _, registered := ep.live.load().index[p.Name]; registered {
			tool = p.Name
		}
	}
	tm.ToolCallFinished(ToolCallInfo{Endpoint: ep.opts.Name, Tool: tool}, outcome, elapsed)
}

// Gauges are a node's counts of long-lived request state at one moment,
// for monitoring.
type Gauges struct {
	// ListenStreams counts the subscriptions/listen streams open or being
	// opened on this node (0 without Options.Subscriptions).
	ListenStreams int
	// LiveSessions counts the 2025-era sessions that hold state on this
	// node: a GET stream, resource subscriptions or requests in flight.
	// The sessions themselves live in the session store, shared by every
	// node.
	LiveSessions int
}

// Gauges returns the node's current Gauges. It takes the same locks as
// opening a listen or a session, briefly, and is safe to call at any
// time, also after Close.
func (s *Server) Gauges() Gauges {
	var g Gauges
	if s.subs != nil {
		g.ListenStreams = s.subs.count()
	}
	if l := s.legacy; l != nil {
		l.live.mu.Lock()
		g.LiveSessions = len(l.live.sessions)
		l.live.mu.Unlock()
	}
	return g
}
