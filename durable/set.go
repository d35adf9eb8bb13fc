package durable

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/worker"
)

// Set is a set of durable tool declarations and their worker handlers, one
// value shared by an application's serve and worker code. The zero value is
// an empty set ready to use. Build it with Add (or Declare and Implement,
// AddRaw) from one goroutine, then call Serve and Work; Add, Declare,
// Implement and AddRaw are not safe for concurrent use. A raw tool may be
// added later, while the set is served and worked, with AddRawLive, which
// is safe for concurrent use with Serve, Work and Check. A Set must not be
// copied once used.
//
// Add, Declare, Implement and AddRaw never fail on their own: they record
// every problem they find, and Check, Serve and Work report them all at
// once.
type Set struct {
	// mu guards the set against AddRawLive, which may run while the set
	// is served and worked.
	mu    sync.Mutex
	decls []*decl
	impls []*impl
	// problems are those found while the set was built, in order.
	problems []problem
	// served and worked are where Serve and Work registered the tools,
	// for AddRawLive.
	served []served
	worked []*worker.Runtime
}

// served is an endpoint Serve registered the tools on, and its enqueuer.
type served struct {
	ep  *server.Endpoint
	enq enqueuer
}

// Tool is a durable tool: its declaration (what the API node serves) and its
// worker handler, registered together by Add so that the name and the types
// of both sides agree by construction.
type Tool[In, Out any] struct {
	// Tool carries the name, title, description and annotations. Empty
	// input and output schemas are inferred from In and Out once, when the
	// tool is added, exactly as server.AddTaskTool infers them. The name is
	// also the worker job kind.
	Tool *mcp.Tool
	// Run is the worker handler; its error decides the outcome of a run as
	// for worker.AddHandler. Required.
	Run func(ctx context.Context, job *worker.Job, in In) (Out, error)
	// Validate, when set, checks the input beyond its schema. It runs on
	// the API node before the task is created, where an error becomes a
	// tool result (isError) whose text the model reads and no task is
	// created; and on the worker before Run, where an error completes the
	// task with that tool result. Its text reaches the client: no secrets.
	Validate func(in In) error
	// TaskOptions configure the task and job of each call.
	TaskOptions
}

// TaskOptions configure the task and the job that each call of a durable
// tool creates, and how the tool is offered. Tool, ToolDecl and RawTool
// embed them; the zero value means the store's defaults, a tool that
// 2025-era clients without tasks may call inline, and no key.
type TaskOptions struct {
	// IdempotencyKey, when set, names the JSON field of In (a string; for
	// a RawTool, a top-level property of the input schema declared with
	// "type": "string") whose value is the creation's idempotency key: a
	// retried call with the same key and arguments returns the same task;
	// the same key with other arguments, or from a client of another
	// protocol revision, or after the tool's output schema or TaskInput
	// changed, is a tool error. An empty value means no key.
	IdempotencyKey string
	// MaxAttempts, TTL, PollInterval and Delay configure each job; zero
	// values are the store's defaults (see [backend.EnqueueOptions];
	// MaxAttempts is at most [backend.MaxMaxAttempts]). Delay postpones the
	// first run by that long after creation. Check, Serve and Work report a
	// negative value, and a MaxAttempts above the bound.
	MaxAttempts  int
	TTL          time.Duration
	PollInterval time.Duration
	Delay        time.Duration
	// RunTimeout bounds each run of the worker handler (each attempt;
	// zero: none): once it has passed, the handler's context ends with a
	// cause wrapping [worker.ErrRunTimeout] that names the timeout, and an
	// error the handler returns then counts as a failure of category
	// timeout, retried or failing the task by MaxAttempts like any other
	// (see [worker.WithRunTimeout]). Check, Serve and Work report a
	// negative value and one above [worker.MaxRunTimeout].
	RunTimeout time.Duration
	// Queue names the queue of the tool's jobs (default
	// backend.DefaultQueue, "default"): the tasks are enqueued in it, and
	// a worker runtime claims them only while it serves that queue
	// (worker.Options.Queues; by default a runtime serves the queues of
	// the tools Work registers). Check, Serve and Work report a name that
	// backend.CheckQueue refuses: 1 to 64 ASCII letters, digits, '_', '-'
	// and '.', starting with a letter or a digit.
	Queue string
	// Priority orders the tool's jobs within their queue: 1
	// (backend.HighestPriority) runs first, 4 (backend.LowestPriority)
	// last, and jobs of one priority run oldest first. Zero means
	// backend.DefaultPriority, the highest: give background tools a
	// larger number. Check, Serve and Work report other values.
	Priority int
	// RequireTasks hides the tool from clients that do not use tasks.
	// By default (false) a 2025-era client without tasks (a 2025-06-18
	// session, or a 2025-11-25 client that did not declare the tasks
	// capability) sees an ordinary tool whose call waits inline for its
	// task and returns the result ([server.WithWaitInline]). With
	// RequireTasks such a client does not find the tool in tools/list, and
	// a call gets an error that says why. A 2026-07-28 request that does
	// not declare the Tasks extension gets -32021 either way.
	RequireTasks bool
	// TaskInput declares the kinds of input the tasks may request
	// ([server.WithTaskInput]), such as [task.InputElicitationForm].
	TaskInput []string
	// Options are passed to [server.AddTaskTool] as they are.
	Options []server.ToolOption
}

// ToolDecl is the API side of a durable tool, for a deployment whose API
// nodes do not link the worker's code: Tool without Run. Its fields mean
// what Tool's mean.
type ToolDecl[In, Out any] struct {
	Tool     *mcp.Tool
	Validate func(in In) error
	TaskOptions
}

// RawTool is a durable tool whose worker handler reads the raw JSON
// arguments and returns the complete result, registered by AddRaw.
type RawTool struct {
	// Tool must carry an input schema (a JSON object schema); an output
	// schema is optional and validates every result.
	Tool *mcp.Tool
	// Run is the worker handler, as for worker.Runtime.AddRawHandler. Required.
	Run worker.RawHandler
	// Validate, when set, checks the raw arguments (already valid against
	// the input schema) on both sides, as Tool.Validate does.
	Validate func(args json.RawMessage) error
	// TaskOptions configure the task and job of each call, as Tool's do.
	TaskOptions
}

// Add declares t and implements it: the recommended path, used by a binary
// that serves, works, or both. Problems are reported by Check, Serve and
// Work.
func Add[In, Out any](s *Set, t Tool[In, Out]) {
	Declare(s, ToolDecl[In, Out]{Tool: t.Tool, Validate: t.Validate, TaskOptions: t.TaskOptions})
	if t.Tool != nil {
		Implement(s, t.Tool.Name, t.Run)
	}
}

// Declare records the API side of a durable tool. A worker binary that
// implements the tool must declare it too (Work needs the declaration's
// Validate and checks the types against it); share the declarations in a
// package both binaries import, and keep the handlers out of it.
func Declare[In, Out any](s *Set, t ToolDecl[In, Out]) {
	if t.Tool == nil {
		s.report("", "a declaration of In %s and Out %s has no Tool", reflect.TypeFor[In](), reflect.TypeFor[Out]())
		return
	}
	name := t.Tool.Name
	d := &decl{
		name: name, in: reflect.TypeFor[In](), out: reflect.TypeFor[Out](),
		job:      t.TaskOptions,
		validate: t.Validate,
	}
	if !s.add(d) {
		return
	}
	ok := s.checkJob(name, d.job)
	tool, err := server.InferToolSchemas[In, Out](t.Tool)
	if err != nil {
		s.reportErr(name, err)
		ok = false
	}
	keyOf, err := stringField[In](t.IdempotencyKey)
	if err != nil {
		s.report(name, "%v", err)
		ok = false
	}
	if !ok {
		return
	}
	validate := t.Validate
	d.serve = func(ep *server.Endpoint, enq enqueuer) {
		server.AddTaskTool(ep, tool, creation[In, Out](d, enq, keyOf, validate), d.job.toolOptions()...)
	}
}

// Implement records the worker side of a durable tool declared (in the
// same Set) with the same name and types: run handles its jobs, after the
// declaration's Validate. Work reports an implementation without a
// declaration, or whose In or Out differ from the declaration's.
func Implement[In, Out any](s *Set, name string, run func(ctx context.Context, job *worker.Job, in In) (Out, error)) {
	im := &impl{name: name, in: reflect.TypeFor[In](), out: reflect.TypeFor[Out]()}
	if !s.addImpl(im) {
		return
	}
	if run == nil {
		s.report(name, "the handler is nil")
		return
	}
	im.work = func(rt *worker.Runtime, d *decl) error {
		validate, _ := d.validate.(func(In) error)
		return worker.AddHandler(rt, name, func(ctx context.Context, job *worker.Job, in In) (Out, error) {
			if validate != nil {
				if err := validate(in); err != nil {
					var zero Out
					return zero, worker.ToolError(err.Error())
				}
			}
			return run(ctx, job, in)
		}, d.job.handlerOptions()...)
	}
}

// AddRaw declares and implements a raw durable tool, like Add.
func AddRaw(s *Set, t RawTool) {
	if t.Tool == nil {
		s.report("", "a raw declaration has no Tool")
		return
	}
	name := t.Tool.Name
	d := &decl{
		name: name, in: rawIn, out: rawOut,
		job:      t.TaskOptions,
		validate: t.Validate,
	}
	if s.add(d) {
		tool := *t.Tool
		ok := s.checkJob(name, d.job)
		if err := server.CheckTool(&tool); err != nil {
			s.reportErr(name, err)
			ok = false
		} else if err := stringProperty(tool.InputSchema, t.IdempotencyKey); err != nil {
			s.report(name, "%v", err)
			ok = false
		}
		if ok {
			d.serve = func(ep *server.Endpoint, enq enqueuer) {
				server.AddTaskTool(ep, &tool, rawCreation(d, enq, t.Validate), d.job.toolOptions()...)
			}
			d.put = func(enq enqueuer) server.ToolChange {
				return server.PutTaskTool(&tool, rawCreation(d, enq, t.Validate), d.job.toolOptions()...)
			}
		}
	}
	im := &impl{name: name, in: rawIn, out: rawOut}
	if !s.addImpl(im) {
		return
	}
	if t.Run == nil {
		s.report(name, "the handler is nil")
		return
	}
	run := t.Run
	im.work = func(rt *worker.Runtime, d *decl) error {
		validate, _ := d.validate.(func(json.RawMessage) error)
		return rt.AddRawHandler(name, func(ctx context.Context, job *worker.Job) (*mcp.CallToolResult, error) {
			if validate != nil {
				if err := validate(job.Arguments()); err != nil {
					return nil, worker.ToolError(err.Error())
				}
			}
			return run(ctx, job)
		}, d.job.handlerOptions()...)
	}
}

// The In and Out a raw tool is reported with when its types are compared.
var (
	rawIn  = reflect.TypeFor[json.RawMessage]()
	rawOut = reflect.TypeFor[*mcp.CallToolResult]()
)

// decl is one declared tool.
type decl struct {
	name    string
	in, out reflect.Type
	job     TaskOptions
	// validate is the declaration's func(In) error, or for a raw tool its
	// func(json.RawMessage) error; possibly nil.
	validate any
	// serve registers the tool; nil when the declaration has problems.
	serve func(ep *server.Endpoint, enq enqueuer)
	// put is the change that adds a raw tool to a served endpoint
	// (AddRawLive); nil for typed tools and with problems.
	put func(enq enqueuer) server.ToolChange
}

// impl is one worker handler.
type impl struct {
	name    string
	in, out reflect.Type
	// work registers the handler with the declaration's Validate; nil
	// when the handler is nil.
	work func(rt *worker.Runtime, d *decl) error
}

// toolOptions are the server options of the declaration.
func (j TaskOptions) toolOptions() []server.ToolOption {
	opts := append([]server.ToolOption(nil), j.Options...)
	if !j.RequireTasks {
		opts = append(opts, server.WithWaitInline())
	}
	if len(j.TaskInput) > 0 {
		opts = append(opts, server.WithTaskInput(j.TaskInput...))
	}
	return opts
}

// handlerOptions are the worker options of the declaration.
func (j TaskOptions) handlerOptions() []worker.HandlerOption {
	var opts []worker.HandlerOption
	if j.RunTimeout != 0 {
		opts = append(opts, worker.WithRunTimeout(j.RunTimeout))
	}
	if j.Queue != "" {
		opts = append(opts, worker.WithQueue(j.Queue))
	}
	return opts
}

// checkJob reports job options that no store accepts; it returns whether
// there were none.
func (s *Set) checkJob(name string, j TaskOptions) bool {
	n := len(s.problems)
	if j.MaxAttempts < 0 {
		s.report(name, "MaxAttempts must not be negative")
	} else if j.MaxAttempts > backend.MaxMaxAttempts {
		s.report(name, "MaxAttempts must be at most %d", backend.MaxMaxAttempts)
	}
	if j.TTL < 0 || j.PollInterval < 0 || j.Delay < 0 {
		s.report(name, "TTL, PollInterval and Delay must not be negative")
	}
	if j.RunTimeout < 0 {
		s.report(name, "RunTimeout must not be negative")
	} else if j.RunTimeout > worker.MaxRunTimeout {
		s.report(name, "RunTimeout must be at most %v (worker.MaxRunTimeout), got %v", worker.MaxRunTimeout, j.RunTimeout)
	}
	if j.Queue != "" {
		if err := backend.CheckQueue(j.Queue); err != nil {
			s.report(name, "Queue %q: %v", j.Queue, err)
		}
	}
	if err := backend.CheckPriority(j.Priority); err != nil {
		s.report(name, "Priority: %v", err)
	}
	return len(s.problems) == n
}

// add records d, or reports a duplicate name and returns false.
func (s *Set) add(d *decl) bool {
	if s.declOf(d.name) != nil {
		s.report(d.name, "declared twice")
		return false
	}
	s.decls = append(s.decls, d)
	return true
}

// addImpl records im, or reports a duplicate name and returns false.
func (s *Set) addImpl(im *impl) bool {
	for _, o := range s.impls {
		if o.name == im.name {
			s.report(im.name, "implemented twice")
			return false
		}
	}
	s.impls = append(s.impls, im)
	return true
}

func (s *Set) declOf(name string) *decl {
	for _, d := range s.decls {
		if d.name == name {
			return d
		}
	}
	return nil
}

// problem is one line of Check's error.
type problem struct {
	tool string // sorts the lines; "" when the tool has no name
	line string
}

// report records a problem of the named tool.
func (s *Set) report(tool, format string, args ...any) {
	line := "durable: " + fmt.Sprintf(format, args...)
	if tool != "" {
		line = fmt.Sprintf("durable: tool %q: ", tool) + fmt.Sprintf(format, args...)
	}
	s.problems = append(s.problems, problem{tool: tool, line: line})
}

// reportErr records a problem of the server package, whose error names
// the tool already.
func (s *Set) reportErr(tool string, err error) {
	s.problems = append(s.problems, problem{tool: tool, line: "durable: " + err.Error()})
}
