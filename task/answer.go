package task

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/taskwire/taskwire/mcp"
)

// AnswerMatches reports whether a response answers req; see CheckAnswer.
// Managers apply it in UpdateTask: a response that does not match its
// request is ignored.
func AnswerMatches(req *mcp.InputRequest, raw json.RawMessage) bool {
	return CheckAnswer(req, raw) == nil
}

// AcceptResponses applies the rule of Manager.UpdateTask to one task: each
// response whose key names an outstanding request and that answers it
// (AnswerMatches) is accepted, exactly once: its key leaves outstanding and
// a copy of its bytes, unchanged, joins accepted. Every other response is
// ignored: unknown, already answered or superseded keys, and answers of the
// wrong shape. outstanding and accepted are changed in place; accepted may
// be nil only when nothing is accepted, so callers pass a non-nil map. It
// returns how many responses it accepted: none means the task does not
// change. Every Manager (store/memory, store/sqlite, store/postgres) accepts
// responses through it.
func AcceptResponses(outstanding mcp.InputRequests, accepted, responses mcp.InputResponses) int {
	n := 0
	for key, raw := range responses {
		req, ok := outstanding[key]
		if !ok || !AnswerMatches(req, raw) {
			continue
		}
		accepted[key] = append(json.RawMessage(nil), raw...)
		delete(outstanding, key)
		n++
	}
	return n
}

// CheckAnswer returns nil when raw is an answer to req, and otherwise an
// error that says why in terms of req alone (it never quotes raw):
//
//   - elicitation/create: an ElicitResult whose action is accept, decline
//     or cancel; content only with accept in form mode, where it must
//     match the requestedSchema: every required property present, each
//     defined property of its type (string, number, integer, boolean or
//     array of strings) and within its enum, length, range, item count and
//     format (date, date-time, email, uri), and any other member a
//     primitive value (as JSON Schema admits properties a form does not
//     define);
//   - sampling/createMessage: a CreateMessageResult with role, content and
//     model;
//   - roots/list: a ListRootsResult with a roots array.
//
// raw must be valid UTF-8 JSON, and objects checked here must not repeat a
// member name. A form whose requestedSchema is not a form schema accepts
// no answer.
func CheckAnswer(req *mcp.InputRequest, raw json.RawMessage) error {
	if req == nil {
		return errors.New("no input request")
	}
	if !utf8.Valid(raw) || !json.Valid(raw) {
		return errors.New("the answer must be valid UTF-8 JSON")
	}
	switch req.Method {
	case mcp.MethodElicitationCreate:
		return checkElicitAnswer(req, raw)
	case mcp.MethodSamplingCreateMessage:
		var r struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Model   string          `json:"model"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Role == "" || len(r.Content) == 0 || r.Model == "" {
			return errors.New("the answer must be a sampling result with role, content and model")
		}
		return nil
	case mcp.MethodRootsList:
		var r struct {
			Roots []json.RawMessage `json:"roots"`
		}
		if json.Unmarshal(raw, &r) != nil || r.Roots == nil {
			return errors.New("the answer must be a roots result with a roots array")
		}
		return nil
	}
	return errors.New("the input request's method takes no answer")
}

// checkElicitAnswer checks an ElicitResult against its request.
func checkElicitAnswer(req *mcp.InputRequest, raw json.RawMessage) error {
	members, err := mcp.Members(raw)
	if err != nil {
		return errors.New("the answer must be an elicitation result object without repeated members")
	}
	action, err := mcp.DecodeString(members["action"])
	switch {
	case err != nil:
		return errors.New("the answer needs an action")
	case action != mcp.ElicitActionAccept && action != mcp.ElicitActionDecline && action != mcp.ElicitActionCancel:
		return errors.New("the answer's action must be accept, decline or cancel")
	}
	mode, err := req.ElicitMode()
	if err != nil {
		return errors.New("the input request is malformed")
	}
	content, has := members["content"]
	if has && string(content) == "null" {
		has = false
	}
	if has && (mode != mcp.ElicitModeForm || action != mcp.ElicitActionAccept) {
		return errors.New("the answer may carry content only when it accepts a form")
	}
	if mode != mcp.ElicitModeForm || action != mcp.ElicitActionAccept {
		return nil
	}
	var p mcp.ElicitParams
	if err := json.Unmarshal(req.Params, &p); err != nil {
		return errors.New("the input request is malformed")
	}
	fs, err := parseFormSchema(p.RequestedSchema)
	if err != nil {
		return fmt.Errorf("the input request's form is invalid: %v", err)
	}
	if err := fs.checkContent(content); err != nil {
		return fmt.Errorf("the answer does not match the form: %v", err)
	}
	return nil
}
