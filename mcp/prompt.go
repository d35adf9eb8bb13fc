package mcp

import "encoding/json"

// Prompt describes a prompt template a server offers, as listed by
// prompts/list.
type Prompt struct {
	Name        string            `json:"name"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Arguments   []*PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon            `json:"icons,omitempty"`
	Meta        Meta              `json:"_meta,omitzero"`
}

// PromptArgument describes one argument a prompt accepts.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// ListPromptsParams are the params of prompts/list.
type ListPromptsParams struct {
	// Cursor is an opaque pagination cursor from a previous NextCursor.
	Cursor string `json:"cursor,omitempty"`
	RequestParams
}

// ListPromptsResult is the result of prompts/list, a cacheable result. The
// zero ResultType encodes as "complete", the zero CacheScope as "private"
// and nil Prompts as [].
type ListPromptsResult struct {
	ResultType ResultType `json:"resultType"`
	Prompts    []*Prompt  `json:"prompts"`
	// NextCursor, when set, means more results may follow.
	NextCursor string `json:"nextCursor,omitempty"`
	// TTLMs is how long, in milliseconds, the client may cache the result;
	// 0 means it must not be reused.
	TTLMs      int64      `json:"ttlMs"`
	CacheScope CacheScope `json:"cacheScope"`
	Meta       `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the defaults above.
func (r ListPromptsResult) MarshalJSON() ([]byte, error) {
	type wire ListPromptsResult
	r.ResultType = orComplete(r.ResultType)
	r.CacheScope = orPrivate(r.CacheScope)
	r.Prompts = nonNil(r.Prompts)
	return json.Marshal(wire(r))
}

// GetPromptParams are the params of prompts/get. InputResponses and
// RequestState are set when the client retries after an
// InputRequiredResult.
type GetPromptParams struct {
	Name           string            `json:"name"`
	Arguments      map[string]string `json:"arguments,omitzero"`
	InputResponses InputResponses    `json:"inputResponses,omitzero"`
	RequestState   string            `json:"requestState,omitempty"`
	RequestParams
}

// GetPromptResult is the complete result of prompts/get. The zero
// ResultType encodes as "complete" and nil Messages as [].
type GetPromptResult struct {
	ResultType  ResultType       `json:"resultType"`
	Description string           `json:"description,omitempty"`
	Messages    []*PromptMessage `json:"messages"`
	Meta        `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the defaults above.
func (r GetPromptResult) MarshalJSON() ([]byte, error) {
	type wire GetPromptResult
	r.ResultType = orComplete(r.ResultType)
	r.Messages = nonNil(r.Messages)
	return json.Marshal(wire(r))
}

// PromptMessage is one message of a prompt. Content must be one of the
// ContentBlock kinds (text, image, audio, resource link, embedded resource).
type PromptMessage struct {
	Role    Role    `json:"role"`
	Content Content `json:"content"`
}

// UnmarshalJSON implements json.Unmarshaler, decoding Content into its
// concrete type.
func (m *PromptMessage) UnmarshalJSON(data []byte) error {
	var w struct {
		Role    Role          `json:"role"`
		Content singleContent `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*m = PromptMessage{Role: w.Role, Content: w.Content.c}
	return nil
}
