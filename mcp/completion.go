package mcp

import "encoding/json"

// Completion reference types.
const (
	RefPrompt   = "ref/prompt"
	RefResource = "ref/resource"
)

// CompleteParams are the params of completion/complete.
type CompleteParams struct {
	// Ref names the prompt or resource template whose argument is being
	// completed.
	Ref      *CompleteReference `json:"ref"`
	Argument CompleteArgument   `json:"argument"`
	// Context carries arguments the user has already filled in.
	Context *CompleteContext `json:"context,omitempty"`
	RequestParams
}

// CompleteReference is a PromptReference (Type RefPrompt, with Name) or a
// ResourceTemplateReference (Type RefResource, with URI, a URI template).
type CompleteReference struct {
	Type  string `json:"type"`
	Name  string `json:"name,omitempty"`
	Title string `json:"title,omitempty"`
	URI   string `json:"uri,omitempty"`
}

// CompleteArgument is the argument being completed and its partial value.
type CompleteArgument struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CompleteContext carries already-resolved arguments.
type CompleteContext struct {
	Arguments map[string]string `json:"arguments,omitzero"`
}

// CompleteResult is the result of completion/complete. The zero ResultType
// encodes as "complete".
type CompleteResult struct {
	ResultType ResultType       `json:"resultType"`
	Completion CompletionValues `json:"completion"`
	Meta       `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the defaults.
func (r CompleteResult) MarshalJSON() ([]byte, error) {
	type wire CompleteResult
	r.ResultType = orComplete(r.ResultType)
	r.Completion.Values = nonNil(r.Completion.Values)
	return json.Marshal(wire(r))
}

// CompletionValues are the completion candidates. Values holds at most 100
// entries; nil Values encodes as [].
type CompletionValues struct {
	Values []string `json:"values"`
	// Total is the number of candidates available, which may exceed
	// len(Values).
	Total *int `json:"total,omitempty"`
	// HasMore reports whether candidates exist beyond Values. It is always
	// encoded.
	HasMore bool `json:"hasMore"`
}
