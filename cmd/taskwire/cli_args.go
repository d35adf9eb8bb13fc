package main

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/taskwire/taskwire/internal/cliflags"
)

// schemaField is one property of an object schema: a tool's input or an
// elicitation form, as the command line shows and types it.
type schemaField struct {
	Name        string
	Type        string // a JSON Schema type, "a|b" for a union, "any" when absent
	Title       string
	Description string
	Required    bool
	Default     json.RawMessage
	Enum        []string // allowed string values, when the schema lists them
}

// objectSchema is what the command line reads of an object schema.
type objectSchema struct {
	Fields []schemaField // in the order the schema declares them
	// Closed: additionalProperties is false, so unknown keys are refused.
	Closed bool
	// Required names the properties an object must have, in the order of
	// the schema's "required", each once; it may name properties that
	// Fields lacks.
	Required []string
}

// field returns the field called name, or nil.
func (s objectSchema) field(name string) *schemaField {
	for i := range s.Fields {
		if s.Fields[i].Name == name {
			return &s.Fields[i]
		}
	}
	return nil
}

// maxSchemaFields bounds the properties the command line reads of a schema
// (a server's schema is untrusted input).
const maxSchemaFields = 256

// parseObjectSchema reads the properties of an object schema. A missing or
// empty schema is an open object without properties.
func parseObjectSchema(raw json.RawMessage) (objectSchema, error) {
	if len(bytes.TrimSpace(raw)) == 0 || string(bytes.TrimSpace(raw)) == "null" {
		return objectSchema{}, nil
	}
	var s struct {
		Properties map[string]struct {
			Type        json.RawMessage `json:"type"`
			Title       string          `json:"title"`
			Description string          `json:"description"`
			Default     json.RawMessage `json:"default"`
			Enum        []any           `json:"enum"`
			OneOf       []struct {
				Const any `json:"const"`
			} `json:"oneOf"`
		} `json:"properties"`
		Required             []string        `json:"required"`
		AdditionalProperties json.RawMessage `json:"additionalProperties"`
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		return objectSchema{}, fmt.Errorf("the schema is not a JSON object schema: %w", err)
	}
	if len(s.Properties) > maxSchemaFields || len(s.Required) > maxSchemaFields {
		return objectSchema{}, fmt.Errorf("the schema has more than %d properties", maxSchemaFields)
	}
	out := objectSchema{Closed: string(bytes.TrimSpace(s.AdditionalProperties)) == "false"}
	for _, name := range s.Required {
		if !slices.Contains(out.Required, name) {
			out.Required = append(out.Required, name)
		}
	}
	for name, p := range s.Properties {
		f := schemaField{
			Name: name, Type: schemaType(p.Type), Title: p.Title, Description: p.Description,
			Required: slices.Contains(s.Required, name), Default: p.Default,
		}
		for _, v := range p.Enum {
			if str, ok := v.(string); ok {
				f.Enum = append(f.Enum, str)
			}
		}
		for _, o := range p.OneOf {
			if str, ok := o.Const.(string); ok {
				f.Enum = append(f.Enum, str)
			}
		}
		out.Fields = append(out.Fields, f)
	}
	order := propertyOrder(raw)
	slices.SortFunc(out.Fields, func(a, b schemaField) int {
		if c := cmp.Compare(order[a.Name], order[b.Name]); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// propertyOrder maps the names of a schema's properties to their position
// in the schema's text, so that fields are asked and listed in the order
// the server wrote them. It reads the top-level "properties" object only.
func propertyOrder(raw json.RawMessage) map[string]int {
	order := map[string]int{}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return order
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return order
		}
		if key != "properties" {
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return order
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return order
		}
		for dec.More() {
			name, err := dec.Token()
			if err != nil {
				return order
			}
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return order
			}
			if n, ok := name.(string); ok {
				order[n] = len(order)
			}
		}
		return order
	}
	return order
}

// schemaType renders a JSON Schema "type": a name, a union joined by "|",
// or "any".
func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil && one != "" {
		return one
	}
	var many []string
	if json.Unmarshal(raw, &many) == nil && len(many) > 0 {
		return strings.Join(many, "|")
	}
	return "any"
}

// scalarType is the type a key=value argument is converted to: the first
// of the field's types that is not "null".
func (f *schemaField) scalarType() string {
	for t := range strings.SplitSeq(f.Type, "|") {
		if t != "null" {
			return t
		}
	}
	return "any"
}

// parseToolArgs turns the command line's key=value and key:=JSON arguments
// into a tool's arguments. key=value is converted to the type the schema
// gives the key (integer, number, boolean, string; a key the schema does
// not type is a string); key:=JSON is taken as JSON. A key given twice, a
// value that does not parse, an array or object given as key=value, and a
// key a closed schema does not list are usage errors naming the key.
func parseToolArgs(schema objectSchema, args []string) (map[string]any, error) {
	out := make(map[string]any, len(args))
	for _, arg := range args {
		eq := strings.IndexByte(arg, '=')
		if eq <= 0 || (eq == 1 && arg[0] == ':') {
			return nil, usageErrorf("argument %q: want key=value or key:=JSON", arg)
		}
		key, value, asJSON := arg[:eq], arg[eq+1:], false
		if strings.HasSuffix(key, ":") {
			key, asJSON = key[:len(key)-1], true
		}
		if _, dup := out[key]; dup {
			return nil, usageErrorf("argument %q is given twice", key)
		}
		f := schema.field(key)
		if f == nil && schema.Closed {
			return nil, usageErrorf("argument %q: the tool has no such input (it takes %s)", key, fieldNames(schema))
		}
		if asJSON {
			if !json.Valid([]byte(value)) {
				return nil, usageErrorf("argument %q: %q is not valid JSON", key, value)
			}
			out[key] = json.RawMessage(value)
			continue
		}
		typ := "string"
		if f != nil {
			typ = f.scalarType()
		}
		v, err := convertScalar(typ, value)
		if err != nil {
			return nil, usageErrorf("argument %q: %v", key, err)
		}
		out[key] = v
	}
	return out, nil
}

// checkRequired refuses tool arguments that lack a property the schema
// requires, so that the mistake is a usage error (exit 2) naming what is
// missing and how to pass it, not a call the server refuses. The arguments
// are those parseToolArgs returned, so key=value, key:=JSON and arguments
// after "--" all count.
func checkRequired(tool string, schema objectSchema, args map[string]any) error {
	var missing, forms []string
	for _, name := range schema.Required {
		if _, ok := args[name]; ok {
			continue
		}
		missing = append(missing, name)
		form := name + "=VALUE"
		if f := schema.field(name); f != nil {
			switch f.scalarType() {
			case "array", "object", "any":
				form = name + ":=JSON"
			}
		}
		forms = append(forms, shellQuote(form))
	}
	if len(missing) == 0 {
		return nil
	}
	noun := "argument"
	if len(missing) > 1 {
		noun = "arguments"
	}
	return usageErrorf("call: tool %q needs the %s %s: add %s (taskwire tools lists every input)",
		tool, noun, cliflags.OneLine(strings.Join(missing, ", "), 500), cliflags.OneLine(strings.Join(forms, " "), 500))
}

// convertScalar converts a command-line value to typ.
func convertScalar(typ, value string) (any, error) {
	switch typ {
	case "integer":
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", value)
		}
		return n, nil
	case "number":
		x, err := strconv.ParseFloat(value, 64)
		if err != nil || math.IsInf(x, 0) || math.IsNaN(x) {
			return nil, fmt.Errorf("%q is not a number", value)
		}
		return x, nil
	case "boolean":
		b, err := strconv.ParseBool(value)
		if err != nil {
			return nil, fmt.Errorf("%q is not a boolean (true or false)", value)
		}
		return b, nil
	case "array", "object":
		return nil, fmt.Errorf("the input is an %s: give it as JSON, key:=JSON", typ)
	}
	return value, nil
}

// fieldNames lists a schema's field names for an error message.
func fieldNames(s objectSchema) string {
	if len(s.Fields) == 0 {
		return "no inputs"
	}
	names := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
