// Package schemacheck validates JSON documents against the official MCP
// 2026-07-28 schema and the Tasks extension schema. It is a test helper:
// tests of any package in this module may import it; production code must
// not.
//
// The schemas are embedded copies (see README.md for their sources). Each
// definition is compiled on first use and cached; all functions are safe for
// concurrent use.
package schemacheck

import (
	"bytes"
	_ "embed"
	"fmt"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	//go:embed schemas/mcp-2026-07-28.json
	coreSchema []byte
	//go:embed schemas/ext-tasks-draft.json
	tasksSchema []byte
)

// Schema locations. The core schema has no $id, so it gets a synthetic one;
// the extension schema is registered under its own $id.
const (
	coreURL  = "https://modelcontextprotocol.io/schema/2026-07-28/schema.json"
	tasksURL = "https://modelcontextprotocol.io/ext-tasks/schema.json"
)

var (
	core  = &schemaSet{url: coreURL, src: coreSchema}
	tasks = &schemaSet{url: tasksURL, src: tasksSchema}
)

// Validate reports whether doc is valid against the definition
// #/$defs/<def> of the core 2026-07-28 schema. It returns an error if def does
// not exist, if doc is not JSON, or if doc does not validate; the error of a
// failed validation lists every violation.
func Validate(def string, doc []byte) error { return core.validate(def, doc) }

// ValidateTasks is like Validate for the definitions of the Tasks extension
// schema, which is self-contained (it also carries the core definitions the
// extension builds on).
func ValidateTasks(def string, doc []byte) error { return tasks.validate(def, doc) }

// schemaSet compiles the definitions of one schema document on demand.
type schemaSet struct {
	url string
	src []byte

	once     sync.Once
	initErr  error
	mu       sync.Mutex // guards compiler and compiled
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema
}

func (s *schemaSet) init() {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(s.src))
	if err != nil {
		s.initErr = fmt.Errorf("schemacheck: parse %s: %w", s.url, err)
		return
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(s.url, doc); err != nil {
		s.initErr = fmt.Errorf("schemacheck: add %s: %w", s.url, err)
		return
	}
	s.compiler = c
	s.compiled = make(map[string]*jsonschema.Schema)
}

func (s *schemaSet) schema(def string) (*jsonschema.Schema, error) {
	s.once.Do(s.init)
	if s.initErr != nil {
		return nil, s.initErr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.compiled[def]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(s.url + "#/$defs/" + def)
	if err != nil {
		return nil, fmt.Errorf("schemacheck: compile definition %q: %w", def, err)
	}
	s.compiled[def] = sch
	return sch, nil
}

func (s *schemaSet) validate(def string, doc []byte) error {
	sch, err := s.schema(def)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("schemacheck: document is not JSON: %w", err)
	}
	if err := sch.Validate(v); err != nil {
		return fmt.Errorf("schemacheck: %s: %w", def, err)
	}
	return nil
}
