package server_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

// TestTaskUpdateChecksAnswers: over HTTP, an answer that does not match
// its outstanding form, or that exceeds MaxAnswerBytes, fails tasks/update
// with -32602 and leaves the task as it was; a matching one is stored.
func TestTaskUpdateChecksAnswers(t *testing.T) {
	hs, m := tlServer(t, server.TaskLimits{MaxAnswerBytes: 1024})
	h, err := tlCall(t, hs, "alice", "create", `{"n":1}`).TaskHandle()
	if err != nil {
		t.Fatal(err)
	}
	id := h.TaskID
	form := mcp.NewElicitFormRequest("Proceed?", json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"},"size":{"type":"string","enum":["s","m"]}},"required":["ok"]}`))
	if _, err := m.RequestInput(id, mcp.InputRequests{"confirm": form}, ""); err != nil {
		t.Fatal(err)
	}
	update := func(responses string) string {
		t.Helper()
		res := tlPost(t, hs, "alice", mcp.MethodTasksUpdate, id, `{"taskId":"`+id+`","inputResponses":`+responses+`,"_meta":`+tlMeta+`}`)
		if res.Error != nil {
			return res.Error.Message
		}
		return "ack"
	}
	big := `{"action":"accept","content":{"ok":true,"note":"` + strings.Repeat("x", 1024) + `"}}`
	for _, tc := range []struct{ responses, want string }{
		{`{"confirm":{"action":"accept","content":{"ok":"yes"}}}`, `Invalid params: inputResponses["confirm"]: the answer does not match the form: property "ok" must be a boolean`},
		{`{"confirm":{"action":"accept","content":{"size":"m"}}}`, `Invalid params: inputResponses["confirm"]: the answer does not match the form: required property "ok" is missing`},
		{`{"confirm":{"action":"accept","content":{"ok":true,"size":"xl"}}}`, `Invalid params: inputResponses["confirm"]: the answer does not match the form: property "size" is not one of the choices`},
		{`{"confirm":{"action":"accept","content":{"ok":true,"ok":false}}}`, `Invalid params: inputResponses["confirm"]: the answer does not match the form: content must be an object without repeated members`},
		{`{"confirm":{"action":"yes"}}`, `Invalid params: inputResponses["confirm"]: the answer's action must be accept, decline or cancel`},
		{`{"confirm":` + big + `}`, `Invalid params: an input response exceeds 1024 bytes`},
		{`{"unknown-key":` + big + `}`, `Invalid params: an input response exceeds 1024 bytes`},
	} {
		if got := update(tc.responses); got != tc.want {
			t.Errorf("tasks/update %.80s: %s, want %s", tc.responses, got, tc.want)
		}
		if tk, _ := m.Find(id); tk.Status() != task.InputRequired {
			t.Fatalf("after a refused update the task is %s", tk.Status())
		}
	}
	// An answer to an unknown key is ignored, as before.
	if got := update(`{"unknown-key":{"anything":1}}`); got != "ack" {
		t.Errorf("unknown key: %s", got)
	}
	good := `{"action":"accept","content":{"ok":true,"size":"s"}}`
	if got := update(`{"confirm":` + good + `}`); got != "ack" {
		t.Fatalf("matching answer: %s", got)
	}
	got, err := m.TakeInputResponses(id)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(mcp.InputResponses{"confirm": json.RawMessage(good)}, got); diff != "" {
		t.Errorf("stored answers (-want +got):\n%s", diff)
	}
	// Another tenant sees the neutral not-found answer, not the check.
	res := tlPost(t, hs, "bob", mcp.MethodTasksUpdate, id, `{"taskId":"`+id+`","inputResponses":{"confirm":{"action":"yes"}},"_meta":`+tlMeta+`}`)
	if res.Error == nil || res.Error.Message != "Invalid params" {
		t.Errorf("another tenant: %s", res.Body)
	}
}
