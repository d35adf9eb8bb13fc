// Package outputcheck validates tool results against their output contract.
// The server uses it for inline results and task deliveries; workers use it
// (through package task) before they store a result.
package outputcheck

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/taskwire/taskwire/mcp"
)

// Structured checks a tool result against a resolved output schema: a
// successful result must carry structuredContent that the schema accepts.
// Results with isError true, and any result when schema is nil, pass.
func Structured(schema *jsonschema.Resolved, res *mcp.CallToolResult) error {
	if res == nil {
		return errors.New("outputcheck: nil result")
	}
	if schema == nil || res.IsError {
		return nil
	}
	if len(res.StructuredContent) == 0 {
		return errors.New("outputcheck: result lacks structuredContent required by the output schema")
	}
	var v any
	if err := json.Unmarshal(res.StructuredContent, &v); err != nil {
		return fmt.Errorf("outputcheck: structuredContent is not JSON: %w", err)
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("outputcheck: structuredContent does not match the output schema: %w", err)
	}
	return nil
}

// Resolve compiles a JSON Schema document.
func Resolve(raw json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, err
	}
	return s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: false})
}
