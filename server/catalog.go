package server

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/taskwire/taskwire/mcp"
)

// ErrEndpointNotServed is returned by Endpoint.UpdateTools before New has
// built the endpoint: until then, register tools with AddTool and its
// siblings. Endpoint.Served tells when changes are accepted.
var ErrEndpointNotServed = errors.New("server: the endpoint is not served yet")

// toolCatalog is an immutable snapshot of the tools an endpoint serves:
// readers load it with one atomic read and never lock.
type toolCatalog struct {
	list  []*toolEntry // in registration order, additions last
	index map[string]*toolEntry
	// tasks are the task tools PutTaskTool added since New, served now
	// or removed since, by name: they stay known, as those registered
	// before New do (Endpoint.toolIndex), for the results of their tasks
	// and for RedefineTool.
	tasks map[string]*toolEntry
}

// liveTools holds the tools an endpoint serves now. Changes are
// serialized by mu and publish a new snapshot; an endpoint whose tools
// never change pays one atomic load per lookup.
type liveTools struct {
	mu  sync.Mutex
	cur atomic.Pointer[toolCatalog]
}

// init publishes the tools registered before New.
func (l *liveTools) init(tools []*toolEntry) {
	cat := &toolCatalog{list: slices.Clip(slices.Clone(tools)), index: make(map[string]*toolEntry, len(tools))}
	for _, t := range cat.list {
		cat.index[t.tool.Name] = t
	}
	l.cur.Store(cat)
}

// load returns the current snapshot; an empty one before init.
func (l *liveTools) load() *toolCatalog {
	if c := l.cur.Load(); c != nil {
		return c
	}
	return &toolCatalog{}
}

// servesTools reports whether the endpoint serves tools/list and
// tools/call.
func (ep *Endpoint) servesTools() bool { return len(ep.tools) > 0 || ep.opts.DynamicTools }

// Served returns a channel closed once New has built the endpoint, from
// which on UpdateTools and NotifyListChanged take effect. It is never
// closed when New fails.
func (ep *Endpoint) Served() <-chan struct{} { return ep.served }

// ToolChange is one change of an endpoint's tools, made with PutRawTool,
// PutTaskTool, RedefineTool or RemoveTool and applied by
// Endpoint.UpdateTools.
type ToolChange struct {
	op      toolOp
	tool    *mcp.Tool
	name    string
	handler ToolHandler
	opts    []ToolOption
	// fn and err are PutTaskTool's handler and the problem it found.
	fn  toolFunc
	err error
}

type toolOp int

const (
	opPut toolOp = iota + 1
	opPutTask
	opRedefine
	opRemove
)

// PutRawTool adds an inline raw tool, or replaces the inline tool of the
// same name (its definition, handler and options), as AddRawTool would
// register it: t.InputSchema is required. A tool that can create tasks
// cannot be replaced this way (its handler is part of the task set); give
// it a new definition with RedefineTool.
func PutRawTool(t *mcp.Tool, h ToolHandler, opts ...ToolOption) ToolChange {
	return ToolChange{op: opPut, tool: t, handler: h, opts: opts}
}

// RedefineTool gives the tool named t.Name a new definition (title,
// description, annotations, icons, input and output schemas, _meta) and
// keeps its handler, mode and options. It applies to a tool served now and
// to one registered before New and removed since, which it serves again.
// For a task tool, new calls are validated against the new input schema;
// tasks created before keep what they were created with.
func RedefineTool(t *mcp.Tool) ToolChange { return ToolChange{op: opRedefine, tool: t} }

// RemoveTool stops serving the tool called name: it leaves tools/list and
// answers tools/call exactly as an unknown tool does. Tasks a task tool
// created before stay readable (tasks/get and the result).
func RemoveTool(name string) ToolChange { return ToolChange{op: opRemove, name: name} }

// UpdateTools applies changes to the tools the endpoint serves, all or
// none: when any change is invalid (a name or schema CheckTool refuses, a
// tool to redefine or remove that is not there, a task tool to replace, a
// task tool to add on an endpoint that serves no Tasks), nothing changes and the error names every problem. Calls running keep
// the definition they started with; later calls, tools/list and tasks
// creation see the new one. When something changed, the endpoint
// announces it (NotifyListChanged with ListTools). It returns
// ErrEndpointNotServed before New has built the endpoint. It is safe for
// concurrent use; changes are applied one batch at a time.
func (ep *Endpoint) UpdateTools(changes ...ToolChange) error {
	if ep.server.Load() == nil {
		return ErrEndpointNotServed
	}
	if len(changes) == 0 {
		return nil
	}
	ep.live.mu.Lock()
	cur := ep.live.load()
	next := &toolCatalog{list: slices.Clone(cur.list), index: make(map[string]*toolEntry, len(cur.index)+len(changes)), tasks: cur.tasks}
	for k, v := range cur.index {
		next.index[k] = v
	}
	var errs []error
	for _, ch := range changes {
		if err := ep.applyToolChange(next, ch); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		ep.live.mu.Unlock()
		return fmt.Errorf("server: UpdateTools: %w", err)
	}
	next.list = slices.Clip(next.list)
	ep.live.cur.Store(next)
	ep.live.mu.Unlock()
	ep.NotifyListChanged(ListTools)
	return nil
}

// applyToolChange applies one change to next, a catalog no reader sees
// yet.
func (ep *Endpoint) applyToolChange(next *toolCatalog, ch ToolChange) error {
	switch ch.op {
	case opPut:
		return next.put(ep, ch)
	case opPutTask:
		return next.putTask(ep, ch)
	case opRedefine:
		if ch.tool == nil {
			return errors.New("RedefineTool: nil tool")
		}
		base := next.index[ch.tool.Name]
		if base == nil {
			base = ep.toolIndex[ch.tool.Name]
		}
		if base == nil {
			base = next.tasks[ch.tool.Name]
		}
		if base == nil {
			return fmt.Errorf("tool %q: nothing to redefine", ch.tool.Name)
		}
		e, err := redefined(base, ch.tool)
		if err != nil {
			return err
		}
		next.set(e)
		return nil
	case opRemove:
		if _, ok := next.index[ch.name]; !ok {
			return fmt.Errorf("tool %q: nothing to remove", ch.name)
		}
		delete(next.index, ch.name)
		next.list = slices.DeleteFunc(next.list, func(e *toolEntry) bool { return e.tool.Name == ch.name })
		return nil
	}
	return errors.New("a ToolChange made without PutRawTool, PutTaskTool, RedefineTool or RemoveTool")
}

// put adds or replaces an inline raw tool.
func (cat *toolCatalog) put(ep *Endpoint, ch ToolChange) error {
	if ch.tool == nil || ch.handler == nil {
		return errors.New("PutRawTool: a tool and a handler are required")
	}
	name := ch.tool.Name
	if old := cat.index[name]; old != nil && old.mode != taskNever {
		return fmt.Errorf("tool %q can create tasks: redefine it with RedefineTool", name)
	}
	if reg := ep.toolIndex[name]; reg != nil && reg.mode != taskNever || cat.tasks[name] != nil {
		return fmt.Errorf("tool %q can create tasks: redefine it with RedefineTool", name)
	}
	tt := *ch.tool
	if err := checkNameAndInput(&tt); err != nil {
		return err
	}
	e := &toolEntry{tool: &tt, handler: rawToolFunc(ch.handler)}
	for _, o := range ch.opts {
		o(e)
	}
	if err := e.compile(); err != nil {
		return fmt.Errorf("tool %q: %w", name, err)
	}
	cat.set(e)
	return nil
}

// set puts e in the catalog, in place of the entry of the same name or
// last.
func (cat *toolCatalog) set(e *toolEntry) {
	name := e.tool.Name
	if _, ok := cat.index[name]; ok {
		i := slices.IndexFunc(cat.list, func(o *toolEntry) bool { return o.tool.Name == name })
		cat.list[i] = e
	} else {
		cat.list = append(cat.list, e)
	}
	cat.index[name] = e
}

// redefined returns a copy of base serving the definition t.
func redefined(base *toolEntry, t *mcp.Tool) (*toolEntry, error) {
	tt := *t
	if err := checkNameAndInput(&tt); err != nil {
		return nil, err
	}
	e := *base
	e.tool = &tt
	e.input, e.output, e.headers = nil, nil, nil
	if err := e.compile(); err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	return &e, nil
}

// checkNameAndInput checks what compile does not: the name, and that
// there is an input schema.
func checkNameAndInput(t *mcp.Tool) error {
	if err := validToolName(t.Name); err != nil {
		return err
	}
	if len(t.InputSchema) == 0 {
		return fmt.Errorf("tool %q: no input schema", t.Name)
	}
	return nil
}

// NotifyListChanged announces that the endpoint's list of the given kind
// changed: to 2025-era sessions with a GET stream open on this node and to
// 2026-07-28 subscriptions/listen streams that asked for it (see
// Server.NotifyListChanged). UpdateTools calls it for tools; call it after
// a ResourceSource or PromptSource starts serving a different list. It
// does nothing before New has built the endpoint.
func (ep *Endpoint) NotifyListChanged(kind ListKind) {
	if s := ep.server.Load(); s != nil {
		s.NotifyListChanged(ep.opts.Name, kind)
	}
}

// Tools returns copies of the definitions of the tools the endpoint serves
// now, in list order (before New: none), whatever a CatalogPolicy would
// show a caller. It lets code that changes tools at run time (a gateway
// mirroring another server, say) see which names are taken.
func (ep *Endpoint) Tools() []*mcp.Tool {
	cat := ep.live.load()
	out := make([]*mcp.Tool, len(cat.list))
	for i, e := range cat.list {
		t := *e.tool
		out[i] = &t
	}
	return out
}
