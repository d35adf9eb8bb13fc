package mcp

import "encoding/json"

// DiscoverParams are the params of server/discover, which carry only the
// request _meta.
type DiscoverParams struct {
	RequestParams
}

// DiscoverResult is the result of server/discover, a cacheable result. The
// server's Implementation goes in Meta under MetaServerInfo.
//
// The zero ResultType encodes as "complete", the zero CacheScope as
// "private", nil SupportedVersions as [] and nil Capabilities as {}.
type DiscoverResult struct {
	ResultType ResultType `json:"resultType"`
	// SupportedVersions lists the protocol revisions the server implements.
	SupportedVersions []string            `json:"supportedVersions"`
	Capabilities      *ServerCapabilities `json:"capabilities"`
	// Instructions describe how to use the server, e.g. for a system prompt.
	Instructions string `json:"instructions,omitempty"`
	// TTLMs is how long, in milliseconds, the client may cache the result;
	// 0 means it must not be reused.
	TTLMs      int64      `json:"ttlMs"`
	CacheScope CacheScope `json:"cacheScope"`
	Meta       `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the defaults above.
func (r DiscoverResult) MarshalJSON() ([]byte, error) {
	type wire DiscoverResult
	r.ResultType = orComplete(r.ResultType)
	r.CacheScope = orPrivate(r.CacheScope)
	r.SupportedVersions = nonNil(r.SupportedVersions)
	if r.Capabilities == nil {
		r.Capabilities = &ServerCapabilities{}
	}
	return json.Marshal(wire(r))
}
