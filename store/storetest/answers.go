package storetest

import (
	"encoding/json"
	"testing"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// testFormAnswers: UpdateTask ignores an answer to a form that does not
// match its requestedSchema (task.AnswerMatches), as it ignores an answer
// of the wrong variant, and accepts one that matches.
func testFormAnswers(t *testing.T, open opener) {
	b, c := open(t)
	tk := enqueue(t, b, backend.EnqueueOptions{})
	j := claimOne(t, b, c, tk.ID())
	form := mcp.NewElicitFormRequest("Proceed?", json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
	if err := b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{"k": form}, ""); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"action":"accept","content":{"ok":"yes"}}`,
		`{"action":"accept","content":{}}`,
		`{"action":"accept","content":{"ok":true,"ok":false}}`,
		`{"action":"decline","content":{"ok":true}}`,
	} {
		update(t, b, tk.ID(), mcp.InputResponses{"k": json.RawMessage(bad)})
		if got := mustFind(t, b, tk.ID()); got.Status() != task.InputRequired {
			t.Fatalf("after the mismatched answer %s: status %s, want input_required", bad, got.Status())
		}
	}
	update(t, b, tk.ID(), mcp.InputResponses{"k": json.RawMessage(`{"action":"accept","content":{"ok":true}}`)})
	if got := mustFind(t, b, tk.ID()); got.Status() != task.Working {
		t.Fatalf("after the matching answer: status %s, want working", got.Status())
	}
}
