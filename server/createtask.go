package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
)

// CreateTaskParams name the task tool call that Server.CreateTask makes.
type CreateTaskParams struct {
	// Endpoint is the name (EndpointOptions.Name) of the endpoint whose tool
	// is called. It may be empty when the server has exactly one endpoint.
	Endpoint string
	// Tool names a task tool of the endpoint (AddTaskTool, or a durable
	// tool).
	Tool string
	// Arguments are the tool's arguments: a JSON object, validated against
	// the tool's input schema as a client's would be. Nil means {}.
	Arguments json.RawMessage
	// Identity is the caller the task is bound to: a client admitted as
	// this principal and tenant reads, answers and cancels the task, and
	// nobody else does. No AdmissionController runs; the program vouches
	// for the identity, as stdio's StdioOptions.Identity does.
	Identity Identity
	// IdempotencyKey, when set, is the key a deduplicating task tool uses
	// instead of one it reads from the arguments (Request.CreationKey):
	// CreateTask calls with the same key and arguments, from any node of a
	// fleet, get one task. A durable tool's store matches it like the key
	// field of a client's arguments: within the identity's tenant, for
	// this endpoint and tool. At most MaxCreationKeyBytes bytes of UTF-8.
	IdempotencyKey string
}

// MaxCreationKeyBytes bounds CreateTaskParams.IdempotencyKey.
const MaxCreationKeyBytes = 256

// CreateTask creates a task of a task tool outside any MCP request, for a
// program that starts work on behalf of a user (a webhook, a scheduler, a
// queue consumer) who then follows it with tasks/get, a listen or
// `taskwire task wait`. The call goes through the same pipeline as a
// tools/call of the endpoint's newest 2026-era revision with the Tasks
// extension: the request limiter and task limits of the identity, the
// input schema, the tool's creation handler (for a durable tool: its
// Validate, its idempotency key and the store's one transaction), and the
// handle's verification. It returns the new task's info, or, for an
// idempotent repeat, that of the task the key already holds.
//
// Errors:
//   - a tool error result (arguments that break the input schema, the
//     tool's Validate failed, an idempotency key reused with other
//     arguments) is a *ToolResultError carrying the result's text;
//   - a protocol error (an unknown tool, a task limit or rate limit
//     reached, a tool that answered without a task) is an *mcp.Error, as a
//     client would receive it; an internal
//     failure is the fixed -32603 "Internal error", its cause in the
//     server's log;
//   - ctx's error when ctx ends first. The task may exist by then: repeat
//     the call with the tool's idempotency key to learn it.
//
// CreateTask is safe for concurrent use. It fails with ErrBadParams for
// params it can tell are wrong before anything runs.
func (s *Server) CreateTask(ctx context.Context, p CreateTaskParams) (mcp.TaskInfo, error) {
	ep, err := s.endpointNamed(p.Endpoint)
	if err != nil {
		return mcp.TaskInfo{}, err
	}
	if len(ep.modernVersions) == 0 {
		return mcp.TaskInfo{}, fmt.Errorf("%w: endpoint %q serves no 2026-era revision", ErrBadParams, ep.opts.Name)
	}
	if p.Tool == "" || !utf8.ValidString(p.Tool) {
		return mcp.TaskInfo{}, fmt.Errorf("%w: a tool name is needed", ErrBadParams)
	}
	if len(p.IdempotencyKey) > MaxCreationKeyBytes || !utf8.ValidString(p.IdempotencyKey) {
		return mcp.TaskInfo{}, fmt.Errorf("%w: the idempotency key must be valid UTF-8 of at most %d bytes", ErrBadParams, MaxCreationKeyBytes)
	}
	args := p.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	version := ep.modernVersions[len(ep.modernVersions)-1]
	body, err := json.Marshal(createTaskRequest{
		JSONRPC: "2.0", ID: 1, Method: mcp.MethodToolsCall,
		Params: createTaskCallParams{
			Name: p.Tool, Arguments: args,
			Meta: map[string]any{
				mcp.MetaProtocolVersion:    version,
				mcp.MetaClientCapabilities: mcp.ClientCapabilities{Extensions: map[string]mcp.Object{mcp.ExtensionTasks: {}}},
			},
		},
	})
	if err != nil {
		return mcp.TaskInfo{}, fmt.Errorf("%w: arguments: %v", ErrBadParams, err)
	}
	env, perr := decodeEnvelope(body)
	if perr != nil {
		return mcp.TaskInfo{}, perr.err
	}
	var rp rawParams
	if perr := decodeMeta(env.req, &rp); perr != nil {
		return mcp.TaskInfo{}, perr.err
	}
	sink := &finalMessage{}
	id := p.Identity
	ep.dispatch(s, inbound{r: stdioRequest(ctx), stream: newMessageStream(sink), identity: &id, creationKey: p.IdempotencyKey}, env.req, &rp)
	if err := ctx.Err(); err != nil && sink.msg == nil {
		return mcp.TaskInfo{}, err
	}
	return createdTaskOf(sink.msg)
}

// ErrBadParams is the error of a CreateTask whose params name no endpoint
// or tool of the server, or cannot be encoded.
var ErrBadParams = errors.New("server: CreateTask: bad params")

// ToolResultError is CreateTask's error when the tool answered with a tool
// error result (isError) instead of a task: Text is the result's text.
type ToolResultError struct {
	Text string
}

func (e *ToolResultError) Error() string { return "server: the tool answered with an error: " + e.Text }

// endpointNamed returns the endpoint called name, or the only endpoint when
// name is empty.
func (s *Server) endpointNamed(name string) (*Endpoint, error) {
	var only *Endpoint
	for _, ep := range s.endpoints {
		if ep.opts.Name == name {
			return ep, nil
		}
		only = ep
	}
	if name == "" && len(s.endpoints) == 1 {
		return only, nil
	}
	if name == "" {
		return nil, fmt.Errorf("%w: the server has %d endpoints; name one", ErrBadParams, len(s.endpoints))
	}
	return nil, fmt.Errorf("%w: no endpoint is named %q", ErrBadParams, name)
}

type createTaskRequest struct {
	JSONRPC string               `json:"jsonrpc"`
	ID      int                  `json:"id"`
	Method  string               `json:"method"`
	Params  createTaskCallParams `json:"params"`
}

type createTaskCallParams struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Meta      map[string]any  `json:"_meta"`
}

// finalMessage is the messageSink of a CreateTask: it keeps the last
// message, which is the final response (a 2026-era tools/call sends no
// server-to-client request; notifications come before the response).
type finalMessage struct {
	mu  sync.Mutex
	msg []byte
}

func (f *finalMessage) send(msg []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msg = append(f.msg[:0], msg...)
	return nil
}

// createdTaskOf reads CreateTask's outcome from the final response.
func createdTaskOf(msg []byte) (mcp.TaskInfo, error) {
	var resp mcp.Response
	if msg == nil || json.Unmarshal(msg, &resp) != nil {
		return mcp.TaskInfo{}, mcp.NewError(mcp.CodeInternalError, "Internal error")
	}
	if resp.Error != nil {
		return mcp.TaskInfo{}, resp.Error
	}
	var res struct {
		ResultType mcp.ResultType `json:"resultType"`
		IsError    bool           `json:"isError"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return mcp.TaskInfo{}, mcp.NewError(mcp.CodeInternalError, "Internal error")
	}
	switch {
	case res.ResultType == mcp.ResultTask:
		var ct mcp.CreateTaskResult
		if err := json.Unmarshal(resp.Result, &ct); err != nil {
			return mcp.TaskInfo{}, mcp.NewError(mcp.CodeInternalError, "Internal error")
		}
		return ct.TaskInfo, nil
	case res.IsError:
		var text string
		for _, c := range res.Content {
			if c.Type == "text" {
				text += c.Text
			}
		}
		return mcp.TaskInfo{}, &ToolResultError{Text: text}
	}
	return mcp.TaskInfo{}, mcp.NewError(mcp.CodeInvalidParams, "the tool answered without a task: it is not a task tool")
}
