package server

import (
	"reflect"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
)

// Go slices in inferred schemas. jsonschema-go infers every slice as
// {"type": ["null", "array"]}, because encoding/json writes a nil slice as
// null. That is true of what a tool returns, not of what it should accept:
//
//   - in an input schema a slice is a plain "array": a required []string
//     must arrive as an array, and "urls": null is refused (an optional
//     one, with omitempty or omitzero, may be left out). A pointer to a
//     slice (*[]string) still accepts null;
//   - in an output schema a slice stays ["null", "array"]: a handler that
//     returns a nil slice in a field without omitempty sends null, which
//     the output schema must accept. Add omitempty, or return an empty
//     slice, for a result that is never null.
//
// Map fields are inferred as "object" and pointers as nullable by the
// library; both are kept.

// fixInputSlices rewrites, in s inferred from t, the schema of every slice
// that is not behind a pointer from ["null", "array"] to "array". It follows
// the library's walk: pointers, struct fields by their JSON names (promoted
// fields of embedded structs included), slice and array items, and map
// values. The library refused cyclic types, so the walk ends.
func fixInputSlices(t reflect.Type, s *jsonschema.Schema) {
	if s == nil {
		return
	}
	pointer := false
	for t.Kind() == reflect.Pointer {
		t, pointer = t.Elem(), true
	}
	switch t.Kind() {
	case reflect.Slice:
		if !pointer && slices.Equal(s.Types, []string{"null", "array"}) {
			s.Type, s.Types = "array", nil
		}
		fixInputSlices(t.Elem(), s.Items)
	case reflect.Array:
		fixInputSlices(t.Elem(), s.Items)
	case reflect.Map:
		fixInputSlices(t.Elem(), s.AdditionalProperties)
	case reflect.Struct:
		for _, f := range reflect.VisibleFields(t) {
			if f.Anonymous || !f.IsExported() {
				continue
			}
			if name, ok := jsonFieldName(f); ok {
				fixInputSlices(f.Type, s.Properties[name])
			}
		}
	}
}

// jsonFieldName is the property name encoding/json and jsonschema-go give
// a struct field, and false for a field they leave out (json:"-").
func jsonFieldName(f reflect.StructField) (string, bool) {
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return f.Name, true
	}
	name, _, found := strings.Cut(tag, ",")
	if name == "-" && !found {
		return "", false
	}
	if name == "" {
		return f.Name, true
	}
	return name, true
}
