package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/taskwire/taskwire/internal/jsonlimit"
	"github.com/taskwire/taskwire/internal/outputcheck"
	"github.com/taskwire/taskwire/mcp"
)

// Default delivery limits, equal to the server's defaults.
const (
	DefaultMaxResultBytes = 4 << 20
	DefaultMaxResultDepth = 128
)

// Validator runs the checks the server applies when it delivers a task's
// stored payload, so that workers can reject bad values before committing
// them: a result must satisfy the origin's output schema and the size and
// depth limits; input requests must be kinds the origin's tool declared and
// well formed. It caches compiled output schemas (bounded) and is safe for
// concurrent use.
type Validator struct {
	maxBytes int
	maxDepth int

	mu      sync.Mutex
	schemas map[string]*jsonschema.Resolved
}

// ValidatorOptions configure NewValidator; zero values mean the defaults.
type ValidatorOptions struct {
	MaxResultBytes int
	MaxResultDepth int
}

const maxCachedSchemas = 256

// NewValidator returns a Validator.
func NewValidator(opts ValidatorOptions) *Validator {
	if opts.MaxResultBytes <= 0 {
		opts.MaxResultBytes = DefaultMaxResultBytes
	}
	if opts.MaxResultDepth <= 0 {
		opts.MaxResultDepth = DefaultMaxResultDepth
	}
	return &Validator{maxBytes: opts.MaxResultBytes, maxDepth: opts.MaxResultDepth, schemas: map[string]*jsonschema.Resolved{}}
}

// ValidateResult checks res against o with default limits. Workers call it
// before completing a task; see Validator.Result.
func ValidateResult(o Origin, res *mcp.CallToolResult) error {
	_, err := NewValidator(ValidatorOptions{}).Result(o, res)
	return err
}

// ValidateInputRequests checks reqs against o; see Validator.InputRequests.
func ValidateInputRequests(o Origin, reqs mcp.InputRequests) error {
	return NewValidator(ValidatorOptions{}).InputRequests(o, reqs)
}

// Result checks a tool result against the origin's output contract and the
// limits, and returns the result as it is delivered: when the origin mirrors
// structured output and the result has no content, a text block with the
// structured content is added. The returned value is a copy when it differs.
func (v *Validator) Result(o Origin, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	res, _, err := v.EncodeResult(o, res)
	return res, err
}

// EncodeResult is Result that also returns the delivered result's JSON
// encoding, which a store can keep instead of encoding the result again.
func (v *Validator) EncodeResult(o Origin, res *mcp.CallToolResult) (*mcp.CallToolResult, []byte, error) {
	if res == nil {
		return nil, nil, fmt.Errorf("%w: nil result", errInvalid)
	}
	if res.ResultType != "" && res.ResultType != mcp.ResultComplete {
		return nil, nil, fmt.Errorf("%w: a tool result's resultType must be complete", errInvalid)
	}
	schema, err := v.schema(o.fields().OutputSchema)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: output schema: %v", errInvalid, err)
	}
	if err := outputcheck.Structured(schema, res); err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errInvalid, err)
	}
	if o.fields().MirrorStructured {
		res = res.WithStructuredText()
	}
	// MarshalJSON directly: json.Marshal would compact its output again.
	b, err := res.MarshalJSON()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: result cannot be encoded: %v", errInvalid, err)
	}
	if len(b) > v.maxBytes || !jsonlimit.DepthWithin(b, v.maxDepth) {
		return nil, nil, fmt.Errorf("%w: result exceeds the size or depth limit", errInvalid)
	}
	return res, b, nil
}

// InputRequests checks that every request is of a kind the origin's tool
// declared and is well formed: elicitation requests need a message, form mode
// a requested schema that is a form schema (an object of primitive
// properties, see CheckAnswer), URL mode a URL.
func (v *Validator) InputRequests(o Origin, reqs mcp.InputRequests) error {
	if len(reqs) == 0 {
		return fmt.Errorf("%w: no input requests", errInvalid)
	}
	for key, r := range reqs {
		if key == "" || r == nil {
			return fmt.Errorf("%w: input requests need a key and a value", errInvalid)
		}
		kind, err := inputKindOf(r)
		if err != nil {
			return fmt.Errorf("%w: %v", errInvalid, err)
		}
		if !o.Declares(kind) {
			return fmt.Errorf("%w: the tool did not declare %s input", errInvalid, kind)
		}
		if err := wellFormed(kind, r); err != nil {
			return fmt.Errorf("%w: input request: %v", errInvalid, err)
		}
	}
	return nil
}

func wellFormed(kind string, r *mcp.InputRequest) error {
	switch kind {
	case InputElicitationForm, InputElicitationURL:
		var p mcp.ElicitParams
		if err := json.Unmarshal(r.Params, &p); err != nil {
			return err
		}
		if p.Message == "" {
			return errors.New("elicitation needs a message")
		}
		if kind == InputElicitationURL && p.URL == "" {
			return errors.New("URL elicitation needs a url")
		}
		if kind == InputElicitationForm {
			if _, err := parseFormSchema(p.RequestedSchema); err != nil {
				return fmt.Errorf("form elicitation: %v", err)
			}
		}
	case InputSampling:
		var p struct {
			Messages  []json.RawMessage `json:"messages"`
			MaxTokens *int              `json:"maxTokens"`
		}
		if err := json.Unmarshal(r.Params, &p); err != nil || len(p.Messages) == 0 || p.MaxTokens == nil {
			return errors.New("sampling needs messages and maxTokens")
		}
	}
	return nil
}

// schema compiles (or returns the cached compilation of) an output schema;
// nil for none.
func (v *Validator) schema(raw json.RawMessage) (*jsonschema.Resolved, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	key := string(raw)
	v.mu.Lock()
	s, ok := v.schemas[key]
	v.mu.Unlock()
	if ok {
		return s, nil
	}
	s, err := outputcheck.Resolve(raw)
	if err != nil {
		return nil, err
	}
	v.mu.Lock()
	if len(v.schemas) >= maxCachedSchemas {
		for k := range v.schemas { // evict an arbitrary entry
			delete(v.schemas, k)
			break
		}
	}
	v.schemas[key] = s
	v.mu.Unlock()
	return s, nil
}

// IsInvalid reports whether err came from a Validator check.
func IsInvalid(err error) bool { return errors.Is(err, errInvalid) }
