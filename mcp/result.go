package mcp

import "encoding/json"

// ResultType is the "resultType" discriminator every 2026-07-28 result
// carries. Clients treat an absent resultType as ResultComplete.
type ResultType string

// Result types. ResultTask belongs to the Tasks extension and is reserved for
// CreateTaskResult.
const (
	ResultComplete      ResultType = "complete"
	ResultInputRequired ResultType = "input_required"
	ResultTask          ResultType = "task"
)

// CacheScope says who may reuse a cacheable result: any client of the server
// (public) or only the client that received it (private).
type CacheScope string

// Cache scopes of a CacheableResult.
const (
	CachePublic  CacheScope = "public"
	CachePrivate CacheScope = "private"
)

// EmptyResult is a result with no members beyond the common ones, such as
// the acknowledgement of tasks/update and tasks/cancel. The zero EmptyResult
// encodes as {"resultType":"complete"}.
type EmptyResult struct {
	ResultType ResultType `json:"resultType"`
	Meta       `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, encoding a zero ResultType as
// ResultComplete.
func (r EmptyResult) MarshalJSON() ([]byte, error) {
	type wire EmptyResult
	r.ResultType = orComplete(r.ResultType)
	return json.Marshal(wire(r))
}

// orComplete returns t, or ResultComplete when t is empty.
func orComplete(t ResultType) ResultType {
	if t == "" {
		return ResultComplete
	}
	return t
}

// orPrivate returns s, or CachePrivate (the conservative choice) when s is
// empty.
func orPrivate(s CacheScope) CacheScope {
	if s == "" {
		return CachePrivate
	}
	return s
}

// nonNil returns s, or an empty slice when s is nil, so that a required
// array member encodes as [] rather than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
