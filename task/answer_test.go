package task_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// answerForm is a form with every primitive kind of property.
const answerForm = `{"type":"object","properties":{
	"name":{"type":"string","minLength":2,"maxLength":5},
	"mail":{"type":"string","format":"email"},
	"site":{"type":"string","format":"uri"},
	"day":{"type":"string","format":"date"},
	"at":{"type":"string","format":"date-time"},
	"size":{"type":"string","enum":["s","m"]},
	"tone":{"type":"string","oneOf":[{"const":"warm","title":"Warm"},{"const":"cold","title":"Cold"}]},
	"n":{"type":"integer","minimum":1,"maximum":10},
	"price":{"type":"number","minimum":0},
	"ok":{"type":"boolean"},
	"tags":{"type":"array","items":{"type":"string","enum":["a","b"]},"maxItems":2},
	"picks":{"type":"array","items":{"anyOf":[{"const":"x","title":"X"}]},"minItems":1}
},"required":["name","ok"]}`

func TestCheckAnswer(t *testing.T) {
	form := mcp.NewElicitFormRequest("Fill in", json.RawMessage(answerForm))
	url := mcp.NewElicitURLRequest("Sign in", "https://example.com/consent")
	sampling := &mcp.InputRequest{Method: mcp.MethodSamplingCreateMessage, Params: json.RawMessage(`{"messages":[],"maxTokens":1}`)}
	roots := &mcp.InputRequest{Method: mcp.MethodRootsList}
	accept := func(content string) string { return `{"action":"accept","content":` + content + `}` }
	for _, tc := range []struct {
		name string
		req  *mcp.InputRequest
		raw  string
		want string // "" for a match, else a fragment of the error
	}{
		{"minimal", form, accept(`{"name":"ann","ok":true}`), ""},
		{"every property", form, accept(`{"name":"ann","ok":false,"mail":"ann@example.com","site":"https://example.com/a",
			"day":"2026-08-01","at":"2026-08-01T10:00:00Z","size":"m","tone":"cold","n":10,"price":3.50,"tags":["a","b"],"picks":["x"]}`), ""},
		{"integer spelt as a decimal", form, accept(`{"name":"ann","ok":true,"n":2.0}`), ""},
		{"an undefined primitive", form, accept(`{"name":"ann","ok":true,"extra":"x"}`), ""},
		{"decline", form, `{"action":"decline"}`, ""},
		{"cancel with null content", form, `{"action":"cancel","content":null}`, ""},
		{"missing required", form, accept(`{"name":"ann"}`), `required property "ok" is missing`},
		{"no content", form, `{"action":"accept"}`, `required property "name" is missing`},
		{"wrong type", form, accept(`{"name":"ann","ok":"yes"}`), `property "ok" must be a boolean`},
		{"too short", form, accept(`{"name":"a","ok":true}`), `property "name" is too short or too long`},
		{"too long in runes", form, accept(`{"name":"ëëëëëë","ok":true}`), `property "name" is too short or too long`},
		{"not in the enum", form, accept(`{"name":"ann","ok":true,"size":"xl"}`), `property "size" is not one of the choices`},
		{"not a oneOf const", form, accept(`{"name":"ann","ok":true,"tone":"Warm"}`), `property "tone" is not one of the choices`},
		{"not an integer", form, accept(`{"name":"ann","ok":true,"n":1.5}`), `property "n" must be an integer`},
		{"above the maximum", form, accept(`{"name":"ann","ok":true,"n":11}`), `property "n" is out of range`},
		{"below the minimum", form, accept(`{"name":"ann","ok":true,"price":-1}`), `property "price" is out of range`},
		{"number as a string", form, accept(`{"name":"ann","ok":true,"price":"3"}`), `property "price" must be a number`},
		{"bad email", form, accept(`{"name":"ann","ok":true,"mail":"Ann <ann@example.com>"}`), `property "mail" is not a valid email`},
		{"relative uri", form, accept(`{"name":"ann","ok":true,"site":"/a"}`), `property "site" is not a valid uri`},
		{"bad date", form, accept(`{"name":"ann","ok":true,"day":"2026-13-01"}`), `property "day" is not a valid date`},
		{"bad date-time", form, accept(`{"name":"ann","ok":true,"at":"2026-08-01 10:00"}`), `property "at" is not a valid date-time`},
		{"too many items", form, accept(`{"name":"ann","ok":true,"tags":["a","b","a"]}`), `property "tags" has too few or too many items`},
		{"too few items", form, accept(`{"name":"ann","ok":true,"picks":[]}`), `property "picks" has too few or too many items`},
		{"item not a choice", form, accept(`{"name":"ann","ok":true,"tags":["c"]}`), `property "tags" has an item that is not one of the choices`},
		{"items not strings", form, accept(`{"name":"ann","ok":true,"tags":[1]}`), `property "tags" must be an array of strings`},
		{"an undefined object", form, accept(`{"name":"ann","ok":true,"extra":{"deep":1}}`), "not a string, number, boolean or array of strings"},
		{"content not an object", form, accept(`["ann"]`), "content must be an object"},
		{"repeated property", form, accept(`{"name":"ann","ok":true,"ok":false}`), "repeated members"},
		{"repeated action", form, `{"action":"decline","action":"accept"}`, "repeated members"},
		{"content with decline", form, `{"action":"decline","content":{"name":"ann","ok":true}}`, "content only when it accepts a form"},
		{"unknown action", form, `{"action":"maybe"}`, "accept, decline or cancel"},
		{"action in another case", form, `{"Action":"accept","content":{"name":"ann","ok":true}}`, "needs an action"},
		{"not JSON", form, `{"action":`, "valid UTF-8 JSON"},
		{"invalid UTF-8", form, "{\"action\":\"decline\",\"x\":\"\xff\"}", "valid UTF-8 JSON"},
		{"url accept", url, `{"action":"accept"}`, ""},
		{"url accept with content", url, accept(`{"a":"b"}`), "content only when it accepts a form"},
		{"sampling", sampling, `{"role":"assistant","content":{"type":"text","text":"hi"},"model":"m"}`, ""},
		{"sampling answered as elicitation", sampling, `{"action":"accept"}`, "sampling result"},
		{"roots", roots, `{"roots":[]}`, ""},
		{"roots without roots", roots, `{}`, "roots array"},
		{"invalid form schema", mcp.NewElicitFormRequest("m", json.RawMessage(`{"type":"object","properties":{"o":{"type":"object"}}}`)), accept(`{}`), "form is invalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := task.CheckAnswer(tc.req, json.RawMessage(tc.raw))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("CheckAnswer: %v, want a match", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("CheckAnswer: %v, want an error with %q", err, tc.want)
			}
			if got := task.AnswerMatches(tc.req, json.RawMessage(tc.raw)); got != (tc.want == "") {
				t.Errorf("AnswerMatches = %v, want %v", got, tc.want == "")
			}
			if err != nil && strings.Contains(tc.raw, "Ann <") && strings.Contains(err.Error(), "Ann") {
				t.Errorf("the error quotes the answer: %v", err)
			}
		})
	}
}

func TestValidatorRefusesInvalidForms(t *testing.T) {
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: "e", Operation: mcp.MethodToolsCall, Tool: "t",
		Arguments: json.RawMessage(`{}`), InputKinds: []string{task.InputElicitationForm},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{
		answerForm,
		`{"type":"object"}`,
		`{"type":"object","properties":{"o":{"type":"object"}}}`,
		`{"type":"object","properties":{"s":{"type":"string","format":"password"}}}`,
		`{"type":"object","properties":{"a":{"type":"array","items":{"type":"string"}}}}`,
		`{"type":"object","properties":{},"required":["missing"]}`,
		`{"type":"object","properties":{"e":{"type":"string","enum":[]}}}`,
	} {
		err := task.ValidateInputRequests(o, mcp.InputRequests{"k": mcp.NewElicitFormRequest("m", json.RawMessage(schema))})
		if want := schema == answerForm || schema == `{"type":"object"}`; (err == nil) != want {
			t.Errorf("ValidateInputRequests(%s): %v, want ok %v", schema, err, want)
		}
	}
}

func TestAcceptResponses(t *testing.T) {
	form := mcp.NewElicitFormRequest("Proceed?", json.RawMessage(
		`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`))
	roots := &mcp.InputRequest{Method: mcp.MethodRootsList}
	yes := json.RawMessage("{ \"action\": \"accept\", \"content\": {\"ok\": true} }")
	for _, tc := range []struct {
		name            string
		responses       mcp.InputResponses
		want            int
		left            []string
		acceptedAfter   []string
		wantBytesOfForm string
	}{
		{"the form answered, byte for byte", mcp.InputResponses{"f": yes}, 1, []string{"r"}, []string{"f", "old"}, string(yes)},
		{"both answered", mcp.InputResponses{"f": yes, "r": json.RawMessage(`{"roots":[]}`)}, 2, nil,
			[]string{"f", "old", "r"}, string(yes)},
		{"unknown key", mcp.InputResponses{"x": yes}, 0, []string{"f", "r"}, []string{"old"}, ""},
		{"answered before", mcp.InputResponses{"old": yes}, 0, []string{"f", "r"}, []string{"old"}, ""},
		{"wrong variant", mcp.InputResponses{"f": json.RawMessage(`{"roots":[]}`)}, 0, []string{"f", "r"}, []string{"old"}, ""},
		{"not the form's shape", mcp.InputResponses{"f": json.RawMessage(`{"action":"accept","content":{"ok":1}}`)}, 0,
			[]string{"f", "r"}, []string{"old"}, ""},
		{"not JSON", mcp.InputResponses{"r": json.RawMessage(`{"roots":[`)}, 0, []string{"f", "r"}, []string{"old"}, ""},
		{"nothing", nil, 0, []string{"f", "r"}, []string{"old"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			outstanding := mcp.InputRequests{"f": form, "r": roots}
			accepted := mcp.InputResponses{"old": json.RawMessage(`{"action":"decline"}`)}
			responses := mcp.InputResponses{} // the caller's buffers, reused below
			for k, v := range tc.responses {
				responses[k] = slices.Clone(v)
			}
			if got := task.AcceptResponses(outstanding, accepted, responses); got != tc.want {
				t.Errorf("accepted %d, want %d", got, tc.want)
			}
			if diff := cmp.Diff(tc.left, slices.Sorted(maps.Keys(outstanding))); diff != "" {
				t.Errorf("outstanding (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.acceptedAfter, slices.Sorted(maps.Keys(accepted))); diff != "" {
				t.Errorf("accepted keys (-want +got):\n%s", diff)
			}
			if tc.wantBytesOfForm != "" && string(accepted["f"]) != tc.wantBytesOfForm {
				t.Errorf("accepted form answer %s, want %s", accepted["f"], tc.wantBytesOfForm)
			}
			for k, v := range responses {
				if len(v) > 0 {
					v[0] = 'X'
				}
				if a, ok := accepted[k]; ok && k != "old" && string(a) != string(tc.responses[k]) {
					t.Errorf("accepted %q shares the caller's bytes", k)
				}
			}
		})
	}
}
