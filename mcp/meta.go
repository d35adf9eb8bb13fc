package mcp

import (
	"encoding/json"
	"errors"
	"fmt"
)

// LatestProtocolVersion is the protocol revision this module implements.
const LatestProtocolVersion = "2026-07-28"

// Reserved _meta keys of the 2026-07-28 revision.
const (
	MetaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	MetaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	MetaClientInfo         = "io.modelcontextprotocol/clientInfo"
	MetaLogLevel           = "io.modelcontextprotocol/logLevel"
	MetaServerInfo         = "io.modelcontextprotocol/serverInfo"
	MetaSubscriptionID     = "io.modelcontextprotocol/subscriptionId"
	MetaProgressToken      = "progressToken"
)

// ExtensionTasks is the identifier of the Tasks extension, used as a key of
// the "extensions" capability on both sides.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// Meta is an open _meta object.
//
// The result types embed it under the name _meta (a field named Meta that
// keeps its place in the encoding), which gives them GetMeta and SetMeta:
// code that adds to the _meta of any result, such as the server adding its
// MetaServerInfo, needs no type switch (see MetaCarrier).
type Meta map[string]any

// GetMeta returns m.
func (m Meta) GetMeta() Meta { return m }

// SetMeta replaces the _meta object with v; nil removes it.
func (m *Meta) SetMeta(v Meta) { *m = v }

// MetaCarrier is implemented by a pointer to every result type of the
// 2026-07-28 revision and the Tasks extension (CallToolResult,
// DiscoverResult, the list results, CreateTaskResult, GetTaskResult and
// the others), through their embedded Meta.
type MetaCarrier interface {
	GetMeta() Meta
	SetMeta(Meta)
}

// RequestParams are the members every 2026-07-28 request's params share:
// the request _meta. Each params type embeds it as its last member, which
// gives it GetMeta and SetMeta (see RequestMetaCarrier).
type RequestParams struct {
	Meta *RequestMeta `json:"_meta,omitempty"`
}

// GetMeta returns the request _meta (nil when absent).
func (p *RequestParams) GetMeta() *RequestMeta { return p.Meta }

// SetMeta replaces the request _meta with m; nil removes it (a 2025-era
// request carries none).
func (p *RequestParams) SetMeta(m *RequestMeta) { p.Meta = m }

// RequestMetaCarrier is implemented by a pointer to every params type of a
// 2026-07-28 request (CallToolParams, DiscoverParams, TaskParams and the
// others), through their embedded RequestParams.
type RequestMetaCarrier interface {
	GetMeta() *RequestMeta
	SetMeta(*RequestMeta)
}

// RequestMeta is the _meta object of a client request. Required members are
// pointers or strings whose absence the server can detect.
type RequestMeta struct {
	ProtocolVersion    string              `json:"io.modelcontextprotocol/protocolVersion,omitempty"`
	ClientCapabilities *ClientCapabilities `json:"io.modelcontextprotocol/clientCapabilities,omitempty"`
	ClientInfo         *Implementation     `json:"io.modelcontextprotocol/clientInfo,omitempty"`
	LogLevel           LoggingLevel        `json:"io.modelcontextprotocol/logLevel,omitempty"`
	ProgressToken      json.RawMessage     `json:"progressToken,omitempty"`
	TraceParent        string              `json:"traceparent,omitempty"`
	TraceState         string              `json:"tracestate,omitempty"`
	Baggage            string              `json:"baggage,omitempty"`
}

// UnmarshalJSON decodes the known members by exact name (a differently
// cased key is an unknown member, ignored) and rejects duplicate names, an
// unknown log level and a progress token that is not a string or integer.
func (m *RequestMeta) UnmarshalJSON(data []byte) error {
	*m = RequestMeta{}
	return EachMember(data, func(name, raw []byte) error {
		var err error
		switch string(name) {
		case MetaProtocolVersion:
			m.ProtocolVersion, err = decodeString(raw)
		case MetaClientCapabilities:
			if raw[0] != '{' {
				return fmt.Errorf("mcp: _meta %s must be an object", MetaClientCapabilities) // null counts as missing
			}
			m.ClientCapabilities, err = decodeClientCapabilities(raw)
		case MetaClientInfo:
			if string(raw) != "null" {
				m.ClientInfo, err = decodeImplementation(raw)
			}
		case MetaLogLevel:
			var level string
			if level, err = decodeString(raw); err == nil {
				m.LogLevel = LoggingLevel(level)
				if _, known := m.LogLevel.Severity(); !known {
					err = errors.New("not a known level")
				}
			}
		case MetaProgressToken:
			if err = validIDSpelling(raw); err == nil {
				m.ProgressToken = append(json.RawMessage(nil), raw...)
			}
		case "traceparent":
			m.TraceParent, err = decodeString(raw)
		case "tracestate":
			m.TraceState, err = decodeString(raw)
		case "baggage":
			m.Baggage, err = decodeString(raw)
		}
		if err != nil {
			return fmt.Errorf("mcp: _meta %s: %w", name, err)
		}
		return nil
	})
}

// decodeClientCapabilities decodes the capabilities every request carries
// with exact member names, taking the common empty objects ({}) without
// reflection; anything richer goes through encoding/json.
func decodeClientCapabilities(raw []byte) (*ClientCapabilities, error) {
	c := &ClientCapabilities{}
	if string(raw) == "{}" {
		return c, nil
	}
	err := EachMember(raw, func(name, value []byte) error {
		if string(value) == "null" {
			return nil // as encoding/json: a null member is absent
		}
		empty := string(value) == "{}"
		switch string(name) {
		case "elicitation":
			c.Elicitation = &ElicitationCapability{}
			if !empty {
				return json.Unmarshal(value, c.Elicitation)
			}
		case "sampling":
			c.Sampling = &SamplingCapability{}
			if !empty {
				return json.Unmarshal(value, c.Sampling)
			}
		case "roots":
			c.Roots = &RootsCapability{}
			if !empty {
				return json.Unmarshal(value, c.Roots)
			}
		case "experimental":
			return json.Unmarshal(value, &c.Experimental)
		case "extensions":
			if value[0] != '{' {
				return errors.New("extensions must be an object")
			}
			c.Extensions = map[string]Object{}
			return EachMember(value, func(id, settings []byte) error {
				obj := Object{}
				if string(settings) != "{}" {
					if err := json.Unmarshal(settings, &obj); err != nil {
						return err
					}
				}
				c.Extensions[string(id)] = obj
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// decodeImplementation decodes clientInfo, which most requests carry, with
// exact member names; members other than the plain strings (icons) fall back
// to encoding/json for the whole object.
func decodeImplementation(raw []byte) (*Implementation, error) {
	impl := &Implementation{}
	slow := false
	err := EachMember(raw, func(name, value []byte) error {
		var err error
		switch string(name) {
		case "name":
			impl.Name, err = decodeString(value)
		case "version":
			impl.Version, err = decodeString(value)
		case "title":
			impl.Title, err = decodeString(value)
		case "description":
			impl.Description, err = decodeString(value)
		case "websiteUrl":
			impl.WebsiteURL, err = decodeString(value)
		default:
			slow = true
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	if slow {
		impl = &Implementation{}
		if err := json.Unmarshal(raw, impl); err != nil {
			return nil, err
		}
	}
	return impl, nil
}

// LoggingLevel is a syslog severity name.
type LoggingLevel string

// Logging levels, from least to most severe.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

// Severity returns the rank of l (0 for debug through 7 for emergency) and
// false when l is not a known level.
func (l LoggingLevel) Severity() (int, bool) {
	switch l {
	case LevelDebug:
		return 0, true
	case LevelInfo:
		return 1, true
	case LevelNotice:
		return 2, true
	case LevelWarning:
		return 3, true
	case LevelError:
		return 4, true
	case LevelCritical:
		return 5, true
	case LevelAlert:
		return 6, true
	case LevelEmergency:
		return 7, true
	}
	return 0, false
}

// Implementation describes a client or server implementation.
type Implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is an optionally sized icon a client may display.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// Object is an open JSON object kept as raw members, used for capability
// settings whose contents this module does not interpret.
type Object = map[string]json.RawMessage

// ClientCapabilities are the optional capabilities a client declares on each
// request. A nil pointer member means "not declared".
type ClientCapabilities struct {
	Experimental map[string]Object      `json:"experimental,omitzero"`
	Roots        *RootsCapability       `json:"roots,omitempty"`
	Sampling     *SamplingCapability    `json:"sampling,omitempty"`
	Elicitation  *ElicitationCapability `json:"elicitation,omitempty"`
	Extensions   map[string]Object      `json:"extensions,omitzero"`
}

// RootsCapability declares support for roots/list.
type RootsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// SamplingCapability declares support for sampling/createMessage.
type SamplingCapability struct {
	Context Object `json:"context,omitzero"`
	Tools   Object `json:"tools,omitzero"`
}

// ElicitationCapability declares support for elicitation. An empty object
// ({}) means form mode only, for backward compatibility.
type ElicitationCapability struct {
	Form Object `json:"form,omitzero"`
	URL  Object `json:"url,omitzero"`
}

// HasExtension reports whether the capabilities declare the extension id.
func (c *ClientCapabilities) HasExtension(id string) bool {
	if c == nil {
		return false
	}
	_, ok := c.Extensions[id]
	return ok
}

// SupportsElicitationForm reports whether form-mode elicitation is declared,
// including the backward-compatible empty elicitation object.
func (c *ClientCapabilities) SupportsElicitationForm() bool {
	if c == nil || c.Elicitation == nil {
		return false
	}
	e := c.Elicitation
	return e.Form != nil || (e.Form == nil && e.URL == nil)
}

// SupportsElicitationURL reports whether URL-mode elicitation is declared.
func (c *ClientCapabilities) SupportsElicitationURL() bool {
	return c != nil && c.Elicitation != nil && c.Elicitation.URL != nil
}

// ServerCapabilities are the capabilities a server advertises in
// server/discover.
type ServerCapabilities struct {
	Experimental map[string]Object    `json:"experimental,omitzero"`
	Logging      Object               `json:"logging,omitzero"`
	Completions  Object               `json:"completions,omitzero"`
	Prompts      *PromptsCapability   `json:"prompts,omitempty"`
	Resources    *ResourcesCapability `json:"resources,omitempty"`
	Tools        *ToolsCapability     `json:"tools,omitempty"`
	Extensions   map[string]Object    `json:"extensions,omitzero"`
}

// PromptsCapability advertises prompts.
type PromptsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourcesCapability advertises resources.
type ResourcesCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// ToolsCapability advertises tools.
type ToolsCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}
