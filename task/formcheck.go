package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/mail"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
)

// A form elicitation's requestedSchema is a restricted JSON Schema: an
// object of primitive properties (strings with optional format, length
// bounds and single-select enums, numbers and integers with optional
// bounds, booleans, and multi-select arrays of string enums), with a list
// of required properties. formSchema is its parsed form; parseFormSchema
// refuses anything else, and checkContent checks an accepted answer's
// content against it exactly.

// formSchema is a parsed requestedSchema.
type formSchema struct {
	properties map[string]*formField
	required   []string
}

// formField is one property of a form schema.
type formField struct {
	Type      string   `json:"type"`
	Format    string   `json:"format"`
	MinLength *int     `json:"minLength"`
	MaxLength *int     `json:"maxLength"`
	Minimum   *float64 `json:"minimum"`
	Maximum   *float64 `json:"maximum"`
	Enum      []string `json:"enum"`
	OneOf     []struct {
		Const string `json:"const"`
	} `json:"oneOf"`
	Items *struct {
		Type  string   `json:"type"`
		Enum  []string `json:"enum"`
		AnyOf []struct {
			Const string `json:"const"`
		} `json:"anyOf"`
	} `json:"items"`
	MinItems *int `json:"minItems"`
	MaxItems *int `json:"maxItems"`

	choices []string // the allowed values of an enum, or of an array's items
}

// parseFormSchema parses a form elicitation's requestedSchema.
func parseFormSchema(raw json.RawMessage) (*formSchema, error) {
	var s struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(raw, &s); err != nil || s.Type != "object" {
		return nil, errors.New("a form's requestedSchema must be an object schema")
	}
	fs := &formSchema{properties: make(map[string]*formField, len(s.Properties)), required: s.Required}
	for name, p := range s.Properties {
		f := &formField{}
		if err := json.Unmarshal(p, f); err != nil {
			return nil, fmt.Errorf("form property %q: %v", name, err)
		}
		if err := f.resolve(); err != nil {
			return nil, fmt.Errorf("form property %q: %v", name, err)
		}
		fs.properties[name] = f
	}
	for _, name := range s.Required {
		if fs.properties[name] == nil {
			return nil, fmt.Errorf("required form property %q is not defined", name)
		}
	}
	return fs, nil
}

// resolve checks that f is one of the primitive schemas and collects its
// choices.
func (f *formField) resolve() error {
	switch f.Type {
	case "string":
		switch f.Format {
		case "", "date", "date-time", "email", "uri":
		default:
			return fmt.Errorf("unknown string format %q", f.Format)
		}
		f.choices = f.Enum
		for _, o := range f.OneOf {
			f.choices = append(f.choices, o.Const)
		}
		if f.Enum == nil && f.OneOf == nil {
			f.choices = nil
		} else if len(f.choices) == 0 {
			return errors.New("an enum needs at least one value")
		}
	case "number", "integer", "boolean":
	case "array":
		if f.Items == nil {
			return errors.New("a multi-select needs items")
		}
		f.choices = f.Items.Enum
		for _, o := range f.Items.AnyOf {
			f.choices = append(f.choices, o.Const)
		}
		if len(f.choices) == 0 {
			return errors.New("a multi-select needs at least one value")
		}
	default:
		return fmt.Errorf("type %q is not a primitive form type", f.Type)
	}
	return nil
}

// checkContent checks the content of an accepted form answer: an object
// with every required property, each value of its property's type and
// within its bounds; members the form does not define (which JSON Schema
// admits) must still be primitive values. Nil content is an empty object.
func (fs *formSchema) checkContent(content json.RawMessage) error {
	members := map[string]json.RawMessage{}
	if content != nil && string(content) != "null" {
		var err error
		if members, err = mcp.Members(content); err != nil {
			return errors.New("content must be an object without repeated members")
		}
	}
	for _, name := range fs.required {
		if _, ok := members[name]; !ok {
			return fmt.Errorf("required property %q is missing", name)
		}
	}
	// Report the first failure in name order, for a stable message.
	for _, name := range slices.Sorted(maps.Keys(members)) {
		f := fs.properties[name]
		if f == nil {
			// JSON Schema admits properties the form does not define; the
			// ElicitResult schema still bounds them to primitive values.
			if !primitiveValue(members[name]) {
				return errors.New("content has a value that is not a string, number, boolean or array of strings")
			}
			continue
		}
		if err := f.check(members[name]); err != nil {
			return fmt.Errorf("property %q %v", name, err)
		}
	}
	return nil
}

// primitiveValue reports whether v is a string, number, boolean or array
// of strings.
func primitiveValue(v json.RawMessage) bool {
	if len(v) == 0 {
		return false
	}
	switch v[0] {
	case '"', 't', 'f', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return false
		}
		for _, it := range items {
			if len(it) == 0 || it[0] != '"' {
				return false
			}
		}
		return true
	}
	return false
}

// check checks one property value.
func (f *formField) check(v json.RawMessage) error {
	switch f.Type {
	case "string":
		s, err := mcp.DecodeString(v)
		if err != nil {
			return errors.New("must be a string")
		}
		return f.checkString(s)
	case "number", "integer":
		if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
			return fmt.Errorf("must be a %s", f.Type)
		}
		x, err := strconv.ParseFloat(string(v), 64)
		if err != nil || math.IsInf(x, 0) {
			return fmt.Errorf("must be a finite %s", f.Type)
		}
		if f.Type == "integer" && x != math.Trunc(x) {
			return errors.New("must be an integer")
		}
		if (f.Minimum != nil && x < *f.Minimum) || (f.Maximum != nil && x > *f.Maximum) {
			return errors.New("is out of range")
		}
	case "boolean":
		if s := string(v); s != "true" && s != "false" {
			return errors.New("must be a boolean")
		}
	case "array":
		var items []json.RawMessage
		if len(v) == 0 || v[0] != '[' || json.Unmarshal(v, &items) != nil {
			return errors.New("must be an array of strings")
		}
		if (f.MinItems != nil && len(items) < *f.MinItems) || (f.MaxItems != nil && len(items) > *f.MaxItems) {
			return errors.New("has too few or too many items")
		}
		for _, it := range items {
			s, err := mcp.DecodeString(it)
			if err != nil {
				return errors.New("must be an array of strings")
			}
			if !slices.Contains(f.choices, s) {
				return errors.New("has an item that is not one of the choices")
			}
		}
	}
	return nil
}

// checkString checks a string value's length, choices and format.
func (f *formField) checkString(s string) error {
	n := utf8.RuneCountInString(s)
	if (f.MinLength != nil && n < *f.MinLength) || (f.MaxLength != nil && n > *f.MaxLength) {
		return errors.New("is too short or too long")
	}
	if f.choices != nil && !slices.Contains(f.choices, s) {
		return errors.New("is not one of the choices")
	}
	var ok bool
	switch f.Format {
	case "":
		ok = true
	case "date":
		_, err := time.Parse(time.DateOnly, s)
		ok = err == nil
	case "date-time":
		_, err := time.Parse(time.RFC3339Nano, s)
		ok = err == nil
	case "email":
		a, err := mail.ParseAddress(s)
		ok = err == nil && a.Name == "" && a.Address == s
	case "uri":
		u, err := url.Parse(s)
		ok = err == nil && u.Scheme != "" && !strings.ContainsAny(s, " \t\r\n")
	}
	if !ok {
		return fmt.Errorf("is not a valid %s", f.Format)
	}
	return nil
}
