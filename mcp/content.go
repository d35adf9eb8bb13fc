package mcp

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
)

// Role is the speaker of a message, or an intended audience of content.
type Role string

// Roles.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// Annotations are optional hints a client uses to decide how to show or
// route an object. The zero value carries no hints.
type Annotations struct {
	// Audience lists who the content is meant for.
	Audience []Role `json:"audience,omitempty"`
	// Priority ranges from 0 (least important) to 1 (effectively required).
	Priority *float64 `json:"priority,omitempty"`
	// LastModified is an ISO 8601 timestamp, e.g. "2025-01-12T15:00:58Z".
	LastModified string `json:"lastModified,omitempty"`
}

// Content is one content block: *TextContent, *ImageContent, *AudioContent,
// *ResourceLink, *EmbeddedResource, *ToolUseContent or *ToolResultContent.
// The set is closed; use a type switch to inspect a block.
//
// Tool results and prompt messages (the schema's ContentBlock) may hold only
// the first five kinds; sampling messages (SamplingMessageContentBlock) may
// hold text, image, audio, tool use and tool result blocks. Each block
// encodes its "type" discriminator itself.
type Content interface {
	isContent()
}

func (*TextContent) isContent()       {}
func (*ImageContent) isContent()      {}
func (*AudioContent) isContent()      {}
func (*ResourceLink) isContent()      {}
func (*EmbeddedResource) isContent()  {}
func (*ToolUseContent) isContent()    {}
func (*ToolResultContent) isContent() {}

// Content type discriminators.
const (
	typeText         = "text"
	typeImage        = "image"
	typeAudio        = "audio"
	typeResourceLink = "resource_link"
	typeResource     = "resource"
	typeToolUse      = "tool_use"
	typeToolResult   = "tool_result"
)

// TextContent is a block of text. It encodes as {"type":"text",...}.
type TextContent struct {
	Text        string       `json:"text"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (c TextContent) MarshalJSON() ([]byte, error) {
	type wire TextContent
	return json.Marshal(struct {
		Type string `json:"type"`
		wire
	}{typeText, wire(c)})
}

// ImageContent is an image. Data holds the decoded bytes; on the wire they
// are standard padded base64 (RFC 4648 §4), and decoding fails on invalid
// base64. It encodes as {"type":"image",...}.
type ImageContent struct {
	Data        []byte       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler. Nil Data encodes as "".
func (c ImageContent) MarshalJSON() ([]byte, error) {
	type wire ImageContent
	return json.Marshal(struct {
		Type string `json:"type"`
		Data string `json:"data"`
		wire
	}{typeImage, base64.StdEncoding.EncodeToString(c.Data), wire(c)})
}

// AudioContent is audio data, encoded like ImageContent as
// {"type":"audio",...}.
type AudioContent struct {
	Data        []byte       `json:"data"`
	MIMEType    string       `json:"mimeType"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler. Nil Data encodes as "".
func (c AudioContent) MarshalJSON() ([]byte, error) {
	type wire AudioContent
	return json.Marshal(struct {
		Type string `json:"type"`
		Data string `json:"data"`
		wire
	}{typeAudio, base64.StdEncoding.EncodeToString(c.Data), wire(c)})
}

// ResourceLink points to a resource the client may read; it need not appear
// in resources/list. It encodes as {"type":"resource_link",...}.
type ResourceLink struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Meta        Meta         `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (c ResourceLink) MarshalJSON() ([]byte, error) {
	type wire ResourceLink
	return json.Marshal(struct {
		Type string `json:"type"`
		wire
	}{typeResourceLink, wire(c)})
}

// EmbeddedResource carries the contents of a resource inline. It encodes as
// {"type":"resource",...}; Resource must be set.
type EmbeddedResource struct {
	Resource    *ResourceContents `json:"resource"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        Meta              `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (c EmbeddedResource) MarshalJSON() ([]byte, error) {
	type wire EmbeddedResource
	return json.Marshal(struct {
		Type string `json:"type"`
		wire
	}{typeResource, wire(c)})
}

// ToolUseContent is a model's request to call a tool, in sampling only. It
// encodes as {"type":"tool_use",...}; nil Input encodes as {}.
type ToolUseContent struct {
	// ID identifies this tool use; a ToolResultContent answers it.
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
	Meta  Meta            `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (c ToolUseContent) MarshalJSON() ([]byte, error) {
	type wire ToolUseContent
	if c.Input == nil {
		c.Input = json.RawMessage("{}")
	}
	return json.Marshal(struct {
		Type string `json:"type"`
		wire
	}{typeToolUse, wire(c)})
}

// ToolResultContent is the result of a ToolUseContent, in sampling only. It
// encodes as {"type":"tool_result",...}; nil Content encodes as [].
type ToolResultContent struct {
	ToolUseID         string          `json:"toolUseId"`
	Content           []Content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError,omitempty"`
	Meta              Meta            `json:"_meta,omitzero"`
}

// MarshalJSON implements json.Marshaler.
func (c ToolResultContent) MarshalJSON() ([]byte, error) {
	type wire ToolResultContent
	c.Content = nonNil(c.Content)
	return json.Marshal(struct {
		Type string `json:"type"`
		wire
	}{typeToolResult, wire(c)})
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *ToolResultContent) UnmarshalJSON(data []byte) error {
	type wire ToolResultContent
	var w struct {
		wire
		Content contentList `json:"content"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*c = ToolResultContent(w.wire)
	c.Content = w.Content
	return nil
}

var errNoContentType = errors.New(`mcp: content block has no "type"`)

// UnmarshalContent decodes one content block, choosing the concrete type by
// its "type" member. It fails on an unknown type, on invalid base64 image or
// audio data, and on malformed JSON.
func UnmarshalContent(data []byte) (Content, error) {
	var head struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, err
	}
	if head.Type == nil {
		return nil, errNoContentType
	}
	var c Content
	switch *head.Type {
	case typeText:
		c = new(TextContent)
	case typeImage:
		c = new(ImageContent)
	case typeAudio:
		c = new(AudioContent)
	case typeResourceLink:
		c = new(ResourceLink)
	case typeResource:
		c = new(EmbeddedResource)
	case typeToolUse:
		c = new(ToolUseContent)
	case typeToolResult:
		c = new(ToolResultContent)
	default:
		return nil, fmt.Errorf("mcp: unknown content type %q", *head.Type)
	}
	if err := json.Unmarshal(data, c); err != nil {
		return nil, fmt.Errorf("mcp: %s content: %w", *head.Type, err)
	}
	return c, nil
}

// contentList decodes a JSON array of content blocks.
type contentList []Content

func (l *contentList) UnmarshalJSON(data []byte) error {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return err
	}
	if raws == nil {
		*l = nil
		return nil
	}
	out := make(contentList, len(raws))
	for i, raw := range raws {
		c, err := UnmarshalContent(raw)
		if err != nil {
			return fmt.Errorf("content[%d]: %w", i, err)
		}
		out[i] = c
	}
	*l = out
	return nil
}

// singleContent decodes one content block; JSON null yields nil.
type singleContent struct{ c Content }

func (s *singleContent) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		s.c = nil
		return nil
	}
	c, err := UnmarshalContent(data)
	if err != nil {
		return err
	}
	s.c = c
	return nil
}

// samplingContent decodes the content of a sampling message, which is either
// one block or an array of blocks.
type samplingContent []Content

func (l *samplingContent) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '[' {
		return (*contentList)(l).UnmarshalJSON(data)
	}
	var s singleContent
	if err := s.UnmarshalJSON(data); err != nil {
		return err
	}
	if s.c == nil {
		*l = nil
		return nil
	}
	*l = samplingContent{s.c}
	return nil
}

// samplingContentValue is the value a sampling message's content encodes
// as: a single block when there is exactly one, an array otherwise.
func samplingContentValue(cs []Content) any {
	if len(cs) == 1 {
		return cs[0]
	}
	return nonNil(cs)
}
