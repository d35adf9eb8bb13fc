package durable

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

var errNoSet = errors.New("durable: nil Set")

// Check reports every problem of the set in one error, one line per
// problem, each naming its tool, sorted by tool name: invalid tool names
// and schemas (including schemas that cannot be inferred from In or Out),
// an IdempotencyKey that names no string field, negative job options, a
// MaxAttempts or RunTimeout above its bound, a Queue name or a Priority
// that no store keeps (see TaskOptions.Queue and Priority), a
// nil Tool or handler, a name declared or implemented twice, a handler
// without a declaration, a declaration without a handler, and a handler
// whose In or Out differ from its declaration's. It returns nil for a
// sound set. Work runs exactly this check; Serve runs it without the
// missing-handler rule (see Serve).
func (s *Set) Check() error {
	if s == nil {
		return errNoSet
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.check(true)
}

// check is Check, with s.mu held.
func (s *Set) check(needHandlers bool) error {
	problems := slices.Clone(s.problems)
	add := func(tool, format string, args ...any) {
		problems = append(problems, problem{tool: tool, line: fmt.Sprintf("durable: tool %q: ", tool) + fmt.Sprintf(format, args...)})
	}
	for _, im := range s.impls {
		d := s.declOf(im.name)
		switch {
		case d == nil:
			add(im.name, "has a handler but no declaration")
			continue
		case d.in != im.in:
			a, b := typeNames(d.in, im.in)
			add(im.name, "In types differ: declared %s, handler takes %s", a, b)
		}
		if d.out != im.out {
			a, b := typeNames(d.out, im.out)
			add(im.name, "Out types differ: declared %s, handler returns %s", a, b)
		}
	}
	if needHandlers {
		for _, d := range s.decls {
			if !slices.ContainsFunc(s.impls, func(im *impl) bool { return im.name == d.name }) {
				add(d.name, "declared but has no handler")
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.SortStableFunc(problems, func(a, b problem) int { return cmp.Compare(a.tool, b.tool) })
	errs := make([]error, len(problems))
	for i, p := range problems {
		errs[i] = errors.New(p.line)
	}
	return errors.Join(errs...)
}

// typeNames renders two different types, with their package paths when
// their short names are the same.
func typeNames(a, b reflect.Type) (string, string) {
	if a.String() != b.String() {
		return a.String(), b.String()
	}
	return qualified(a), qualified(b)
}

func qualified(t reflect.Type) string {
	if t.PkgPath() == "" {
		return t.String()
	}
	return t.PkgPath() + "." + t.Name()
}

// Serve registers every declared tool on ep as a task-required tool
// (server.AddTaskTool) whose creation handler runs Validate, reads the
// idempotency key and creates the task and its job in one transaction with
// enq (a durable store). It first runs Check, except that a declaration
// without a handler is no problem here: an API node of a split deployment
// declares tools that only its workers implement. Every other problem is
// reported, and then nothing is registered.
//
// A call's outcome: a Validate error is a tool error result with its text;
// an idempotency key reused with other arguments, and text a store cannot
// keep (backend.ErrInvalidText), are tool errors with fixed texts; any
// other Enqueue error goes to the server, which logs it (scrubbed of the
// call's arguments) and answers -32603 "Internal error". A key that holds
// the task of a call of another protocol revision, or of the tool as
// another deployment declared it (another output schema or input kinds),
// is a tool error with a fixed text too: the server hands out only a task
// of the same call (task.Origin.SameCall). Problems only the server can
// see (a name also registered by another tool of ep, an endpoint without
// Tasks, an unknown TaskInput kind) are reported by server.New.
func (s *Set) Serve(ep *server.Endpoint, enq backend.Enqueuer) error {
	if s == nil {
		return errNoSet
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(false); err != nil {
		return err
	}
	switch {
	case ep == nil:
		return errors.New("durable: Serve needs an endpoint")
	case enq == nil:
		return errors.New("durable: Serve needs an Enqueuer (a durable store)")
	}
	for _, d := range s.decls {
		d.serve(ep, enq)
	}
	s.served = append(s.served, served{ep: ep, enq: enq})
	return nil
}

// Work registers the handler of every declared tool on rt, each running
// the declaration's Validate before the handler. It first runs Check and
// registers nothing when Check fails; it then fails like worker.AddHandler (a
// kind rt already handles, or a runtime already running).
func (s *Set) Work(rt *worker.Runtime) error {
	if s == nil {
		return errNoSet
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check(true); err != nil {
		return err
	}
	if rt == nil {
		return errors.New("durable: Work needs a worker runtime")
	}
	var errs []error
	for _, im := range s.impls {
		if err := im.work(rt, s.declOf(im.name)); err != nil {
			errs = append(errs, fmt.Errorf("durable: tool %q: %w", im.name, err))
		}
	}
	s.worked = append(s.worked, rt)
	return errors.Join(errs...)
}

// enqueuer is what Serve enqueues in; the store-side names this package
// uses (backend.Enqueuer, EnqueueOptions and the Enqueue errors) appear only
// here, in Serve and in enqueue.
type enqueuer = backend.Enqueuer

// creation is the creation handler of a typed declaration.
func creation[In, Out any](d *decl, enq enqueuer, keyOf func(In) string, validate func(In) error) server.TaskToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *server.Request, in In, cc *task.CreationContext) (task.Handle, error) {
		if validate != nil {
			if err := validate(in); err != nil {
				return task.Handle{}, server.NewToolError(err)
			}
		}
		return d.enqueue(ctx, req, enq, cc, creationKey(req, keyOf(in)))
	}
}

// rawCreation is the creation handler of a raw declaration.
func rawCreation(d *decl, enq enqueuer, validate func(json.RawMessage) error) server.TaskToolHandlerFor[json.RawMessage, any] {
	return func(ctx context.Context, req *server.Request, args json.RawMessage, cc *task.CreationContext) (task.Handle, error) {
		if validate != nil {
			if err := validate(args); err != nil {
				return task.Handle{}, server.NewToolError(err)
			}
		}
		key, err := rawKey(args, d.job.IdempotencyKey)
		if err != nil {
			return task.Handle{}, server.NewToolError(err)
		}
		return d.enqueue(ctx, req, enq, cc, creationKey(req, key))
	}
}

// creationKey is the idempotency key of a creation: the key a program
// passed to server.Server.CreateTask, or else the key of the arguments.
func creationKey(req *server.Request, fromArgs string) string {
	if k := req.CreationKey(); k != "" {
		return k
	}
	return fromArgs
}

// enqueue creates the task and its job, and hands the committed snapshot to
// the server (Request.CreatedTask), which answers the call from it without
// reading the task back. Errors the model can act on are tool errors; the
// rest are the server's to log and hide.
func (d *decl) enqueue(ctx context.Context, req *server.Request, enq enqueuer, cc *task.CreationContext, key string) (task.Handle, error) {
	opts := backend.EnqueueOptions{
		IdempotencyKey: key, MaxAttempts: d.job.MaxAttempts, TTL: d.job.TTL, PollInterval: d.job.PollInterval,
		Queue: d.job.Queue, Priority: d.job.Priority,
	}
	if d.job.Delay > 0 {
		opts.RunAt = time.Now().Add(d.job.Delay)
	}
	t, err := enq.Enqueue(ctx, cc, opts)
	keyName := d.job.IdempotencyKey
	if req.CreationKey() != "" {
		keyName = "the idempotency key"
	}
	switch {
	case errors.Is(err, backend.ErrIdempotencyConflict):
		return task.Handle{}, server.NewToolError(fmt.Errorf("%s was already used with different arguments: "+
			"repeat the original arguments to get the original task, or use a new key", keyName))
	case errors.Is(err, backend.ErrInvalidText):
		what := "the arguments"
		if keyName != "" {
			what += ", " + keyName
		}
		return task.Handle{}, server.NewToolError(fmt.Errorf("the call cannot be stored as a task: %s "+
			"and the caller's name must be valid UTF-8 without NUL characters", what))
	case err != nil:
		return task.Handle{}, fmt.Errorf("durable: tool %q: enqueue: %w", d.name, err)
	}
	if err := d.heldByOtherCall(t.Origin(), cc.Origin, keyName); err != nil {
		return task.Handle{}, err
	}
	return req.CreatedTask(t), nil
}

// heldByOtherCall returns the tool error of a retry whose key holds the
// task of a call the retry cannot be given, or nil. A store matches a key
// by tenant, endpoint and tool and compares only the arguments, so the
// task it returns for a key may come from a client of another protocol
// revision, or from a server that declared the tool with another output
// schema or input kinds: the server hands out only a task of the same call
// (task.Origin.SameCall), and anything else would be the fixed internal
// error, which tells the client nothing was stored. A task the call has
// just created carries the call's own origin, so the common case is one
// comparison of equal bytes. Any other mismatch is left to the server's
// check: it is no retry's fault.
func (d *decl) heldByOtherCall(held, call task.Origin, keyName string) error {
	switch {
	case held.Equal(call) || held.Endpoint() != call.Endpoint() || held.Tool() != call.Tool():
		return nil
	case held.ProtocolVersion() != call.ProtocolVersion():
		return server.NewToolError(fmt.Errorf("%s was already used by a call of another MCP protocol revision, "+
			"whose task this call cannot be given: repeat the call from a client of that revision to reach it, "+
			"or use a new key", keyName))
	case !held.SameTool(call):
		return server.NewToolError(fmt.Errorf("%s was already used by a call of another version of this tool "+
			"(its output schema or task input changed since), whose task this call cannot be given: "+
			"use a new key", keyName))
	}
	return nil
}

// stringField returns the function that reads the JSON field named key
// from an In, or an error when In has no such string field. An empty key
// reads "".
func stringField[In any](key string) (func(In) string, error) {
	if key == "" {
		return func(In) string { return "" }, nil
	}
	t := reflect.TypeFor[In]()
	ptr := t.Kind() == reflect.Pointer
	if ptr {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("IdempotencyKey %q needs In to be a struct, not %s", key, reflect.TypeFor[In]())
	}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || jsonName(f) != key {
			continue
		}
		if f.Type.Kind() != reflect.String {
			return nil, fmt.Errorf("IdempotencyKey %q names a field of type %s; it must be a string", key, f.Type)
		}
		index := f.Index
		return func(in In) string {
			v := reflect.ValueOf(in)
			if ptr {
				if v.IsNil() {
					return ""
				}
				v = v.Elem()
			}
			fv, err := v.FieldByIndexErr(index)
			if err != nil { // a nil embedded pointer: the field is absent
				return ""
			}
			return fv.String()
		}, nil
	}
	return nil, fmt.Errorf("IdempotencyKey %q names no JSON field of %s", key, reflect.TypeFor[In]())
}

// jsonName is the JSON member name of a struct field as encoding/json
// encodes it, or "" when the field is not encoded under a name of its own
// (skipped, or an untagged embedded struct whose fields are promoted).
func jsonName(f reflect.StructField) string {
	tag, ok := f.Tag.Lookup("json")
	name, _, _ := strings.Cut(tag, ",")
	switch {
	case tag == "-":
		return ""
	case name != "":
		return name
	case f.Anonymous && (!ok || name == ""):
		t := f.Type
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Struct {
			return ""
		}
	}
	return f.Name
}

// stringProperty checks that a raw tool's input schema declares key as a
// top-level property of type string.
func stringProperty(schema json.RawMessage, key string) error {
	if key == "" {
		return nil
	}
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schema, &s); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	p, ok := s.Properties[key]
	switch {
	case !ok:
		return fmt.Errorf("IdempotencyKey %q names no property of the input schema", key)
	case p.Type != "string":
		return fmt.Errorf(`IdempotencyKey %q names a property without "type": "string"`, key)
	}
	return nil
}

// rawKey reads the idempotency key from raw arguments that the input
// schema already validated.
func rawKey(args json.RawMessage, key string) (string, error) {
	if key == "" {
		return "", nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(args, &m); err != nil {
		return "", errors.New("the arguments must be an object")
	}
	raw, ok := m[key]
	if !ok {
		return "", nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", fmt.Errorf("%s must be a string", key)
	}
	return v, nil
}
