package mcp

import (
	"encoding/json"
	"fmt"
)

// Protocol revisions of the 2025 era: clients of these open a session with
// initialize and name it in the Mcp-Session-Id header. A server negotiates
// ProtocolVersion20251125 or ProtocolVersion20250618;
// ProtocolVersion20250326 is accepted only as a header value inside a
// session (some clients send it there).
const (
	ProtocolVersion20250326 = "2025-03-26"
	ProtocolVersion20250618 = "2025-06-18"
	ProtocolVersion20251125 = "2025-11-25"
)

// IsLegacyVersion reports whether v names a 2025-era revision this module
// knows (including 2025-03-26, which it never negotiates).
func IsLegacyVersion(v string) bool {
	switch v {
	case ProtocolVersion20250326, ProtocolVersion20250618, ProtocolVersion20251125:
		return true
	}
	return false
}

// IsModernVersion reports whether v is a revision of the session-less era:
// a well-formed YYYY-MM-DD date no earlier than LatestProtocolVersion.
// Dates of that form compare correctly as strings.
func IsModernVersion(v string) bool {
	if len(v) != len(LatestProtocolVersion) || v < LatestProtocolVersion {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if i == 4 || i == 7 {
			if c != '-' {
				return false
			}
		} else if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Methods of the 2025 era that the 2026-07-28 revision removed.
const (
	MethodInitialize           = "initialize"
	MethodPing                 = "ping"
	MethodLoggingSetLevel      = "logging/setLevel"
	MethodResourcesSubscribe   = "resources/subscribe"
	MethodResourcesUnsubscribe = "resources/unsubscribe"

	// NotificationInitialized ends the initialization phase of a session.
	NotificationInitialized = "notifications/initialized"
)

// InitializeParams are the params of a 2025-era initialize request.
type InitializeParams struct {
	ProtocolVersion string                    `json:"protocolVersion"`
	Capabilities    *LegacyClientCapabilities `json:"capabilities"`
	ClientInfo      *Implementation           `json:"clientInfo"`
	Meta            Meta                      `json:"_meta,omitzero"`
}

// InitializeResult is the result of initialize: the negotiated revision,
// what the server offers and who it is.
type InitializeResult struct {
	ProtocolVersion string                    `json:"protocolVersion"`
	Capabilities    *LegacyServerCapabilities `json:"capabilities"`
	ServerInfo      *Implementation           `json:"serverInfo"`
	Instructions    string                    `json:"instructions,omitempty"`
	Meta            Meta                      `json:"_meta,omitzero"`
}

// LegacyClientCapabilities are the capabilities a 2025-era client declares
// once, in initialize; they hold for the whole session.
type LegacyClientCapabilities struct {
	Experimental map[string]Object      `json:"experimental,omitzero"`
	Roots        *RootsCapability       `json:"roots,omitempty"`
	Sampling     *SamplingCapability    `json:"sampling,omitempty"`
	Elicitation  *ElicitationCapability `json:"elicitation,omitempty"`
	// Tasks is the experimental tasks capability of 2025-11-25.
	Tasks *ClientTasksCapability `json:"tasks,omitempty"`
}

// ClientCapabilities maps the session's capabilities to the per-request
// form handlers read (Request.Capabilities). Tasks has no per-request
// counterpart and is left out.
func (c *LegacyClientCapabilities) ClientCapabilities() *ClientCapabilities {
	out := &ClientCapabilities{}
	if c == nil {
		return out
	}
	out.Experimental = c.Experimental
	out.Roots = c.Roots
	out.Sampling = c.Sampling
	out.Elicitation = c.Elicitation
	return out
}

// ClientTasksCapability is a 2025-11-25 client's tasks capability: which of
// its own requests the server may run as tasks.
type ClientTasksCapability struct {
	List     Object                    `json:"list,omitzero"`
	Cancel   Object                    `json:"cancel,omitzero"`
	Requests *ClientTaskRequestsLegacy `json:"requests,omitempty"`
}

// ClientTaskRequestsLegacy lists the client-side requests that may be
// augmented with a task.
type ClientTaskRequestsLegacy struct {
	Sampling    *SamplingTaskRequests    `json:"sampling,omitempty"`
	Elicitation *ElicitationTaskRequests `json:"elicitation,omitempty"`
}

// SamplingTaskRequests declares that sampling/createMessage may run as a
// task on the client.
type SamplingTaskRequests struct {
	CreateMessage Object `json:"createMessage,omitzero"`
}

// ElicitationTaskRequests declares that elicitation/create may run as a
// task on the client.
type ElicitationTaskRequests struct {
	Create Object `json:"create,omitzero"`
}

// LegacyServerCapabilities are what a server offers a 2025-era session in
// its initialize result.
type LegacyServerCapabilities struct {
	Experimental map[string]Object    `json:"experimental,omitzero"`
	Logging      Object               `json:"logging,omitzero"`
	Completions  Object               `json:"completions,omitzero"`
	Prompts      *PromptsCapability   `json:"prompts,omitempty"`
	Resources    *ResourcesCapability `json:"resources,omitempty"`
	Tools        *ToolsCapability     `json:"tools,omitempty"`
	// Tasks is the experimental tasks capability of 2025-11-25.
	Tasks *ServerTasksCapability `json:"tasks,omitempty"`
	// Extensions are the extensions the server declares, as in
	// ServerCapabilities (the 2025 revisions have no such member; clients
	// that know an extension look for it there).
	Extensions map[string]Object `json:"extensions,omitzero"`
}

// ServerTasksCapability is a 2025-11-25 server's tasks capability.
type ServerTasksCapability struct {
	List     Object                    `json:"list,omitzero"`
	Cancel   Object                    `json:"cancel,omitzero"`
	Requests *ServerTaskRequestsLegacy `json:"requests,omitempty"`
}

// ServerTaskRequestsLegacy lists the server-side requests a client may
// augment with a task: only tools/call.
type ServerTaskRequestsLegacy struct {
	Tools *ToolsTaskRequests `json:"tools,omitempty"`
}

// ToolsTaskRequests declares that tools/call may run as a task.
type ToolsTaskRequests struct {
	Call Object `json:"call,omitzero"`
}

// Values of ToolExecution.TaskSupport (2025-11-25).
const (
	TaskSupportForbidden = "forbidden"
	TaskSupportOptional  = "optional"
	TaskSupportRequired  = "required"
)

// ToolExecution is the execution member of a 2025-11-25 tool.
type ToolExecution struct {
	// TaskSupport is TaskSupportForbidden (the default when absent),
	// TaskSupportOptional or TaskSupportRequired.
	TaskSupport string `json:"taskSupport,omitempty"`
}

// LegacyTool is a tool as a 2025-era tools/list shows it: the tool and,
// for 2025-11-25 sessions, its execution member.
type LegacyTool struct {
	*Tool
	Execution *ToolExecution
}

// MarshalJSON encodes the tool with execution appended as its last member.
func (t LegacyTool) MarshalJSON() ([]byte, error) {
	if t.Tool == nil {
		return nil, fmt.Errorf("mcp: legacy tool without a tool")
	}
	b, err := json.Marshal(t.Tool)
	if err != nil || t.Execution == nil {
		return b, err
	}
	e, err := json.Marshal(t.Execution)
	if err != nil {
		return nil, err
	}
	b = append(b[:len(b)-1], `,"execution":`...)
	b = append(b, e...)
	return append(b, '}'), nil
}

// LegacyListToolsResult is the result of tools/list in a 2025-era session.
// Nil Tools encodes as [].
type LegacyListToolsResult struct {
	Tools      []LegacyTool `json:"tools"`
	NextCursor string       `json:"nextCursor,omitempty"`
	Meta       Meta         `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (r LegacyListToolsResult) MarshalJSON() ([]byte, error) {
	type wire LegacyListToolsResult
	if r.Tools == nil {
		r.Tools = []LegacyTool{}
	}
	return json.Marshal(wire(r))
}

// SetLevelParams are the params of logging/setLevel.
type SetLevelParams struct {
	Level LoggingLevel `json:"level"`
}

// SubscribeParams are the params of resources/subscribe and
// resources/unsubscribe.
type SubscribeParams struct {
	URI string `json:"uri"`
}
