package taskdata

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

func TestAnswerMatches(t *testing.T) {
	elicit := mcp.NewElicitFormRequest("m", json.RawMessage(`{"type":"object"}`))
	sample := &mcp.InputRequest{Method: mcp.MethodSamplingCreateMessage}
	roots := &mcp.InputRequest{Method: mcp.MethodRootsList}
	for _, tc := range []struct {
		req  *mcp.InputRequest
		resp string
		want bool
	}{
		{elicit, `{"action":"accept","content":{"a":1}}`, true},
		{elicit, `{"action":"decline"}`, true},
		{elicit, `{"action":"cancel"}`, true},
		{elicit, `{"action":"maybe"}`, false},
		{elicit, `{"roots":[]}`, false},
		{elicit, `[1]`, false},
		{sample, `{"role":"assistant","content":{"type":"text","text":"x"},"model":"m"}`, true},
		{sample, `{"role":"assistant","content":{"type":"text","text":"x"}}`, false},
		{sample, `{"action":"accept"}`, false},
		{roots, `{"roots":[]}`, true},
		{roots, `{"roots":null}`, false},
		{roots, `{}`, false},
		{&mcp.InputRequest{Method: "other/method"}, `{}`, false},
		{nil, `{}`, false},
	} {
		if got := task.AnswerMatches(tc.req, json.RawMessage(tc.resp)); got != tc.want {
			t.Errorf("AnswerMatches(%v, %s) = %v, want %v", tc.req, tc.resp, got, tc.want)
		}
	}
}

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^[0-9a-f]{12}-[0-9a-f]{32}$`)
	seen := map[string]bool{}
	at := time.UnixMilli(1_790_000_000_000)
	prev := ""
	for i := range 100 {
		id, err := NewID(at.Add(time.Duration(i) * time.Millisecond))
		if err != nil || !re.MatchString(id) || seen[id] || task.ValidID(id) != nil {
			t.Fatalf("NewID() = %q, %v", id, err)
		}
		if id[:12] <= prev {
			t.Fatalf("NewID() = %q after %q: IDs of later tasks must sort later", id, prev)
		}
		seen[id], prev = true, id[:12]
	}
}

func TestEncodeResponses(t *testing.T) {
	in := mcp.InputResponses{"b": json.RawMessage("{ \"x\": 1.50 }"), "a": json.RawMessage(`{"s":"<\u00e9>"}`)}
	b, err := EncodeResponses(in)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":{"s":"<\u00e9>"},"b":{ "x": 1.50 }}`; string(b) != want {
		t.Fatalf("EncodeResponses = %s, want %s", b, want)
	}
	out, err := DecodeResponses(b)
	if err != nil || string(out["a"]) != string(in["a"]) || string(out["b"]) != string(in["b"]) {
		t.Fatalf("round trip: %v %v", out, err)
	}
	if b, err := EncodeResponses(nil); b != nil || err != nil {
		t.Fatalf("EncodeResponses(nil) = %s, %v", b, err)
	}
	if _, err := EncodeResponses(mcp.InputResponses{"x": json.RawMessage(`{`)}); err == nil {
		t.Fatal("invalid JSON accepted")
	}
}
