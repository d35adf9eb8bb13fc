package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// InputRequest is a request the server needs the client to fulfil before it
// can finish (multi round-trip requests, MRTR, and tasks). It is not a
// JSON-RPC request: it has no id and travels inside a result. Method is
// MethodElicitationCreate (Params: ElicitParams), MethodSamplingCreateMessage
// (Params: CreateMessageParams) or MethodRootsList (no Params). Params is the
// raw JSON params object.
type InputRequest struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// InputRequests maps server-chosen keys to input requests. The client answers
// each under the same key in InputResponses.
type InputRequests map[string]*InputRequest

// InputResponses maps the keys of InputRequests to the client's raw answers:
// an ElicitResult, CreateMessageResult or ListRootsResult depending on the
// request's method.
type InputResponses map[string]json.RawMessage

// InputRequiredResult tells the client to fulfil InputRequests and retry the
// original request with the answers in inputResponses and RequestState echoed
// back. It is allowed only for tools/call, prompts/get and resources/read, and
// needs at least one of InputRequests and RequestState. The zero ResultType
// encodes as "input_required".
type InputRequiredResult struct {
	ResultType    ResultType    `json:"resultType"`
	InputRequests InputRequests `json:"inputRequests,omitzero"`
	// RequestState is opaque to the client, which echoes it verbatim. It is
	// attacker-controlled on the way back; integrity-protect what matters.
	RequestState string `json:"requestState,omitempty"`
	Meta         `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the default ResultType.
func (r InputRequiredResult) MarshalJSON() ([]byte, error) {
	type wire InputRequiredResult
	if r.ResultType == "" {
		r.ResultType = ResultInputRequired
	}
	return json.Marshal(wire(r))
}

// Elicitation modes.
const (
	ElicitModeForm = "form"
	ElicitModeURL  = "url"
)

// ElicitParams are the params of an elicitation/create input request.
//
// Form mode (Mode "form", or empty for backward compatibility) asks the user
// for the fields described by RequestedSchema, a flat object schema of
// primitive properties; it must not ask for secrets. URL mode (Mode "url")
// sends the user to URL for an out-of-band interaction.
type ElicitParams struct {
	Mode            string          `json:"mode,omitempty"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema,omitempty"`
	URL             string          `json:"url,omitempty"`
	Meta            Meta            `json:"_meta,omitzero"`
}

// NewElicitFormRequest returns a form-mode elicitation input request. It
// panics if requestedSchema is not valid JSON, which is a programming error.
func NewElicitFormRequest(message string, requestedSchema json.RawMessage) *InputRequest {
	return newInputRequest(MethodElicitationCreate, ElicitParams{
		Mode:            ElicitModeForm,
		Message:         message,
		RequestedSchema: requestedSchema,
	})
}

// NewElicitURLRequest returns a URL-mode elicitation input request.
func NewElicitURLRequest(message, url string) *InputRequest {
	return newInputRequest(MethodElicitationCreate, ElicitParams{
		Mode:    ElicitModeURL,
		Message: message,
		URL:     url,
	})
}

func newInputRequest(method string, params any) *InputRequest {
	b, err := json.Marshal(params)
	if err != nil {
		panic(fmt.Sprintf("mcp: %s params cannot be encoded: %v", method, err))
	}
	return &InputRequest{Method: method, Params: b}
}

var errNotElicitation = errors.New("mcp: input request is not " + MethodElicitationCreate)

// ElicitMode returns the mode of an elicitation/create input request:
// ElicitModeForm (also when the mode is absent) or ElicitModeURL. It fails
// for other methods, for missing or malformed params and for unknown modes.
func (r *InputRequest) ElicitMode() (string, error) {
	if r.Method != MethodElicitationCreate {
		return "", errNotElicitation
	}
	if len(r.Params) == 0 {
		return "", errors.New("mcp: elicitation request has no params")
	}
	var p struct {
		Mode *string `json:"mode"`
	}
	if err := json.Unmarshal(r.Params, &p); err != nil {
		return "", fmt.Errorf("mcp: elicitation params: %w", err)
	}
	switch {
	case p.Mode == nil:
		return ElicitModeForm, nil
	case *p.Mode == ElicitModeForm, *p.Mode == ElicitModeURL:
		return *p.Mode, nil
	}
	return "", fmt.Errorf("mcp: unknown elicitation mode %q", *p.Mode)
}

// Elicitation actions.
const (
	ElicitActionAccept  = "accept"
	ElicitActionDecline = "decline"
	ElicitActionCancel  = "cancel"
)

// ElicitResult is the client's answer to an elicitation request. It is an
// input response, not a protocol result, and has no resultType. Content is
// present only for an accepted form; its values are strings, numbers,
// booleans or string arrays. For URL mode, accept means consent only.
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitzero"`
}

// SamplingMessage is one message of a sampling conversation. The wire form
// of content is one block or an array of blocks; Content holds either as a
// slice, and encodes exactly one block as a single object and anything else
// as an array. Blocks are text, image, audio, tool use or tool result.
type SamplingMessage struct {
	Role    Role      `json:"role"`
	Content []Content `json:"content"`
	Meta    Meta      `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (m SamplingMessage) MarshalJSON() ([]byte, error) {
	type wire SamplingMessage
	return json.Marshal(struct {
		wire
		Content any `json:"content"`
	}{wire(m), samplingContentValue(m.Content)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (m *SamplingMessage) UnmarshalJSON(data []byte) error {
	type wire SamplingMessage
	var w struct {
		wire
		Content samplingContent `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*m = SamplingMessage(w.wire)
	m.Content = w.Content
	return nil
}

// CreateMessageParams are the params of a sampling/createMessage input
// request (deprecated feature).
type CreateMessageParams struct {
	Messages         []*SamplingMessage `json:"messages"`
	ModelPreferences *ModelPreferences  `json:"modelPreferences,omitempty"`
	SystemPrompt     string             `json:"systemPrompt,omitempty"`
	// IncludeContext is "none", "thisServer" or "allServers".
	IncludeContext string          `json:"includeContext,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	MaxTokens      int64           `json:"maxTokens"`
	StopSequences  []string        `json:"stopSequences,omitempty"`
	Metadata       json.RawMessage `json:"metadata,omitempty"`
	// Tools and ToolChoice need the client's sampling.tools capability.
	Tools      []*Tool     `json:"tools,omitempty"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"`
	Meta       Meta        `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler. Nil Messages encodes as [].
func (p CreateMessageParams) MarshalJSON() ([]byte, error) {
	type wire CreateMessageParams
	p.Messages = nonNil(p.Messages)
	return json.Marshal(wire(p))
}

// ModelPreferences are the server's advisory model preferences. Priorities
// range from 0 to 1.
type ModelPreferences struct {
	Hints                []ModelHint `json:"hints,omitempty"`
	CostPriority         *float64    `json:"costPriority,omitempty"`
	SpeedPriority        *float64    `json:"speedPriority,omitempty"`
	IntelligencePriority *float64    `json:"intelligencePriority,omitempty"`
}

// ModelHint suggests a model by (partial) name.
type ModelHint struct {
	Name string `json:"name,omitempty"`
}

// ToolChoice controls tool use in sampling. Mode is "auto", "required" or
// "none".
type ToolChoice struct {
	Mode string `json:"mode,omitempty"`
}

// CreateMessageResult is the client's answer to a sampling request: an input
// response without resultType. Content follows the SamplingMessage rules.
type CreateMessageResult struct {
	Role    Role      `json:"role"`
	Content []Content `json:"content"`
	Model   string    `json:"model"`
	// StopReason is e.g. "endTurn", "stopSequence", "maxTokens" or "toolUse".
	StopReason string `json:"stopReason,omitempty"`
	Meta       Meta   `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (r CreateMessageResult) MarshalJSON() ([]byte, error) {
	type wire CreateMessageResult
	return json.Marshal(struct {
		wire
		Content any `json:"content"`
	}{wire(r), samplingContentValue(r.Content)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (r *CreateMessageResult) UnmarshalJSON(data []byte) error {
	type wire CreateMessageResult
	var w struct {
		wire
		Content samplingContent `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = CreateMessageResult(w.wire)
	r.Content = w.Content
	return nil
}

// Root is a directory or file the client exposes (deprecated feature).
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
	Meta Meta   `json:"_meta,omitzero"`
}

// ListRootsResult is the client's answer to a roots/list input request. Nil
// Roots encodes as [].
type ListRootsResult struct {
	Roots []*Root `json:"roots"`
}

// MarshalJSON implements json.Marshaler.
func (r ListRootsResult) MarshalJSON() ([]byte, error) {
	type wire ListRootsResult
	r.Roots = nonNil(r.Roots)
	return json.Marshal(wire(r))
}
