package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/taskwire/taskwire/internal/outputcheck"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// ToolHandlerFor handles calls of a typed tool. in is the decoded, already
// validated arguments. The handler returns either a result, or a value of Out
// that the server encodes as structuredContent (validated against the output
// schema and mirrored as text content when the result has none), or both.
//
// A returned error becomes a tool result with isError true whose text is the
// error's message, so that the model can see it, unless it is a *mcp.Error
// (sent as a JSON-RPC error) or comes from InputRequired.
type ToolHandlerFor[In, Out any] func(ctx context.Context, req *Request, in In) (*mcp.CallToolResult, Out, error)

// ToolHandler handles calls of a raw tool, whose arguments arrive as
// req.Arguments after validation against the tool's input schema.
type ToolHandler func(ctx context.Context, req *Request) (*mcp.CallToolResult, error)

// ToolOption configures a tool registration.
type ToolOption func(*toolEntry)

// WithToolRateLimiter charges limiter once per call of the tool, keyed by the
// caller's rate key, after the server's request limiter.
func WithToolRateLimiter(limiter RateLimiter) ToolOption {
	return func(t *toolEntry) { t.limiter = limiter }
}

// WithRequiredCapabilities makes the tool require client capabilities: a
// call whose request does not declare them all fails with HTTP 400 and
// -32021 listing every missing one, before rate limiting and the handler.
// Supported members: elicitation (form and URL modes), sampling, roots and
// extensions.
func WithRequiredCapabilities(required *mcp.ClientCapabilities) ToolOption {
	return func(t *toolEntry) { t.required = required }
}

// ResultSanitizer may rewrite or refuse an inline tool result before output
// validation, for example to redact data the caller must not see. req
// describes the call it answers. Returning an error sends the fixed internal
// error. It must not modify res; return a new value instead.
type ResultSanitizer func(ctx context.Context, req *SanitizeRequest, res *mcp.CallToolResult) (*mcp.CallToolResult, error)

// SanitizeRequest describes the call whose result is being sanitized.
type SanitizeRequest struct {
	Identity  Identity
	Endpoint  string
	ToolName  string
	Arguments json.RawMessage
}

// CatalogPolicy decides which tools an identity may see in tools/list and
// call. A tool it hides answers exactly as an unknown tool does: -32602
// `Invalid params: unknown tool "name"`, naming the requested tool. An error
// is the fixed internal error.
type CatalogPolicy interface {
	ToolVisible(ctx context.Context, id Identity, endpoint, tool string) (bool, error)
}

// toolEntry is one registered tool.
type toolEntry struct {
	tool     *mcp.Tool
	handler  toolFunc
	limiter  RateLimiter
	required *mcp.ClientCapabilities

	mode       taskMode
	mirror     bool     // structured output is mirrored as text
	inputKinds []string // task input kinds the tool declared
	waitInline bool     // legacy clients without tasks wait for the task (WithWaitInline)

	input        *jsonschema.Resolved
	inputIsOpen  bool // the schema accepts any object: skip validation
	output       *jsonschema.Resolved
	headers      []mcp.ParamHeader
	decodeInputs bool // arguments are decoded for validation
}

// AddTool registers a typed tool on ep. When t.InputSchema is empty it is
// inferred from In, which must be a struct, a map with string keys, or any;
// when t.OutputSchema is empty and Out is not any, it is inferred from Out.
// A slice is a plain "array" in the input schema (null is refused; use a
// pointer to a slice to accept it) and may be null in the output schema,
// because a nil slice marshals as null.
// Problems with the tool are reported by New. AddTool panics if ep already
// belongs to a server (see Endpoint).
func AddTool[In, Out any](ep *Endpoint, t *mcp.Tool, h ToolHandlerFor[In, Out], opts ...ToolOption) {
	tt, err := inferSchemas[In, Out](t)
	if err != nil {
		ep.fail(err)
		return
	}
	structured := len(tt.OutputSchema) > 0
	raw := func(ctx context.Context, req *Request) (any, error) {
		var in In
		if err := unmarshalArgs(req.Arguments, &in); err != nil {
			return toolInputError(err), nil
		}
		res, out, err := h(ctx, req, in)
		if err != nil {
			return nil, err
		}
		if !structured || isNilPointer(out) {
			if res == nil {
				res = &mcp.CallToolResult{}
			}
			return res, nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("server: tool output could not be encoded: %w", errContract)
		}
		switch {
		case res == nil:
			return mcp.StructuredResult(b), nil
		case len(res.StructuredContent) == 0:
			c := *res
			c.StructuredContent = b
			res = &c
		}
		return res.WithStructuredText(), nil
	}
	ep.addTool(&tt, raw, opts)
}

// unmarshalArgs decodes tool arguments; absent arguments are {}.
func unmarshalArgs(args json.RawMessage, v any) error {
	if len(args) == 0 {
		args = []byte("{}")
	}
	return json.Unmarshal(args, v)
}

// jsonMarshal is json.Marshal, named for the delivery path.
var jsonMarshal = json.Marshal

// isNilPointer reports whether v is a nil pointer, map or slice: a typed
// tool that returns one has no structured output.
func isNilPointer(v any) bool {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Interface:
		return rv.IsNil()
	}
	return !rv.IsValid()
}

// toolFunc is the internal form of every tool handler: it returns a
// *mcp.CallToolResult or a task.Handle.
type toolFunc func(ctx context.Context, req *Request) (any, error)

// AddRawTool registers a tool whose handler receives raw JSON arguments.
// t.InputSchema is required and must describe an object; t.OutputSchema, when
// set, validates every result's structuredContent. It panics if ep already
// belongs to a server (see Endpoint).
func (ep *Endpoint) AddRawTool(t *mcp.Tool, h ToolHandler, opts ...ToolOption) {
	tt := *t
	if len(tt.InputSchema) == 0 {
		ep.fail(fmt.Errorf("tool %q: a raw tool needs an input schema", t.Name))
		return
	}
	ep.addTool(&tt, rawToolFunc(h), opts)
}

// rawToolFunc is the internal form of a raw tool's handler: a nil result
// is an empty one (see callTool).
func rawToolFunc(h ToolHandler) toolFunc {
	return func(ctx context.Context, req *Request) (any, error) {
		res, err := h(ctx, req)
		if err != nil || res == nil {
			return nil, err
		}
		return res, nil
	}
}

var errContract = errors.New("contract failure")

func (ep *Endpoint) addTool(t *mcp.Tool, h toolFunc, opts []ToolOption) {
	ep.mustBeOpen()
	if err := validToolName(t.Name); err != nil {
		ep.fail(err)
		return
	}
	if _, dup := ep.toolIndex[t.Name]; dup {
		ep.fail(fmt.Errorf("tool %q is registered twice", t.Name))
		return
	}
	e := &toolEntry{tool: t, handler: h}
	for _, o := range opts {
		o(e)
	}
	if err := e.compile(); err != nil {
		ep.fail(fmt.Errorf("tool %q: %w", t.Name, err))
		return
	}
	ep.tools = append(ep.tools, e)
	ep.toolIndex[t.Name] = e
}

// validToolName applies the naming rules of the tools specification: 1 to
// 128 characters of ASCII letters, digits, '_', '-' and '.'.
func validToolName(name string) error {
	if name == "" || len(name) > 128 {
		return fmt.Errorf("tool name %q must have 1 to 128 characters", name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("tool name %q may only use letters, digits, '_', '-' and '.'", name)
		}
	}
	return nil
}

// InferToolSchemas returns a copy of t whose empty InputSchema and
// OutputSchema are inferred from In and Out exactly as AddTool and
// AddTaskTool infer them (no output schema when Out is any), then checks
// the copy as New would check a registration: the name follows the
// specification's rules and both schemas are JSON objects of "type":
// "object" that resolve. Registering the copy with AddTool or AddTaskTool
// infers nothing again. It lets a package that registers tools on an
// application's behalf (such as durable) find every problem before the
// server is built; the error names the tool.
func InferToolSchemas[In, Out any](t *mcp.Tool) (*mcp.Tool, error) {
	tt, err := inferSchemas[In, Out](t)
	if err != nil {
		return nil, err
	}
	if err := CheckTool(&tt); err != nil {
		return nil, err
	}
	return &tt, nil
}

// CheckTool checks t as New checks a registration: a valid name, and an
// input schema (required) and output schema (optional) that are JSON
// objects of "type": "object" and resolve. The error names the tool. It
// reports nothing about the endpoint (a duplicate name, a missing Tasks
// configuration), which only New can see.
func CheckTool(t *mcp.Tool) error {
	if err := checkNameAndInput(t); err != nil {
		return err
	}
	e := &toolEntry{tool: t}
	if err := e.compile(); err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	return nil
}

// inferSchemas returns a copy of t with the schemas that are empty inferred
// from In and Out; the error names the tool. A slice is a plain "array" in
// the input schema and may be null in the output schema (see
// fixInputSlices).
func inferSchemas[In, Out any](t *mcp.Tool) (mcp.Tool, error) {
	tt := *t
	if len(tt.InputSchema) == 0 {
		s, err := inferSchema[In](true)
		if err != nil {
			return tt, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		tt.InputSchema = s
	}
	if len(tt.OutputSchema) == 0 && reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		s, err := inferSchema[Out](false)
		if err != nil {
			return tt, fmt.Errorf("tool %q: output schema: %w", t.Name, err)
		}
		tt.OutputSchema = s
	}
	return tt, nil
}

// inferSchema infers the schema of T with jsonschema-go; an input schema's
// slices are plain arrays (see fixInputSlices).
func inferSchema[T any](input bool) (json.RawMessage, error) {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		return nil, err
	}
	if input {
		fixInputSlices(reflect.TypeFor[T](), s)
	}
	return json.Marshal(s)
}

// compile resolves the tool's schemas and mirrored headers.
func (e *toolEntry) compile() error {
	var in map[string]any
	if err := json.Unmarshal(e.tool.InputSchema, &in); err != nil {
		return fmt.Errorf("input schema is not a JSON object: %w", err)
	}
	if in["type"] != "object" {
		return errors.New(`input schema must have "type": "object"`)
	}
	headers, err := mcp.ParseParamHeaders(e.tool.InputSchema)
	if err != nil {
		return err
	}
	e.headers = headers
	e.inputIsOpen = isOpenObjectSchema(in)
	if e.input, err = outputcheck.Resolve(e.tool.InputSchema); err != nil {
		return fmt.Errorf("input schema: %w", err)
	}
	if len(e.tool.OutputSchema) > 0 {
		var out map[string]any
		if err := json.Unmarshal(e.tool.OutputSchema, &out); err != nil || out["type"] != "object" {
			return errors.New(`output schema must be a JSON object with "type": "object"`)
		}
		if e.output, err = outputcheck.Resolve(e.tool.OutputSchema); err != nil {
			return fmt.Errorf("output schema: %w", err)
		}
	}
	e.decodeInputs = !e.inputIsOpen
	return nil
}

// isOpenObjectSchema reports whether a schema accepts every object, so that
// validation can be skipped.
func isOpenObjectSchema(s map[string]any) bool {
	for k, v := range s {
		switch k {
		case "type", "$schema", "title", "description":
		case "properties":
			if m, ok := v.(map[string]any); !ok || len(m) > 0 {
				return false
			}
		case "additionalProperties":
			if b, ok := v.(bool); !ok || !b {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// toolInputError is the tool result for arguments that do not match the
// input schema: the model sees what was wrong and can correct itself.
func toolInputError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: "Invalid arguments: " + err.Error()}},
	}
}

// lookupTool finds a tool the caller may see. Unknown and hidden tools are
// the same error.
func (c *call) lookupTool(ctx context.Context, name string) (*toolEntry, *protocolError) {
	t, ok := c.ep.live.load().index[name]
	if !ok {
		return nil, unknownToolError(name)
	}
	if p := c.srv.opts.CatalogPolicy; p != nil {
		visible, err := p.ToolVisible(ctx, c.id, c.ep.opts.Name, name)
		if err != nil {
			c.srv.logger.Error("catalog policy failed", "endpoint", c.ep.opts.Name, "err", c.redactErr(err))
			return nil, errInternal
		}
		if !visible {
			return nil, unknownToolError(name)
		}
	}
	return t, nil
}

func (ep *Endpoint) listTools(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	tools := ep.live.load().list
	visible := tools
	if p := c.srv.opts.CatalogPolicy; p != nil {
		visible = make([]*toolEntry, 0, len(tools))
		for _, t := range tools {
			ok, err := p.ToolVisible(ctx, c.id, ep.opts.Name, t.tool.Name)
			if err != nil {
				c.srv.logger.Error("catalog policy failed", "endpoint", ep.opts.Name, "err", c.redactErr(err))
				return nil, OutcomeInternalError, errInternal
			}
			if ok {
				visible = append(visible, t)
			}
		}
	}
	items, next, perr := pageOf(ep, c.params.Cursor, visible, func(e *toolEntry) *mcp.Tool { return e.tool })
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	return &mcp.ListToolsResult{
		Tools: items, NextCursor: next, TTLMs: ep.opts.CacheTTL.Milliseconds(), CacheScope: ep.cacheScope,
	}, OutcomeComplete, nil
}

// callTool runs tools/call: lookup, mirrored Mcp-Param headers, the tool
// limiter, then the handler path.
func (ep *Endpoint) callTool(ctx context.Context, c *call) (any, Outcome, *protocolError) {
	t, perr := c.lookupTool(ctx, c.params.Name)
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	args := bytes.TrimSpace(c.params.Arguments)
	if len(args) > 0 && args[0] != '{' {
		return nil, OutcomeProtocolError, invalidParams("Invalid params: arguments must be an object")
	}
	var decoded map[string]any
	if t.decodeInputs && len(args) > 0 {
		if err := json.Unmarshal(args, &decoded); err != nil {
			return nil, OutcomeProtocolError, invalidParams("Invalid params: arguments must be an object")
		}
	}
	// A transport without HTTP headers (stdio: a nil Header) mirrors
	// nothing; the arguments are all there is.
	if len(t.headers) > 0 && c.r.Header != nil {
		check := checkParamHeaders
		if c.legacy != nil {
			check = checkLegacyParamHeaders // 2025 clients mirror nothing
		}
		if perr := check(c.r.Header, t.headers, args); perr != nil {
			return nil, OutcomeProtocolError, perr
		}
	}
	if missing := missingCapabilitiesOf(c.params.Meta.ClientCapabilities, t.required); missing != nil {
		return nil, OutcomeProtocolError, missingCapabilities(missing)
	}
	if perr := c.chargeRequestLimiter(); perr != nil {
		return nil, OutcomeRateLimited, perr
	}
	if t.limiter != nil {
		if ok, wait := t.limiter.Allow(c.id.rateKey()); !ok {
			return nil, OutcomeRateLimited, rateLimited(wait)
		}
	}
	rq, perr := c.newRequest(t.tool.Name)
	if perr != nil {
		return nil, OutcomeProtocolError, perr
	}
	// Validate now so that a creation context is offered only for valid
	// arguments (an interceptor could otherwise create a task from them);
	// the result is reported where the pipeline puts input validation,
	// after the interceptor.
	var inputErr error
	if !t.inputIsOpen {
		inst := decoded
		if inst == nil {
			inst = map[string]any{}
		}
		inputErr = t.input.Validate(inst)
	}
	if inputErr == nil {
		if rq.taskCreation, perr = c.creationContext(ctx, t); perr != nil {
			return nil, OutcomeProtocolError, perr
		}
	}
	h := func(ctx context.Context, rq *Request) (any, error) {
		if inputErr != nil {
			return toolInputError(inputErr), nil
		}
		res, err := t.handler(ctx, rq)
		if err != nil {
			if rq.taskCreation != nil {
				return c.creationErrorResult(t, err)
			}
			return toolErrorResult(err)
		}
		return res, nil
	}
	res, perr := c.runHandler(ctx, rq, h)
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	switch r := res.(type) {
	case *mcp.InputRequiredResult:
		return r, OutcomeInputRequired, nil
	case *mcp.CallToolResult:
		return c.finishToolResult(ctx, t, r)
	case task.Handle:
		return c.verifyHandle(ctx, rq, r)
	case nil:
		return c.finishToolResult(ctx, t, &mcp.CallToolResult{})
	}
	c.srv.logger.Error("tool handler returned an unexpected result type", "endpoint", ep.opts.Name, "type", fmt.Sprintf("%T", res))
	return nil, OutcomeInternalError, errInternal
}

// finishToolResult runs the inline result path: sanitizer, then output
// schema validation. Limits are checked when the result is encoded.
func (c *call) finishToolResult(ctx context.Context, t *toolEntry, res *mcp.CallToolResult) (any, Outcome, *protocolError) {
	if s := c.srv.opts.ResultSanitizer; s != nil {
		out, err := s(ctx, &SanitizeRequest{Identity: c.id, Endpoint: c.ep.opts.Name, ToolName: t.tool.Name, Arguments: c.params.Arguments}, res)
		if err != nil || out == nil {
			return nil, OutcomeInternalError, errInternal
		}
		res = out
	}
	if err := outputcheck.Structured(t.output, res); err != nil || !completeResultType(res.ResultType) {
		c.srv.logger.Error("tool result failed output validation", "endpoint", c.ep.opts.Name, "tool", t.tool.Name)
		return nil, OutcomeInternalError, errInternal
	}
	if res.IsError {
		return res, OutcomeToolError, nil
	}
	return res, OutcomeComplete, nil
}

// completeResultType reports whether a tool result's resultType may be sent
// as a complete result: unset or "complete" ("task" and "input_required"
// are reserved for their own shapes).
func completeResultType(t mcp.ResultType) bool { return t == "" || t == mcp.ResultComplete }

// toolErrorResult maps a tool handler's error: protocol-level errors pass
// through, anything else becomes an isError result the model can read.
func toolErrorResult(err error) (any, error) {
	var (
		me  *mcp.Error
		ire *InputRequiredError
		pe  *protocolError
	)
	switch {
	case errors.Is(err, errContract):
		return nil, errInternal
	case errors.As(err, &me), errors.As(err, &ire), errors.As(err, &pe):
		return nil, err
	}
	return &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}},
	}, nil
}

// missingCapabilitiesOf returns the members of required that caps lacks, or
// nil when caps declares them all.
func missingCapabilitiesOf(caps, required *mcp.ClientCapabilities) *mcp.ClientCapabilities {
	if required == nil {
		return nil
	}
	var m mcp.ClientCapabilities
	found := false
	if e := required.Elicitation; e != nil {
		needForm := e.Form != nil || e.URL == nil
		if needForm && !caps.SupportsElicitationForm() || e.URL != nil && !caps.SupportsElicitationURL() {
			m.Elicitation = &mcp.ElicitationCapability{}
			if needForm && !caps.SupportsElicitationForm() {
				m.Elicitation.Form = mcp.Object{}
			}
			if e.URL != nil && !caps.SupportsElicitationURL() {
				m.Elicitation.URL = mcp.Object{}
			}
			found = true
		}
	}
	if required.Sampling != nil && (caps == nil || caps.Sampling == nil) {
		m.Sampling = &mcp.SamplingCapability{}
		found = true
	}
	if required.Roots != nil && (caps == nil || caps.Roots == nil) {
		m.Roots = &mcp.RootsCapability{}
		found = true
	}
	for id := range required.Extensions {
		if !caps.HasExtension(id) {
			if m.Extensions == nil {
				m.Extensions = map[string]mcp.Object{}
			}
			m.Extensions[id] = mcp.Object{}
			found = true
		}
	}
	if !found {
		return nil
	}
	return &m
}
