package task

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/taskwire/taskwire/internal/jsonlimit"
	"github.com/taskwire/taskwire/mcp"
)

// Input kinds a tool may declare it can ask for while its task runs.
const (
	InputElicitationForm = "elicitation.form"
	InputElicitationURL  = "elicitation.url"
	InputSampling        = "sampling"
	InputRoots           = "roots"
)

// Limits of the origin codec.
const (
	// MaxOriginBytes bounds a persisted origin.
	MaxOriginBytes = 32 << 20
	// MaxOriginDepth bounds the JSON nesting of the arguments and schema.
	MaxOriginDepth = 256
)

// originMagic starts every persisted origin; the byte after it is the format
// version.
const originMagic = "twor"

const originFormatV1 = 1

// Origin is framework-owned, versioned, opaque state describing the request
// that created a task: protocol version, endpoint, operation, tool name, the
// validated arguments exactly as received, the input kinds the tool declared,
// and its output contract. It binds later reads to the tool's original output
// schema and input declarations.
//
// An Origin may contain secrets from the arguments: never log it and never
// send it to a client. Store Persisted() unchanged in a binary column and
// restore it with ParseOrigin. The persisted form keeps what a JSON round
// trip would erase (number spellings such as 1.0 vs 1e0, member order,
// escapes, large integers, white space), so never route it through a JSON
// column or serializer.
//
// The zero Origin is invalid. Origins compare with Equal, byte for byte;
// SameCall and SameArguments compare the arguments as JSON values.
type Origin struct {
	d *originData // nil for the zero Origin; behind a pointer so that fmt's
	// reflection over a containing struct cannot print the members
}

type originData struct {
	canon  string
	fields OriginParams
}

// OriginParams are the members of an Origin. The server fills them in; an
// application builds origins only in tests.
type OriginParams struct {
	ProtocolVersion string
	// Endpoint is the configured name of the endpoint that created the task.
	Endpoint string
	// Operation is the JSON-RPC method, "tools/call".
	Operation string
	// Tool is the tool name.
	Tool string
	// Arguments are the raw arguments exactly as received (a JSON object).
	Arguments json.RawMessage
	// InputKinds are the Input* kinds the tool declared, sorted and unique.
	InputKinds []string
	// OutputSchema is the tool's output schema, or nil for none.
	OutputSchema json.RawMessage
	// MirrorStructured records that structured output is mirrored as text
	// content when a result carries none.
	MirrorStructured bool
}

// NewOrigin validates p and returns the origin it describes.
func NewOrigin(p OriginParams) (Origin, error) {
	p.Arguments = bytes.Clone(p.Arguments)
	p.OutputSchema = bytes.Clone(p.OutputSchema)
	p.InputKinds = slices.Clone(p.InputKinds)
	slices.Sort(p.InputKinds)
	p.InputKinds = slices.Compact(p.InputKinds)
	if err := p.validate(); err != nil {
		return Origin{}, err
	}
	b := p.encode()
	if len(b) > MaxOriginBytes {
		return Origin{}, errors.New("task: origin too large")
	}
	return Origin{d: &originData{canon: string(b), fields: p}}, nil
}

func (p *OriginParams) validate() error {
	switch {
	case p.ProtocolVersion == "" || p.Endpoint == "" || p.Operation == "" || p.Tool == "":
		return errors.New("task: origin needs a protocol version, endpoint, operation and tool")
	case len(p.Arguments) == 0 || !json.Valid(p.Arguments) || bytes.TrimSpace(p.Arguments)[0] != '{':
		return errors.New("task: origin arguments must be a JSON object")
	case !jsonlimit.DepthWithin(p.Arguments, MaxOriginDepth):
		return errors.New("task: origin arguments nest too deeply")
	case len(p.OutputSchema) > 0 && (!json.Valid(p.OutputSchema) || !jsonlimit.DepthWithin(p.OutputSchema, MaxOriginDepth)):
		return errors.New("task: origin output schema must be valid JSON")
	}
	for _, k := range p.InputKinds {
		switch k {
		case InputElicitationForm, InputElicitationURL, InputSampling, InputRoots:
		default:
			return fmt.Errorf("task: unknown input kind %q", k)
		}
	}
	return nil
}

// encode writes the canonical persisted form: the magic, the format version,
// then each member as a uvarint length and its bytes, in a fixed order.
func (p *OriginParams) encode() []byte {
	var b []byte
	b = append(b, originMagic...)
	b = append(b, originFormatV1)
	put := func(s []byte) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	put([]byte(p.ProtocolVersion))
	put([]byte(p.Endpoint))
	put([]byte(p.Operation))
	put([]byte(p.Tool))
	put(p.Arguments)
	put([]byte(strings.Join(p.InputKinds, ",")))
	put(p.OutputSchema)
	flags := byte(0)
	if p.MirrorStructured {
		flags |= 1
	}
	b = append(b, flags)
	return b
}

// ParseOrigin restores an origin from its persisted form. It fails on
// anything Persisted did not produce: a wrong magic, an unsupported format
// version, truncated or trailing data, invalid members, or data over the
// limits. The restored origin persists to the identical bytes.
func ParseOrigin(b []byte) (Origin, error) {
	if len(b) > MaxOriginBytes {
		return Origin{}, errors.New("task: persisted origin too large")
	}
	if len(b) < len(originMagic)+1 || string(b[:len(originMagic)]) != originMagic {
		return Origin{}, errors.New("task: not a persisted origin")
	}
	if v := b[len(originMagic)]; v != originFormatV1 {
		return Origin{}, fmt.Errorf("task: unsupported origin format version %d", v)
	}
	rest := b[len(originMagic)+1:]
	next := func() ([]byte, bool) {
		n, k := binary.Uvarint(rest)
		if k <= 0 || n > uint64(len(rest)-k) {
			return nil, false
		}
		v := rest[k : k+int(n)]
		rest = rest[k+int(n):]
		return v, true
	}
	var fields [7][]byte
	for i := range fields {
		v, ok := next()
		if !ok {
			return Origin{}, errors.New("task: truncated origin")
		}
		fields[i] = v
	}
	if len(rest) != 1 || rest[0]&^1 != 0 {
		return Origin{}, errors.New("task: malformed origin flags")
	}
	p := OriginParams{
		ProtocolVersion:  string(fields[0]),
		Endpoint:         string(fields[1]),
		Operation:        string(fields[2]),
		Tool:             string(fields[3]),
		Arguments:        bytes.Clone(fields[4]),
		MirrorStructured: rest[0]&1 != 0,
	}
	if len(fields[5]) > 0 {
		p.InputKinds = strings.Split(string(fields[5]), ",")
	}
	if len(fields[6]) > 0 {
		p.OutputSchema = bytes.Clone(fields[6])
	}
	if !slices.IsSorted(p.InputKinds) || len(slices.Compact(slices.Clone(p.InputKinds))) != len(p.InputKinds) {
		return Origin{}, errors.New("task: malformed origin input kinds")
	}
	if err := p.validate(); err != nil {
		return Origin{}, err
	}
	if !bytes.Equal(p.encode(), b) {
		return Origin{}, errors.New("task: persisted origin is not in canonical form")
	}
	return Origin{d: &originData{canon: string(b), fields: p}}, nil
}

// Persisted returns the canonical bytes to store unchanged.
func (o Origin) Persisted() []byte {
	if o.d == nil {
		return nil
	}
	return []byte(o.d.canon)
}

// IsZero reports whether o is the zero (invalid) Origin.
func (o Origin) IsZero() bool { return o.d == nil }

// Equal reports whether o and p are the same origin, byte for byte.
func (o Origin) Equal(p Origin) bool {
	if o.d == nil || p.d == nil {
		return o.d == p.d
	}
	return o.d.canon == p.d.canon
}

// SameArguments reports whether o and p carry the same tool arguments: the
// same JSON value, whatever the white space, member order and string
// escapes of their texts. Number spellings count (1 and 1.0 differ, as
// they do to a Go integer field), as does the order of array elements. It
// is the comparison of an idempotent retry's arguments with those of the
// task its key already holds; the canonical form it compares is bounded by
// MaxOriginDepth like the arguments themselves. Zero origins carry no
// arguments and compare equal only to each other.
func (o Origin) SameArguments(p Origin) bool {
	if o.d == nil || p.d == nil {
		return o.d == p.d
	}
	return jsonlimit.EqualCanonical(o.d.fields.Arguments, p.d.fields.Arguments, MaxOriginDepth)
}

// SameCall reports whether o and p record the same call: equal in every
// member but the text of the arguments, which need only be SameArguments.
// The origin of a task returned for an idempotent retry is SameCall with
// the retry's, though its bytes may differ.
func (o Origin) SameCall(p Origin) bool {
	if o.Equal(p) {
		return true
	}
	if o.d == nil || p.d == nil {
		return false
	}
	return o.d.fields.ProtocolVersion == p.d.fields.ProtocolVersion && o.SameTool(p) && o.SameArguments(p)
}

// SameTool reports whether o and p record calls of the same tool as it was
// then declared: the same endpoint, operation and tool name, input kinds,
// output schema and structured-content mirroring. The protocol version and
// the arguments are not compared. Calls of one tool differ in SameTool when
// a deployment changed its output schema or its input declaration between
// them. Zero origins compare equal only to each other.
func (o Origin) SameTool(p Origin) bool {
	if o.d == nil || p.d == nil {
		return o.d == p.d
	}
	x, y := o.d.fields, p.d.fields
	return x.Endpoint == y.Endpoint && x.Operation == y.Operation && x.Tool == y.Tool &&
		slices.Equal(x.InputKinds, y.InputKinds) && bytes.Equal(x.OutputSchema, y.OutputSchema) &&
		x.MirrorStructured == y.MirrorStructured
}

// fields returns the members, or zero members for the zero Origin.
func (o Origin) fields() OriginParams {
	if o.d == nil {
		return OriginParams{}
	}
	return o.d.fields
}

// Params returns a copy of the origin's members.
func (o Origin) Params() OriginParams {
	p := o.fields()
	p.Arguments = bytes.Clone(p.Arguments)
	p.OutputSchema = bytes.Clone(p.OutputSchema)
	p.InputKinds = slices.Clone(p.InputKinds)
	return p
}

// ProtocolVersion returns the protocol version of the call that created
// the task.
func (o Origin) ProtocolVersion() string { return o.fields().ProtocolVersion }

// Tool returns the name of the tool that created the task.
func (o Origin) Tool() string { return o.fields().Tool }

// Endpoint returns the name of the endpoint that created the task.
func (o Origin) Endpoint() string { return o.fields().Endpoint }

// Declares reports whether the origin's tool declared the input kind.
func (o Origin) Declares(kind string) bool {
	_, ok := slices.BinarySearch(o.fields().InputKinds, kind)
	return ok
}

// String redacts the origin: it never prints arguments.
func (o Origin) String() string {
	if o.IsZero() {
		return "task.Origin(zero)"
	}
	return "task.Origin(redacted)"
}

// GoString redacts the origin in %#v output too.
func (o Origin) GoString() string { return o.String() }

// Format redacts the origin for every verb.
func (o Origin) Format(f fmt.State, _ rune) { io.WriteString(f, o.String()) }

// inputKindOf returns the Input* kind of an input request.
func inputKindOf(r *mcp.InputRequest) (string, error) {
	switch r.Method {
	case mcp.MethodElicitationCreate:
		mode, err := r.ElicitMode()
		if err != nil {
			return "", err
		}
		if mode == mcp.ElicitModeURL {
			return InputElicitationURL, nil
		}
		return InputElicitationForm, nil
	case mcp.MethodSamplingCreateMessage:
		return InputSampling, nil
	case mcp.MethodRootsList:
		return InputRoots, nil
	}
	return "", fmt.Errorf("task: unsupported input request method %q", r.Method)
}
