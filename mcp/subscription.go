package mcp

import "encoding/json"

// SubscriptionFilter selects the notifications a subscriptions/listen stream
// carries. In an acknowledgement it is the subset the server will honour.
type SubscriptionFilter struct {
	ToolsListChanged     bool `json:"toolsListChanged,omitempty"`
	PromptsListChanged   bool `json:"promptsListChanged,omitempty"`
	ResourcesListChanged bool `json:"resourcesListChanged,omitempty"`
	// ResourceSubscriptions lists resource URIs to receive
	// notifications/resources/updated for.
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
	// TaskIDs lists tasks to receive notifications/tasks for (Tasks
	// extension; needs the extension capability on the listen request).
	TaskIDs []string `json:"taskIds,omitempty"`
}

// ListenParams are the params of subscriptions/listen. Nil Notifications
// encodes as {} (the schema requires the member).
type ListenParams struct {
	Notifications *SubscriptionFilter `json:"notifications"`
	RequestParams
}

// MarshalJSON implements json.Marshaler.
func (p ListenParams) MarshalJSON() ([]byte, error) {
	type wire ListenParams
	if p.Notifications == nil {
		p.Notifications = &SubscriptionFilter{}
	}
	return json.Marshal(wire(p))
}

// AcknowledgedParams are the params of
// notifications/subscriptions/acknowledged, the first message on a listen
// stream. Meta carries MetaSubscriptionID. Nil Notifications encodes as {}.
type AcknowledgedParams struct {
	Notifications *SubscriptionFilter `json:"notifications"`
	Meta          Meta                `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (p AcknowledgedParams) MarshalJSON() ([]byte, error) {
	type wire AcknowledgedParams
	if p.Notifications == nil {
		p.Notifications = &SubscriptionFilter{}
	}
	return json.Marshal(wire(p))
}

// ListenResult is the result that ends a subscriptions/listen stream
// gracefully. The schema requires Meta to carry MetaSubscriptionID, the
// listen request's id. The zero ResultType encodes as "complete".
type ListenResult struct {
	ResultType ResultType `json:"resultType"`
	Meta       `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the default ResultType.
func (r ListenResult) MarshalJSON() ([]byte, error) {
	type wire ListenResult
	r.ResultType = orComplete(r.ResultType)
	return json.Marshal(wire(r))
}
