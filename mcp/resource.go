package mcp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Resource describes a resource a server can read, as listed by
// resources/list.
type Resource struct {
	URI         string `json:"uri"`
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	MIMEType    string `json:"mimeType,omitempty"`
	// Size is the size of the raw contents in bytes, if known.
	Size        *int64       `json:"size,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitzero"`
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI
// template, as listed by resources/templates/list.
type ResourceTemplate struct {
	URITemplate string       `json:"uriTemplate"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitzero"`
}

// ListResourcesParams are the params of resources/list.
type ListResourcesParams struct {
	// Cursor is an opaque pagination cursor from a previous NextCursor.
	Cursor string `json:"cursor,omitempty"`
	RequestParams
}

// ListResourcesResult is the result of resources/list, a cacheable result.
// The zero ResultType encodes as "complete", the zero CacheScope as
// "private" and nil Resources as [].
type ListResourcesResult struct {
	ResultType ResultType  `json:"resultType"`
	Resources  []*Resource `json:"resources"`
	// NextCursor, when set, means more results may follow.
	NextCursor string `json:"nextCursor,omitempty"`
	// TTLMs is how long, in milliseconds, the client may cache the result;
	// 0 means it must not be reused.
	TTLMs      int64      `json:"ttlMs"`
	CacheScope CacheScope `json:"cacheScope"`
	Meta       `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the defaults above.
func (r ListResourcesResult) MarshalJSON() ([]byte, error) {
	type wire ListResourcesResult
	r.ResultType = orComplete(r.ResultType)
	r.CacheScope = orPrivate(r.CacheScope)
	r.Resources = nonNil(r.Resources)
	return json.Marshal(wire(r))
}

// ListResourceTemplatesParams are the params of resources/templates/list.
type ListResourceTemplatesParams struct {
	Cursor string `json:"cursor,omitempty"`
	RequestParams
}

// ListResourceTemplatesResult is the result of resources/templates/list, a
// cacheable result with the same defaults as ListResourcesResult.
type ListResourceTemplatesResult struct {
	ResultType        ResultType          `json:"resultType"`
	ResourceTemplates []*ResourceTemplate `json:"resourceTemplates"`
	NextCursor        string              `json:"nextCursor,omitempty"`
	TTLMs             int64               `json:"ttlMs"`
	CacheScope        CacheScope          `json:"cacheScope"`
	Meta              `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the defaults.
func (r ListResourceTemplatesResult) MarshalJSON() ([]byte, error) {
	type wire ListResourceTemplatesResult
	r.ResultType = orComplete(r.ResultType)
	r.CacheScope = orPrivate(r.CacheScope)
	r.ResourceTemplates = nonNil(r.ResourceTemplates)
	return json.Marshal(wire(r))
}

// ReadResourceParams are the params of resources/read. InputResponses and
// RequestState are set when the client retries after an
// InputRequiredResult.
type ReadResourceParams struct {
	URI            string         `json:"uri"`
	InputResponses InputResponses `json:"inputResponses,omitzero"`
	RequestState   string         `json:"requestState,omitempty"`
	RequestParams
}

// ReadResourceResult is the complete result of resources/read. It is a
// cacheable result: the schema requires ttlMs and cacheScope. The zero
// ResultType encodes as "complete", the zero CacheScope as "private" and nil
// Contents as [].
type ReadResourceResult struct {
	ResultType ResultType          `json:"resultType"`
	Contents   []*ResourceContents `json:"contents"`
	TTLMs      int64               `json:"ttlMs"`
	CacheScope CacheScope          `json:"cacheScope"`
	Meta       `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler, filling in the defaults.
func (r ReadResourceResult) MarshalJSON() ([]byte, error) {
	type wire ReadResourceResult
	r.ResultType = orComplete(r.ResultType)
	r.CacheScope = orPrivate(r.CacheScope)
	r.Contents = nonNil(r.Contents)
	return json.Marshal(wire(r))
}

// ResourceContents are the contents of a resource, either text or binary.
//
// A non-nil Blob selects binary contents: the value encodes as the schema's
// BlobResourceContents with Blob in standard base64. Otherwise it encodes as
// TextResourceContents, with "text" always present (an empty Text encodes as
// "text":""). Decoding requires exactly one of "text" and "blob" and keeps
// the distinction: a decoded "blob":"" yields an empty, non-nil Blob.
type ResourceContents struct {
	URI      string
	MIMEType string
	Text     string
	Blob     []byte
	Meta     Meta
}

type textResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text"`
	Meta     Meta   `json:"_meta,omitzero"`
}

type blobResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Blob     string `json:"blob"`
	Meta     Meta   `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (c ResourceContents) MarshalJSON() ([]byte, error) {
	if c.Blob != nil {
		return json.Marshal(blobResourceContents{
			URI:      c.URI,
			MIMEType: c.MIMEType,
			Blob:     base64.StdEncoding.EncodeToString(c.Blob),
			Meta:     c.Meta,
		})
	}
	return json.Marshal(textResourceContents{URI: c.URI, MIMEType: c.MIMEType, Text: c.Text, Meta: c.Meta})
}

var errResourceContents = errors.New(`mcp: resource contents must have exactly one of "text" and "blob"`)

// UnmarshalJSON implements json.Unmarshaler.
func (c *ResourceContents) UnmarshalJSON(data []byte) error {
	var w struct {
		URI      string  `json:"uri"`
		MIMEType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
		Meta     Meta    `json:"_meta"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	if (w.Text == nil) == (w.Blob == nil) {
		return errResourceContents
	}
	*c = ResourceContents{URI: w.URI, MIMEType: w.MIMEType, Meta: w.Meta}
	if w.Text != nil {
		c.Text = *w.Text
		return nil
	}
	blob, err := base64.StdEncoding.DecodeString(*w.Blob)
	if err != nil {
		return fmt.Errorf("mcp: resource blob: %w", err)
	}
	if blob == nil {
		blob = []byte{}
	}
	c.Blob = blob
	return nil
}
