package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
)

const countSchema = `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`

// originWith returns a valid origin with the given output contract.
func originWith(t testing.TB, schema string, mirror bool) Origin {
	t.Helper()
	p := OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: "main", Operation: mcp.MethodToolsCall, Tool: "count",
		Arguments: json.RawMessage(`{}`), MirrorStructured: mirror,
	}
	if schema != "" {
		p.OutputSchema = json.RawMessage(schema)
	}
	o, err := NewOrigin(p)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

func TestValidatorResult(t *testing.T) {
	t.Parallel()
	structured := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(s)}
	}
	tests := []struct {
		name    string
		schema  string
		mirror  bool
		opts    ValidatorOptions
		res     *mcp.CallToolResult
		want    *mcp.CallToolResult // nil: the input, unchanged
		wantErr bool
	}{
		{name: "no schema, text", res: textResult("hi")},
		{name: "no schema, no content", res: &mcp.CallToolResult{}},
		{name: "no schema, any structured content", res: structured(`[1,"x"]`)},
		{name: "schema match", schema: countSchema, res: structured(`{"n":3}`)},
		{name: "schema match with content", schema: countSchema, res: &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: "3"}}, StructuredContent: json.RawMessage(`{"n":3}`),
		}},
		{name: "schema mismatch", schema: countSchema, res: structured(`{"n":"three"}`), wantErr: true},
		{name: "schema missing member", schema: countSchema, res: structured(`{}`), wantErr: true},
		{name: "schema, structured content missing", schema: countSchema, res: textResult("3"), wantErr: true},
		{name: "schema, structured content not JSON", schema: countSchema, res: structured(`{"n":`), wantErr: true},
		{name: "schema, tool error without structured content", schema: countSchema, res: &mcp.CallToolResult{
			IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "failed"}},
		}},
		{name: "schema, tool error with mismatched structured content", schema: countSchema, res: &mcp.CallToolResult{
			IsError: true, StructuredContent: json.RawMessage(`{"n":"x"}`),
		}},
		{name: "no schema, structured content not JSON", res: structured(`{"n":`), wantErr: true},
		{name: "uncompilable schema", schema: `{"type":12}`, res: structured(`{"n":1}`), wantErr: true},
		{name: "nil result", res: nil, wantErr: true},
		{name: "resultType complete", res: &mcp.CallToolResult{ResultType: mcp.ResultComplete}},
		{name: "resultType task", res: &mcp.CallToolResult{ResultType: mcp.ResultTask}, wantErr: true},
		{name: "resultType input_required", res: &mcp.CallToolResult{ResultType: mcp.ResultInputRequired}, wantErr: true},
		{name: "unknown resultType", res: &mcp.CallToolResult{ResultType: "partial"}, wantErr: true},

		// Mirroring.
		{name: "mirrored when content is empty", schema: countSchema, mirror: true, res: structured(`{"n":3}`),
			want: &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: `{"n":3}`}},
				StructuredContent: json.RawMessage(`{"n":3}`),
			}},
		{name: "mirrored byte for byte", mirror: true, res: structured(`{ "n" : 3.50 }`),
			want: &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: `{ "n" : 3.50 }`}},
				StructuredContent: json.RawMessage(`{ "n" : 3.50 }`),
			}},
		{name: "not mirrored when content exists", schema: countSchema, mirror: true, res: &mcp.CallToolResult{
			Content: []mcp.Content{&mcp.TextContent{Text: "three"}}, StructuredContent: json.RawMessage(`{"n":3}`),
		}},
		{name: "not mirrored without structured content", mirror: true, res: &mcp.CallToolResult{IsError: true}},
		{name: "not mirrored unless the origin says so", schema: countSchema, res: structured(`{"n":3}`)},

		// Limits. {"resultType":"complete","content":[]} is 38 bytes, depth 2.
		{name: "size at the limit", opts: ValidatorOptions{MaxResultBytes: 38}, res: &mcp.CallToolResult{}},
		{name: "size over the limit", opts: ValidatorOptions{MaxResultBytes: 37}, res: &mcp.CallToolResult{}, wantErr: true},
		{name: "default size limit", res: textResult(strings.Repeat("x", DefaultMaxResultBytes)), wantErr: true},
		{name: "unmirrored result within the size", opts: ValidatorOptions{MaxResultBytes: 100},
			res: structured(`{"n":1234567890}`)},
		{name: "mirroring counts toward the size", mirror: true, opts: ValidatorOptions{MaxResultBytes: 100},
			res: structured(`{"n":1234567890}`), wantErr: true},
		{name: "depth at the limit", opts: ValidatorOptions{MaxResultDepth: 4}, res: structured(`{"a":{"b":{}}}`)},
		{name: "depth over the limit", opts: ValidatorOptions{MaxResultDepth: 3}, res: structured(`{"a":{"b":{}}}`), wantErr: true},
		{name: "default depth limit", res: structured(nested(DefaultMaxResultDepth)), wantErr: true},
		{name: "depth under the default limit", res: structured(nested(DefaultMaxResultDepth - 1))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := originWith(t, tt.schema, tt.mirror)
			var before mcp.CallToolResult
			if tt.res != nil {
				before = *tt.res
				before.Content = slices.Clone(tt.res.Content)
			}
			got, err := NewValidator(tt.opts).Result(o, tt.res)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Result() error = %v, want error %t", err, tt.wantErr)
			}
			if tt.opts == (ValidatorOptions{}) {
				if err2 := ValidateResult(o, tt.res); (err2 != nil) != tt.wantErr {
					t.Errorf("ValidateResult() error = %v, want error %t", err2, tt.wantErr)
				}
			}
			if tt.res != nil {
				if diff := cmp.Diff(before, *tt.res); diff != "" {
					t.Errorf("Result() modified its input (-before +after):\n%s", diff)
				}
			}
			if err != nil {
				if !IsInvalid(err) {
					t.Errorf("IsInvalid(%v) = false", err)
				}
				if got != nil {
					t.Errorf("Result() failed but returned %v", got)
				}
				return
			}
			want := tt.want
			if want == nil {
				want = tt.res
				if got != tt.res {
					t.Errorf("Result() copied a result it did not change")
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Result() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidatorSchemaCacheBounded(t *testing.T) {
	t.Parallel()
	v := NewValidator(ValidatorOptions{})
	res := &mcp.CallToolResult{StructuredContent: json.RawMessage(`{"n":1}`)}
	mismatch := &mcp.CallToolResult{StructuredContent: json.RawMessage(`{}`)}
	counting := originWith(t, countSchema, false)
	const goroutines = 4
	var origins [goroutines][maxCachedSchemas]Origin
	for g := range goroutines {
		for i := range maxCachedSchemas {
			origins[g][i] = originWith(t, fmt.Sprintf(`{"type":"object","title":"s%d-%d"}`, g, i), false)
		}
	}
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i, o := range origins[g] {
				if _, err := v.Result(o, res); err != nil {
					t.Errorf("Result(schema %d-%d): %v", g, i, err)
				}
				// A cached or evicted schema keeps giving the same answer.
				if _, err := v.Result(counting, mismatch); err == nil {
					t.Error("the output schema accepted a mismatch")
				}
			}
		})
	}
	wg.Wait()
	v.mu.Lock()
	n := len(v.schemas)
	v.mu.Unlock()
	if n > maxCachedSchemas {
		t.Errorf("schema cache holds %d entries, want at most %d", n, maxCachedSchemas)
	}
}

func TestValidatorInputRequests(t *testing.T) {
	t.Parallel()
	all := []string{InputElicitationForm, InputElicitationURL, InputSampling, InputRoots}
	elicit := func(params string) *mcp.InputRequest {
		return &mcp.InputRequest{Method: mcp.MethodElicitationCreate, Params: json.RawMessage(params)}
	}
	sampling := func(params string) *mcp.InputRequest {
		return &mcp.InputRequest{Method: mcp.MethodSamplingCreateMessage, Params: json.RawMessage(params)}
	}
	roots := &mcp.InputRequest{Method: mcp.MethodRootsList}
	form := formRequest()
	url := mcp.NewElicitURLRequest("Sign in", "https://example.com/login")
	samplingOK := sampling(`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":100}`)
	tests := []struct {
		name    string
		kinds   []string
		reqs    mcp.InputRequests
		wantErr bool
	}{
		{"form", all, mcp.InputRequests{"a": form}, false},
		{"form without mode", all, mcp.InputRequests{"a": elicit(`{"message":"m","requestedSchema":{"type":"object"}}`)}, false},
		{"url", all, mcp.InputRequests{"a": url}, false},
		{"sampling", all, mcp.InputRequests{"a": samplingOK}, false},
		{"sampling with zero maxTokens", all, mcp.InputRequests{"a": sampling(`{"messages":[{}],"maxTokens":0}`)}, false},
		{"roots", all, mcp.InputRequests{"a": roots}, false},
		{"several", all, mcp.InputRequests{"a": form, "b": url, "c": samplingOK, "d": roots}, false},
		{"only the declared kind", []string{InputElicitationURL}, mcp.InputRequests{"a": url}, false},

		{"none", all, nil, true},
		{"empty", all, mcp.InputRequests{}, true},
		{"empty key", all, mcp.InputRequests{"": form}, true},
		{"nil request", all, mcp.InputRequests{"a": nil}, true},
		{"unknown method", all, mcp.InputRequests{"a": {Method: "tools/call"}}, true},
		{"no method", all, mcp.InputRequests{"a": {}}, true},

		// Undeclared kinds.
		{"form undeclared", []string{InputElicitationURL, InputSampling, InputRoots}, mcp.InputRequests{"a": form}, true},
		{"url undeclared", []string{InputElicitationForm}, mcp.InputRequests{"a": url}, true},
		{"sampling undeclared", []string{InputRoots}, mcp.InputRequests{"a": samplingOK}, true},
		{"roots undeclared", []string{InputSampling}, mcp.InputRequests{"a": roots}, true},
		{"nothing declared", nil, mcp.InputRequests{"a": roots}, true},
		{"one of several undeclared", []string{InputElicitationForm}, mcp.InputRequests{"a": form, "b": url}, true},

		// Malformed elicitation.
		{"elicitation without params", all, mcp.InputRequests{"a": elicit(``)}, true},
		{"elicitation params not an object", all, mcp.InputRequests{"a": elicit(`[1]`)}, true},
		{"unknown elicitation mode", all, mcp.InputRequests{"a": elicit(`{"mode":"sms","message":"m"}`)}, true},
		{"form without message", all, mcp.InputRequests{"a": elicit(`{"mode":"form","requestedSchema":{"type":"object"}}`)}, true},
		{"form without schema", all, mcp.InputRequests{"a": elicit(`{"mode":"form","message":"m"}`)}, true},
		{"form with non-object schema", all, mcp.InputRequests{"a": elicit(`{"mode":"form","message":"m","requestedSchema":{"type":"string"}}`)}, true},
		{"form with schema not an object", all, mcp.InputRequests{"a": elicit(`{"mode":"form","message":"m","requestedSchema":"object"}`)}, true},
		{"url without url", all, mcp.InputRequests{"a": elicit(`{"mode":"url","message":"m"}`)}, true},
		{"url without message", all, mcp.InputRequests{"a": elicit(`{"mode":"url","url":"https://example.com"}`)}, true},

		// Malformed sampling.
		{"sampling without params", all, mcp.InputRequests{"a": sampling(``)}, true},
		{"sampling without messages", all, mcp.InputRequests{"a": sampling(`{"maxTokens":10}`)}, true},
		{"sampling with empty messages", all, mcp.InputRequests{"a": sampling(`{"messages":[],"maxTokens":10}`)}, true},
		{"sampling without maxTokens", all, mcp.InputRequests{"a": sampling(`{"messages":[{}]}`)}, true},
		{"sampling with string maxTokens", all, mcp.InputRequests{"a": sampling(`{"messages":[{}],"maxTokens":"10"}`)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := testOrigin(t, tt.kinds...)
			err := NewValidator(ValidatorOptions{}).InputRequests(o, tt.reqs)
			if (err != nil) != tt.wantErr {
				t.Fatalf("InputRequests() error = %v, want error %t", err, tt.wantErr)
			}
			if err2 := ValidateInputRequests(o, tt.reqs); (err2 != nil) != tt.wantErr {
				t.Errorf("ValidateInputRequests() error = %v, want error %t", err2, tt.wantErr)
			}
			if err != nil && !IsInvalid(err) {
				t.Errorf("IsInvalid(%v) = false", err)
			}
		})
	}
}

func TestIsInvalid(t *testing.T) {
	t.Parallel()
	o := originWith(t, countSchema, false)
	_, resErr := NewValidator(ValidatorOptions{}).Result(o, textResult("x"))
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"other error", errors.New("task: invalid value for the origin"), false},
		{"not found", ErrNotFound, false},
		{"result error", resErr, true},
		{"wrapped", fmt.Errorf("worker: %w", resErr), true},
	}
	for _, tt := range tests {
		if got := IsInvalid(tt.err); got != tt.want {
			t.Errorf("%s: IsInvalid(%v) = %t, want %t", tt.name, tt.err, got, tt.want)
		}
	}
}

var _ EventPublisher = (*Broadcaster)(nil)

func TestBroadcaster(t *testing.T) {
	t.Parallel()
	b := NewBroadcaster()
	b.Publish("nobody-listens") // no subscribers: a no-op

	var mu sync.Mutex
	got := map[string][]string{}
	record := func(name string) func(string) {
		return func(id string) {
			mu.Lock()
			defer mu.Unlock()
			got[name] = append(got[name], id)
		}
	}
	unsubA := b.Subscribe(record("a"))
	b.Subscribe(func(string) { panic("subscriber failure") })
	unsubB := b.Subscribe(record("b"))
	b.Subscribe(func(string) { panic(errors.New("another failure")) })

	b.Publish("t1")
	b.Publish("t2")
	unsubA()
	unsubA() // unsubscribing twice is harmless
	b.Publish("t3")
	unsubB()
	b.Publish("t4")

	want := map[string][]string{"a": {"t1", "t2"}, "b": {"t1", "t2", "t3"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("hints received (-want +got):\n%s", diff)
	}
}

func TestBroadcasterReentrant(t *testing.T) {
	t.Parallel()
	b := NewBroadcaster()
	var n atomic.Int32
	var unsub func()
	unsub = b.Subscribe(func(string) {
		n.Add(1)
		unsub() // a subscriber may unsubscribe itself
		b.Subscribe(func(string) { n.Add(10) })
	})
	b.Publish("x")
	b.Publish("y")
	if got := n.Load(); got != 11 {
		t.Errorf("calls = %d, want 11", got)
	}
}

func TestBroadcasterConcurrent(t *testing.T) {
	t.Parallel()
	b := NewBroadcaster()
	const publishers, hints = 8, 200
	var steady atomic.Int64
	b.Subscribe(func(string) { steady.Add(1) })
	b.Subscribe(func(string) { panic("always") })

	var wg sync.WaitGroup
	for range publishers {
		wg.Go(func() {
			for i := range hints {
				b.Publish(fmt.Sprint(i))
			}
		})
		wg.Go(func() {
			for range hints {
				var n atomic.Int64
				unsub := b.Subscribe(func(string) { n.Add(1) })
				b.Publish("own")
				unsub()
				if n.Load() < 1 {
					t.Error("a subscriber missed a hint published while it was subscribed")
				}
			}
		})
	}
	wg.Wait()
	if got, want := steady.Load(), int64(2*publishers*hints); got != want {
		t.Errorf("steady subscriber got %d hints, want %d", got, want)
	}
}
