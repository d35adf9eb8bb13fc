package task

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"testing/quick"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
)

// rawOrigin spells the persisted format independently of the codec: the
// magic, the version byte, seven uvarint-length-prefixed members and the
// flag bytes.
func rawOrigin(version byte, fields [7]string, flags ...byte) []byte {
	b := append([]byte("twor"), version)
	for _, f := range fields {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return append(b, flags...)
}

// validFields are the members of a valid origin, in persisted order.
var validFields = [7]string{
	mcp.LatestProtocolVersion, "main", mcp.MethodToolsCall, "report",
	`{"q":"x","n":1.0}`, "elicitation.form,sampling", `{"type":"object"}`,
}

func validOriginParams() OriginParams {
	return OriginParams{
		ProtocolVersion:  mcp.LatestProtocolVersion,
		Endpoint:         "main",
		Operation:        mcp.MethodToolsCall,
		Tool:             "report",
		Arguments:        json.RawMessage(`{"q":"x","n":1.0}`),
		InputKinds:       []string{InputSampling, InputElicitationForm, InputSampling},
		OutputSchema:     json.RawMessage(`{"type":"object"}`),
		MirrorStructured: true,
	}
}

// nested returns a JSON object nested depth levels deep.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth-1) + `{}` + strings.Repeat(`}`, depth-1)
}

func TestNewOrigin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		edit    func(p *OriginParams)
		wantErr bool
	}{
		{"valid", func(p *OriginParams) {}, false},
		{"no kinds, schema or mirroring", func(p *OriginParams) {
			p.InputKinds, p.OutputSchema, p.MirrorStructured = nil, nil, false
		}, false},
		{"all kinds", func(p *OriginParams) {
			p.InputKinds = []string{InputRoots, InputElicitationURL, InputSampling, InputElicitationForm}
		}, false},
		{"arguments with surrounding white space", func(p *OriginParams) { p.Arguments = json.RawMessage(" \n{}\t") }, false},
		{"arguments at the depth limit", func(p *OriginParams) { p.Arguments = json.RawMessage(nested(MaxOriginDepth)) }, false},
		{"brackets inside strings do not count", func(p *OriginParams) {
			p.Arguments = json.RawMessage(`{"s":"` + strings.Repeat("[{", MaxOriginDepth) + `"}`)
		}, false},
		{"no protocol version", func(p *OriginParams) { p.ProtocolVersion = "" }, true},
		{"no endpoint", func(p *OriginParams) { p.Endpoint = "" }, true},
		{"no operation", func(p *OriginParams) { p.Operation = "" }, true},
		{"no tool", func(p *OriginParams) { p.Tool = "" }, true},
		{"no arguments", func(p *OriginParams) { p.Arguments = nil }, true},
		{"white space arguments", func(p *OriginParams) { p.Arguments = json.RawMessage("  ") }, true},
		{"invalid JSON arguments", func(p *OriginParams) { p.Arguments = json.RawMessage(`{"q":`) }, true},
		{"array arguments", func(p *OriginParams) { p.Arguments = json.RawMessage(`[1]`) }, true},
		{"string arguments", func(p *OriginParams) { p.Arguments = json.RawMessage(`"{}"`) }, true},
		{"null arguments", func(p *OriginParams) { p.Arguments = json.RawMessage(`null`) }, true},
		{"two objects", func(p *OriginParams) { p.Arguments = json.RawMessage(`{}{}`) }, true},
		{"arguments over the depth limit", func(p *OriginParams) { p.Arguments = json.RawMessage(nested(MaxOriginDepth + 1)) }, true},
		{"invalid JSON schema", func(p *OriginParams) { p.OutputSchema = json.RawMessage(`{"type":`) }, true},
		{"schema over the depth limit", func(p *OriginParams) { p.OutputSchema = json.RawMessage(nested(MaxOriginDepth + 1)) }, true},
		{"unknown input kind", func(p *OriginParams) { p.InputKinds = []string{"telepathy"} }, true},
		{"empty input kind", func(p *OriginParams) { p.InputKinds = []string{""} }, true},
		{"oversize", func(p *OriginParams) { p.Tool = strings.Repeat("t", MaxOriginBytes) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := validOriginParams()
			tt.edit(&p)
			o, err := NewOrigin(p)
			if (err != nil) != tt.wantErr {
				t.Fatalf("NewOrigin() error = %v, want error %t", err, tt.wantErr)
			}
			if err != nil {
				if !o.IsZero() {
					t.Error("NewOrigin() failed but returned a non-zero Origin")
				}
				return
			}
			back, err := ParseOrigin(o.Persisted())
			if err != nil {
				t.Fatalf("ParseOrigin(Persisted()) = %v", err)
			}
			if !bytes.Equal(back.Persisted(), o.Persisted()) || !back.Equal(o) {
				t.Errorf("round trip changed the persisted bytes")
			}
			if diff := cmp.Diff(o.Params(), back.Params()); diff != "" {
				t.Errorf("round trip changed the params (-want +got):\n%s", diff)
			}
			if !bytes.Equal(o.Params().Arguments, p.Arguments) {
				t.Errorf("Params().Arguments = %q, want %q", o.Params().Arguments, p.Arguments)
			}
		})
	}
}

func TestOriginPersistedFormat(t *testing.T) {
	t.Parallel()
	o, err := NewOrigin(validOriginParams())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := o.Persisted(), rawOrigin(1, validFields, 1); !bytes.Equal(got, want) {
		t.Errorf("Persisted()\n got %q\nwant %q", got, want)
	}
	want := OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: "main", Operation: mcp.MethodToolsCall, Tool: "report",
		Arguments:        json.RawMessage(`{"q":"x","n":1.0}`),
		InputKinds:       []string{InputElicitationForm, InputSampling},
		OutputSchema:     json.RawMessage(`{"type":"object"}`),
		MirrorStructured: true,
	}
	if diff := cmp.Diff(want, o.Params()); diff != "" {
		t.Errorf("Params() (-want +got):\n%s", diff)
	}
	if o.Tool() != "report" || o.Endpoint() != "main" {
		t.Errorf("Tool(), Endpoint() = %q, %q", o.Tool(), o.Endpoint())
	}
	for kind, want := range map[string]bool{
		InputElicitationForm: true, InputSampling: true, InputElicitationURL: false, InputRoots: false, "": false,
	} {
		if got := o.Declares(kind); got != want {
			t.Errorf("Declares(%q) = %t, want %t", kind, got, want)
		}
	}

	// Neither the persisted bytes nor the params alias the origin.
	b := o.Persisted()
	b[0] = 'X'
	p := o.Params()
	p.Arguments[1] = 'X'
	p.OutputSchema[1] = 'X'
	p.InputKinds[0] = InputRoots
	if !bytes.Equal(o.Persisted(), rawOrigin(1, validFields, 1)) {
		t.Error("mutating Persisted() changed the origin")
	}
	if diff := cmp.Diff(want, o.Params()); diff != "" {
		t.Errorf("mutating Params() changed the origin (-want +got):\n%s", diff)
	}
}

func TestNewOriginCopiesItsInput(t *testing.T) {
	t.Parallel()
	p := validOriginParams()
	o, err := NewOrigin(p)
	if err != nil {
		t.Fatal(err)
	}
	want := o.Params()
	p.Arguments[2] = 'X'
	p.OutputSchema[2] = 'X'
	if diff := cmp.Diff(want, o.Params()); diff != "" {
		t.Errorf("mutating the caller's slices changed the origin (-want +got):\n%s", diff)
	}
}

func TestParseOriginRejects(t *testing.T) {
	t.Parallel()
	with := func(i int, v string) [7]string {
		f := validFields
		f[i] = v
		return f
	}
	valid := rawOrigin(1, validFields, 1)
	hugeLength := append([]byte("twor\x01"), binary.AppendUvarint(nil, 1<<62)...)
	tests := []struct {
		name string
		in   []byte
	}{
		{"empty", nil},
		{"magic only", []byte("twor")},
		{"wrong magic", append([]byte("TWOR"), valid[4:]...)},
		{"JSON text", []byte(`{"formatVersion":1}`)},
		{"format version 0", rawOrigin(0, validFields, 1)},
		{"format version 2", rawOrigin(2, validFields, 1)},
		{"format version 255", rawOrigin(255, validFields, 1)},
		{"trailing NUL", append(bytes.Clone(valid), 0)},
		{"trailing text", append(bytes.Clone(valid), "x"...)},
		{"no flags", rawOrigin(1, validFields)},
		{"two flag bytes", rawOrigin(1, validFields, 1, 0)},
		{"flag 2", rawOrigin(1, validFields, 2)},
		{"flag 3", rawOrigin(1, validFields, 3)},
		{"flag 0x80", rawOrigin(1, validFields, 0x80)},
		{"flag 0xff", rawOrigin(1, validFields, 0xff)},
		{"length beyond the data", hugeLength},
		{"overflowing length", append([]byte("twor\x01"), bytes.Repeat([]byte{0xff}, 11)...)},
		{"unsorted input kinds", rawOrigin(1, with(5, "sampling,elicitation.form"), 0)},
		{"duplicate input kinds", rawOrigin(1, with(5, "sampling,sampling"), 0)},
		{"unknown input kind", rawOrigin(1, with(5, "elicitation.form,telepathy"), 0)},
		{"empty input kind", rawOrigin(1, with(5, ",sampling"), 0)},
		{"trailing comma in input kinds", rawOrigin(1, with(5, "sampling,"), 0)},
		{"lone comma in input kinds", rawOrigin(1, with(5, ","), 0)},
		{"empty protocol version", rawOrigin(1, with(0, ""), 0)},
		{"empty endpoint", rawOrigin(1, with(1, ""), 0)},
		{"empty operation", rawOrigin(1, with(2, ""), 0)},
		{"empty tool", rawOrigin(1, with(3, ""), 0)},
		{"empty arguments", rawOrigin(1, with(4, ""), 0)},
		{"invalid JSON arguments", rawOrigin(1, with(4, `{"q":`), 0)},
		{"array arguments", rawOrigin(1, with(4, `[{}]`), 0)},
		{"number arguments", rawOrigin(1, with(4, `1`), 0)},
		{"null arguments", rawOrigin(1, with(4, `null`), 0)},
		{"over-deep arguments", rawOrigin(1, with(4, nested(MaxOriginDepth+1)), 0)},
		{"invalid JSON schema", rawOrigin(1, with(6, `{"type"`), 0)},
		{"over-deep schema", rawOrigin(1, with(6, nested(MaxOriginDepth+1)), 0)},
		{"oversize", rawOrigin(1, with(4, `{"b":"`+strings.Repeat("x", MaxOriginBytes)+`"}`), 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o, err := ParseOrigin(tt.in)
			if err == nil {
				t.Fatalf("ParseOrigin(%.80q) succeeded", tt.in)
			}
			if !o.IsZero() {
				t.Error("ParseOrigin failed but returned a non-zero Origin")
			}
		})
	}
}

func TestParseOriginRejectsEveryTruncation(t *testing.T) {
	t.Parallel()
	for _, p := range []OriginParams{validOriginParams(), {
		ProtocolVersion: "v", Endpoint: "e", Operation: "o", Tool: "t", Arguments: json.RawMessage(`{}`),
	}} {
		o, err := NewOrigin(p)
		if err != nil {
			t.Fatal(err)
		}
		full := o.Persisted()
		for n := range len(full) {
			if _, err := ParseOrigin(full[:n]); err == nil {
				t.Errorf("ParseOrigin(first %d of %d bytes) succeeded", n, len(full))
			}
		}
	}
}

func TestParseOriginRejectsNonCanonical(t *testing.T) {
	t.Parallel()
	valid := rawOrigin(1, validFields, 1)
	// The protocol version's length, 10, spelt in two bytes.
	overlong := append([]byte("twor\x01\x8a\x00"), valid[6:]...)
	if o, err := ParseOrigin(overlong); err == nil {
		t.Errorf("ParseOrigin(overlong length) succeeded; Equal(canonical) = %t", o.Equal(mustParse(t, valid)))
	}
}

func mustParse(t testing.TB, b []byte) Origin {
	t.Helper()
	o, err := ParseOrigin(b)
	if err != nil {
		t.Fatalf("ParseOrigin(%q): %v", b, err)
	}
	return o
}

func TestOriginLargerThan4MiBRoundTrips(t *testing.T) {
	t.Parallel()
	p := validOriginParams()
	p.Arguments = json.RawMessage(`{"blob":"` + strings.Repeat("x", 4<<20) + `","esc":"é\u00e9\/","n":1.50}`)
	if len(p.Arguments) <= 4<<20 {
		t.Fatalf("arguments are only %d bytes", len(p.Arguments))
	}
	o, err := NewOrigin(p)
	if err != nil {
		t.Fatal(err)
	}
	back := mustParse(t, o.Persisted())
	if !bytes.Equal(back.Persisted(), o.Persisted()) || !back.Equal(o) {
		t.Error("large origin did not round-trip byte for byte")
	}
	if !bytes.Equal(back.Params().Arguments, p.Arguments) {
		t.Error("large origin's arguments changed")
	}
}

func TestOriginEqualAndIsZero(t *testing.T) {
	t.Parallel()
	mk := func(edit func(p *OriginParams)) Origin {
		p := validOriginParams()
		edit(&p)
		o, err := NewOrigin(p)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	base := mk(func(p *OriginParams) {})
	// want is Equal's answer; call and args are SameCall's and
	// SameArguments', which compare the arguments as JSON values; tool is
	// SameTool's, which compares neither arguments nor version.
	tests := []struct {
		name                   string
		other                  Origin
		want, call, args, tool bool
	}{
		{"same params", mk(func(p *OriginParams) {}), true, true, true, true},
		{"parsed copy", mustParse(t, base.Persisted()), true, true, true, true},
		{"kinds in another order", mk(func(p *OriginParams) { p.InputKinds = []string{InputElicitationForm, InputSampling} }), true, true, true, true},
		{"zero", Origin{}, false, false, false, false},
		{"1.0 spelt 1", mk(func(p *OriginParams) { p.Arguments = json.RawMessage(`{"q":"x","n":1}`) }), false, false, false, true},
		{"1.0 spelt 1e0", mk(func(p *OriginParams) { p.Arguments = json.RawMessage(`{"q":"x","n":1e0}`) }), false, false, false, true},
		{"members reordered", mk(func(p *OriginParams) { p.Arguments = json.RawMessage(`{"n":1.0,"q":"x"}`) }), false, true, true, true},
		{"extra white space", mk(func(p *OriginParams) { p.Arguments = json.RawMessage(`{"q":"x", "n":1.0}`) }), false, true, true, true},
		{"escaped", mk(func(p *OriginParams) { p.Arguments = json.RawMessage(`{"q":"\u0078","n":1.0}`) }), false, true, true, true},
		{"other value", mk(func(p *OriginParams) { p.Arguments = json.RawMessage(`{"q":"y","n":1.0}`) }), false, false, false, true},
		{"other endpoint", mk(func(p *OriginParams) { p.Endpoint = "other" }), false, false, true, false},
		{"other tool", mk(func(p *OriginParams) { p.Tool = "other" }), false, false, true, false},
		{"other version", mk(func(p *OriginParams) { p.ProtocolVersion = "2025-11-25" }), false, false, true, true},
		{"fewer kinds", mk(func(p *OriginParams) { p.InputKinds = []string{InputSampling} }), false, false, true, false},
		{"no schema", mk(func(p *OriginParams) { p.OutputSchema = nil }), false, false, true, false},
		{"not mirrored", mk(func(p *OriginParams) { p.MirrorStructured = false }), false, false, true, false},
		{"other tool, reordered", mk(func(p *OriginParams) { p.Tool = "other"; p.Arguments = json.RawMessage(`{"n":1.0,"q":"x"}`) }), false, false, true, false},
	}
	for _, tt := range tests {
		for _, c := range []struct {
			op   string
			f    func(a, b Origin) bool
			want bool
		}{{"Equal", Origin.Equal, tt.want}, {"SameCall", Origin.SameCall, tt.call}, {"SameArguments", Origin.SameArguments, tt.args},
			{"SameTool", Origin.SameTool, tt.tool}} {
			if got := c.f(base, tt.other); got != c.want {
				t.Errorf("%s: %s() = %t, want %t", tt.name, c.op, got, c.want)
			}
			if got := c.f(tt.other, base); got != c.want {
				t.Errorf("%s: %s() is not symmetric", tt.name, c.op)
			}
		}
	}
	if got, want := base.ProtocolVersion(), validOriginParams().ProtocolVersion; got != want || (Origin{}).ProtocolVersion() != "" {
		t.Errorf("ProtocolVersion() = %q, want %q", got, want)
	}
	var z Origin
	if !z.IsZero() || base.IsZero() {
		t.Errorf("IsZero() = %t for zero, %t for valid", z.IsZero(), base.IsZero())
	}
	if !z.Equal(Origin{}) || !z.SameCall(Origin{}) || !z.SameArguments(Origin{}) || !z.SameTool(Origin{}) {
		t.Error("zero origins are not Equal, SameCall, SameArguments and SameTool")
	}
	if got := z.String(); got != "task.Origin(zero)" {
		t.Errorf("zero String() = %q", got)
	}
	if got := base.String(); got != "task.Origin(redacted)" {
		t.Errorf("String() = %q", got)
	}
}

// jsonObject is arbitrary JSON object text exercising what a decode and
// re-encode would normalise: number spellings, big integers, escapes, member
// order, repeated and escape-equivalent keys, and white space.
type jsonObject string

var (
	jsonNumbers = []string{
		"0", "1", "1.0", "1e0", "1E+2", "-0", "-0.0", "3.50", "0.1e-7", "1E400",
		"12345678901234567890123", "-12345678901234567890123.000", "9007199254740993",
	}
	jsonStrings = []string{
		`""`, `"é"`, `"\u00e9"`, `"\u00E9"`, `"/"`, `"\/"`, `"\"q\""`, `"\\"`, `"\n\t\r\b\f"`,
		`"\u0000"`, `"😀"`, `"\ud83d\ude00"`, `"<&>"`, `"\u003c\u0026\u003e"`, `"\u2028"`,
	}
	jsonKeys = []string{`"a"`, `"\u0061"`, `"b"`, `"é"`, `"\u00e9"`, `""`, `"a"`, `"__proto__"`}
	jsonWS   = []string{"", "", "", " ", "\t", "\n", "\r\n  "}
)

// Generate implements quick.Generator.
func (jsonObject) Generate(r *rand.Rand, size int) reflect.Value {
	var b strings.Builder
	ws := func() { b.WriteString(jsonWS[r.Intn(len(jsonWS))]) }
	var value func(depth int)
	object := func(depth int) {
		b.WriteByte('{')
		ws()
		for i := range r.Intn(4) {
			if i > 0 {
				b.WriteByte(',')
				ws()
			}
			b.WriteString(jsonKeys[r.Intn(len(jsonKeys))])
			ws()
			b.WriteByte(':')
			ws()
			value(depth + 1)
			ws()
		}
		b.WriteByte('}')
	}
	value = func(depth int) {
		n := 6
		if depth > 2 {
			n = 4 // scalars only
		}
		switch r.Intn(n) {
		case 0:
			b.WriteString(jsonNumbers[r.Intn(len(jsonNumbers))])
		case 1:
			b.WriteString(jsonStrings[r.Intn(len(jsonStrings))])
		case 2:
			b.WriteString([]string{"true", "false", "null"}[r.Intn(3)])
		case 3:
			b.WriteString(`"` + strings.Repeat("x", r.Intn(size%16+1)) + `"`)
		case 4:
			b.WriteByte('[')
			ws()
			for i := range r.Intn(4) {
				if i > 0 {
					b.WriteByte(',')
					ws()
				}
				value(depth + 1)
				ws()
			}
			b.WriteByte(']')
		case 5:
			object(depth)
		}
	}
	ws()
	object(0)
	ws()
	return reflect.ValueOf(jsonObject(b.String()))
}

func TestOriginRoundTripProperty(t *testing.T) {
	t.Parallel()
	property := func(args jsonObject, mirror bool, kinds uint8) bool {
		if !json.Valid([]byte(args)) {
			t.Errorf("generator produced invalid JSON %q", args)
			return false
		}
		p := validOriginParams()
		p.Arguments = json.RawMessage(args)
		p.MirrorStructured = mirror
		p.InputKinds = nil
		for i, k := range []string{InputElicitationForm, InputElicitationURL, InputSampling, InputRoots} {
			if kinds&(1<<i) != 0 {
				p.InputKinds = append(p.InputKinds, k)
			}
		}
		o, err := NewOrigin(p)
		if err != nil {
			t.Errorf("NewOrigin(%q) = %v", args, err)
			return false
		}
		back, err := ParseOrigin(o.Persisted())
		if err != nil {
			t.Errorf("ParseOrigin(%q) = %v", o.Persisted(), err)
			return false
		}
		if !bytes.Equal(back.Persisted(), o.Persisted()) || !back.Equal(o) {
			t.Errorf("round trip of %q changed the persisted bytes", args)
			return false
		}
		if got := back.Params().Arguments; !bytes.Equal(got, []byte(args)) {
			t.Errorf("arguments changed:\n got %q\nwant %q", got, args)
			return false
		}
		if diff := cmp.Diff(o.Params(), back.Params()); diff != "" {
			t.Errorf("params changed (-want +got):\n%s", diff)
			return false
		}
		return true
	}
	cfg := &quick.Config{MaxCount: 1000, Rand: rand.New(rand.NewSource(20260801))}
	if err := quick.Check(property, cfg); err != nil {
		t.Error(err)
	}
}

func FuzzParseOrigin(f *testing.F) {
	f.Add(rawOrigin(1, validFields, 1))
	f.Add(rawOrigin(1, validFields, 0))
	f.Add(rawOrigin(1, [7]string{"v", "e", "o", "t", "{}", "", ""}, 0))
	f.Add(rawOrigin(1, [7]string{"v", "e", "o", "t", `{"a":[1,1.0,1e0,-0,"\u00e9"]}`, "elicitation.form,elicitation.url,roots,sampling", `{}`}, 1))
	f.Add(rawOrigin(1, [7]string{"v", "e", "o", "t", "{}", "sampling,elicitation.form", ""}, 0))
	f.Add(rawOrigin(2, validFields, 1))
	f.Add(append(rawOrigin(1, validFields, 1), 0))
	f.Add([]byte("twor\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := ParseOrigin(data)
		if err != nil {
			if !o.IsZero() {
				t.Fatal("ParseOrigin failed but returned a non-zero Origin")
			}
			return
		}
		if o.IsZero() {
			t.Fatal("ParseOrigin succeeded with a zero Origin")
		}
		if !bytes.Equal(o.Persisted(), data) {
			t.Fatalf("Persisted() = %q, want the input %q", o.Persisted(), data)
		}
		again, err := ParseOrigin(o.Persisted())
		if err != nil || !again.Equal(o) {
			t.Fatalf("reparse: %v", err)
		}
		if _, err := NewOrigin(o.Params()); err != nil {
			t.Fatalf("NewOrigin(Params()) of a parsed origin: %v", err)
		}
		if s := o.String(); s != "task.Origin(redacted)" {
			t.Fatalf("String() = %q", s)
		}
	})
}
