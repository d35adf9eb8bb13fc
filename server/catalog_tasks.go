package server

import (
	"fmt"
	"maps"

	"github.com/taskwire/taskwire/mcp"
)

// PutTaskTool adds a task-required typed tool to an endpoint that is
// served already, as AddTaskTool registers one before New: schemas left
// empty are inferred from In and Out, every call creates a task, and opts
// apply as there (WithWaitInline, WithTaskInput, ...). UpdateTools refuses
// it when the endpoint serves no Tasks (it had no task tool at New and no
// EndpointOptions.TaskProtocolVersions), when the name is taken (by a tool
// served now, by any tool registered before New, or by a task tool added
// before, even one removed since: give that one a new definition with
// RedefineTool), or when an option does not apply, as New would. The
// endpoint keeps knowing the tool once it is removed, as it knows those
// registered before New: the results of its tasks stay readable.
func PutTaskTool[In, Out any](t *mcp.Tool, h TaskToolHandlerFor[In, Out], opts ...ToolOption) ToolChange {
	if t == nil || h == nil {
		return ToolChange{op: opPutTask, err: fmt.Errorf("PutTaskTool: a tool and a handler are required")}
	}
	tt, err := inferSchemas[In, Out](t)
	if err != nil {
		return ToolChange{op: opPutTask, err: err}
	}
	return ToolChange{op: opPutTask, tool: &tt, fn: taskToolFunc(h), opts: append(opts, taskRequiredOption(&tt))}
}

// putTask adds a task tool of PutTaskTool.
func (cat *toolCatalog) putTask(ep *Endpoint, ch ToolChange) error {
	if ch.err != nil {
		return ch.err
	}
	name := ch.tool.Name
	switch {
	case cat.index[name] != nil, ep.toolIndex[name] != nil:
		return fmt.Errorf("tool %q is registered already", name)
	case cat.tasks[name] != nil:
		return fmt.Errorf("tool %q was added before: redefine it with RedefineTool", name)
	}
	tt := *ch.tool
	if err := checkNameAndInput(&tt); err != nil {
		return err
	}
	e := &toolEntry{tool: &tt, handler: ch.fn}
	for _, o := range ch.opts {
		o(e)
	}
	if err := e.compile(); err != nil {
		return fmt.Errorf("tool %q: %w", name, err)
	}
	if err := ep.checkTaskEntry(e); err != nil {
		return err
	}
	cat.set(e)
	cat.tasks = maps.Clone(cat.tasks) // shared with the snapshot readers see
	if cat.tasks == nil {
		cat.tasks = map[string]*toolEntry{}
	}
	cat.tasks[name] = e
	return nil
}

// hadTaskTool reports whether the endpoint has known a task tool called
// name: registered before New, or added by PutTaskTool since (served now
// or not).
func (ep *Endpoint) hadTaskTool(name string) bool {
	if _, ok := ep.toolIndex[name]; ok {
		return true
	}
	_, ok := ep.live.load().tasks[name]
	return ok
}
