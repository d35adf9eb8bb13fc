package mcp

import "encoding/json"

// ProgressParams are the params of notifications/progress, sent on the
// response stream of a request whose _meta carried a progress token.
type ProgressParams struct {
	// ProgressToken is the raw token (a JSON string or integer) from the
	// request's _meta.
	ProgressToken json.RawMessage `json:"progressToken"`
	// Progress increases with every notification, even if Total is unknown.
	Progress float64  `json:"progress"`
	Total    *float64 `json:"total,omitempty"`
	Message  string   `json:"message,omitempty"`
	Meta     Meta     `json:"_meta,omitzero"`
}

// LoggingMessageParams are the params of notifications/message (deprecated
// feature), sent only for requests whose _meta set MetaLogLevel and only at
// or above that level.
type LoggingMessageParams struct {
	Level  LoggingLevel `json:"level"`
	Logger string       `json:"logger,omitempty"`
	// Data is any JSON value.
	Data json.RawMessage `json:"data"`
	Meta Meta            `json:"_meta,omitzero"`
}

// ListChangedParams are the params of the tools, prompts and resources
// list_changed notifications. On a listen stream Meta carries
// MetaSubscriptionID.
type ListChangedParams struct {
	Meta Meta `json:"_meta,omitzero"`
}

// ResourceUpdatedParams are the params of notifications/resources/updated.
type ResourceUpdatedParams struct {
	URI  string `json:"uri"`
	Meta Meta   `json:"_meta,omitzero"`
}

// CancelledParams are the params of notifications/cancelled (stdio only).
type CancelledParams struct {
	RequestID ID     `json:"requestId"`
	Reason    string `json:"reason,omitempty"`
	Meta      Meta   `json:"_meta,omitzero"`
}
