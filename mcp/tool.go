package mcp

import "encoding/json"

// Tool describes a tool a server offers, as listed by tools/list.
type Tool struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema (an object schema) of the arguments. A
	// nil InputSchema encodes as {"type":"object"}, a tool that accepts any
	// object.
	InputSchema json.RawMessage `json:"inputSchema"`
	// OutputSchema, when set, is the JSON Schema that the structuredContent
	// of every successful result conforms to.
	OutputSchema json.RawMessage  `json:"outputSchema,omitempty"`
	Annotations  *ToolAnnotations `json:"annotations,omitempty"`
	Icons        []Icon           `json:"icons,omitempty"`
	Meta         Meta             `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (t Tool) MarshalJSON() ([]byte, error) {
	type wire Tool
	if t.InputSchema == nil {
		t.InputSchema = json.RawMessage(`{"type":"object"}`)
	}
	return json.Marshal(wire(t))
}

// ToolAnnotations are untrusted hints about a tool's behaviour. A nil hint
// is unspecified and takes the protocol default given below.
type ToolAnnotations struct {
	Title string `json:"title,omitempty"`
	// ReadOnlyHint: the tool does not modify its environment (default false).
	ReadOnlyHint *bool `json:"readOnlyHint,omitempty"`
	// DestructiveHint: a modifying tool may destroy data (default true).
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	// IdempotentHint: repeating a call with the same arguments has no
	// further effect (default false).
	IdempotentHint *bool `json:"idempotentHint,omitempty"`
	// OpenWorldHint: the tool interacts with external entities (default
	// true).
	OpenWorldHint *bool `json:"openWorldHint,omitempty"`
}

// ListToolsParams are the params of tools/list.
type ListToolsParams struct {
	// Cursor is an opaque pagination cursor from a previous NextCursor.
	Cursor string `json:"cursor,omitempty"`
	RequestParams
}

// ListToolsResult is the result of tools/list, a cacheable result. The zero
// ResultType encodes as "complete", the zero CacheScope as "private" and nil
// Tools as [].
type ListToolsResult struct {
	ResultType ResultType `json:"resultType"`
	Tools      []*Tool    `json:"tools"`
	// NextCursor, when set, means more results may follow.
	NextCursor string `json:"nextCursor,omitempty"`
	// TTLMs is how long, in milliseconds, the client may cache the result;
	// 0 means it must not be reused.
	TTLMs      int64      `json:"ttlMs"`
	CacheScope CacheScope `json:"cacheScope"`
	Meta       `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the defaults above.
func (r ListToolsResult) MarshalJSON() ([]byte, error) {
	type wire ListToolsResult
	r.ResultType = orComplete(r.ResultType)
	r.CacheScope = orPrivate(r.CacheScope)
	r.Tools = nonNil(r.Tools)
	return json.Marshal(wire(r))
}

// CallToolParams are the params of tools/call. InputResponses and
// RequestState are set when the client retries after an
// InputRequiredResult.
type CallToolParams struct {
	Name string `json:"name"`
	// Arguments is the JSON object of tool arguments, or nil when absent.
	Arguments      json.RawMessage `json:"arguments,omitempty"`
	InputResponses InputResponses  `json:"inputResponses,omitzero"`
	RequestState   string          `json:"requestState,omitempty"`
	RequestParams
}

// CallToolResult is the complete result of tools/call. A tool that ran and
// failed reports IsError with a description in Content; that is not a
// protocol error.
//
// The zero ResultType encodes as "complete" and nil Content as [] (the
// schema requires content).
type CallToolResult struct {
	ResultType ResultType `json:"resultType"`
	Content    []Content  `json:"content"`
	// StructuredContent is any JSON value; it must conform to the tool's
	// OutputSchema when the tool declares one.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              `json:"_meta,omitzero"`
}

// StructuredResult returns a result whose structured content is structured
// and whose content is one text block holding the same JSON, for clients
// that read only content (see WithStructuredText).
func StructuredResult(structured json.RawMessage) *CallToolResult {
	return &CallToolResult{StructuredContent: structured, Content: []Content{&TextContent{Text: string(structured)}}}
}

// WithStructuredText returns r, or, when r has structured content and no
// content blocks, a copy of r whose content is one text block holding the
// structured content's JSON: the text rendering the revision asks of a tool
// that returns structured content, for clients that read only content.
// r itself is never modified.
func (r *CallToolResult) WithStructuredText() *CallToolResult {
	if len(r.Content) > 0 || len(r.StructuredContent) == 0 {
		return r
	}
	c := *r
	c.Content = []Content{&TextContent{Text: string(r.StructuredContent)}}
	return &c
}

// MarshalJSON implements json.Marshaler, filling in the defaults above. The
// common shapes are encoded without reflection (see AppendToolResult).
func (r CallToolResult) MarshalJSON() ([]byte, error) {
	if b, ok := AppendToolResult(nil, &r, nil); ok {
		return b, nil
	}
	return r.marshalReflect()
}

// marshalReflect is MarshalJSON through encoding/json alone.
func (r CallToolResult) marshalReflect() ([]byte, error) {
	type wire CallToolResult
	r.ResultType = orComplete(r.ResultType)
	r.Content = nonNil(r.Content)
	return json.Marshal(wire(r))
}

// UnmarshalJSON implements json.Unmarshaler, decoding each content block
// into its concrete type.
func (r *CallToolResult) UnmarshalJSON(data []byte) error {
	type wire CallToolResult
	var w struct {
		wire
		Content contentList `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = CallToolResult(w.wire)
	r.Content = w.Content
	return nil
}
