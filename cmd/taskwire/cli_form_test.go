package main

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/mcp"
)

const deployForm = `{"type":"object","properties":{
	"env":{"type":"string","title":"Environment","enum":["staging","production"],"default":"staging"},
	"replicas":{"type":"integer","description":"how many","default":2},
	"ratio":{"type":"number"},
	"notify":{"type":"boolean","default":true},
	"note":{"type":"string"},
	"tags":{"type":"array","items":{"type":"string"}}
},"required":["ratio"]}`

// TestFormPrompter answers forms from scripted lines: defaults taken on an
// empty line, typed values converted, wrong values asked again, optional
// fields left out, decline and cancel.
func TestFormPrompter(t *testing.T) {
	tests := []struct {
		name, input string
		want        *mcp.ElicitResult
		wantOut     []string
		wantErr     string
	}{
		{"defaults", "\n\n\n0.5\n\n\n\n", &mcp.ElicitResult{Action: "accept", Content: map[string]any{
			"env": "staging", "replicas": 2.0, "ratio": 0.5, "notify": true}},
			[]string{"Environment (string) one of staging, production [staging]: ", "replicas (integer) how many [2]: ",
				"ratio (number, required): ", "notify (boolean) y/n [true]: ", "note (string): ", "tags (array): "}, ""},
		{"typed, with retries", "yes\nprod\nproduction\n2.5\n3\n\nx\n1e-3\nno\nhello\n[\"a\"]\n", &mcp.ElicitResult{Action: "accept", Content: map[string]any{
			"env": "production", "replicas": int64(3), "ratio": 0.001, "notify": false, "note": "hello", "tags": []any{"a"}}},
			[]string{"  type one of staging, production\n", "  \"2.5\" is not an integer\n", "  an answer is required\n", "  \"x\" is not a number\n"}, ""},
		{"decline", "decline\n", &mcp.ElicitResult{Action: "decline"}, nil, ""},
		{"cancel", "c\n", &mcp.ElicitResult{Action: "cancel"}, nil, ""},
		{"too many wrong answers", "maybe\nmaybe\nmaybe\nmaybe\nmaybe\n", nil, []string{"  type accept, decline or cancel\n"}, "no valid answer"},
		{"end of input", "accept\n", nil, nil, "reading the answer: EOF"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			in := newLineReader(strings.NewReader(tc.input))
			defer in.close()
			fp := &formPrompter{in: in, out: &out}
			got, err := fp.elicit(context.Background(), &mcp.ElicitParams{Mode: "form", Message: "Deploy?\nv2", RequestedSchema: json.RawMessage(deployForm)})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatalf("elicit: %v\n%s", err, out.String())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if !strings.Contains(out.String(), "The server asks:\n  Deploy?\n  v2\n") {
				t.Errorf("the message is not shown:\n%s", out.String())
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("the prompts lack %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestFormPrompterStopsWithContext(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close() // ends the reader's goroutine
	in := newLineReader(r)
	defer in.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	fp := &formPrompter{in: in, out: &strings.Builder{}}
	if _, err := fp.elicit(ctx, &mcp.ElicitParams{Message: "m"}); err != context.Canceled {
		t.Errorf("elicit after the context ended: %v", err)
	}
	if _, err := fp.elicit(context.Background(), &mcp.ElicitParams{Mode: mcp.ElicitModeURL, URL: "http://127.0.0.1/"}); err == nil {
		t.Error("a URL elicitation was answered")
	}
}

func TestExampleAnswer(t *testing.T) {
	req := mcp.NewElicitFormRequest("m", json.RawMessage(deployForm))
	var got map[string]any
	if err := json.Unmarshal([]byte(exampleAnswer(req)), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"action": "accept", "content": map[string]any{
		"env": "staging", "replicas": 2.0, "ratio": 0.0, "notify": true, "note": "...", "tags": nil}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("example answer (-want +got):\n%s", diff)
	}
}

// TestWriteRequestsListsForms pins the listing of a form that the command
// cannot ask (stdin not a terminal): every field with its name, type and
// whether it is required, then its title and description, each when the
// form gives one, a title without a description included.
func TestWriteRequestsListsForms(t *testing.T) {
	req := mcp.NewElicitFormRequest("Deploy?", json.RawMessage(`{"type":"object","properties":{
		"env":{"type":"string","title":"Environment"},
		"replicas":{"type":"integer","description":"how many"},
		"ratio":{"type":"number","title":"Ratio","description":"of traffic, 0 to 1"},
		"note":{"type":"string"}
	},"required":["ratio"]}`))
	var b strings.Builder
	writeRequests(&b, &client.InputRequiredError{TaskID: "t1", Keys: []string{"deploy", "other"},
		Requests: mcp.InputRequests{"deploy": req, "other": {Method: "sampling/createMessage"}}})
	want := `  deploy: elicitation/create "Deploy?"
    env (string) Environment
    replicas (integer) how many
    ratio (number, required) Ratio: of traffic, 0 to 1
    note (string)
  other: sampling/createMessage (answer with the JSON result of sampling/createMessage)
An elicitation answer is {"action":"accept","content":{...}}, {"action":"decline"} or {"action":"cancel"}.
`
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("listing (-want +got):\n%s", diff)
	}
}
