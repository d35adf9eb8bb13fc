package task

import (
	"encoding/json"

	"github.com/taskwire/taskwire/mcp"
)

// AnswerMatches reports whether a response has the shape of the answer to
// req's method (the MCP union variant): an ElicitResult with a known action
// for elicitation, a CreateMessageResult with role, content and model for
// sampling, a ListRootsResult with a roots array for roots. Managers apply
// it in UpdateTask: a response of the wrong variant for its key is ignored.
func AnswerMatches(req *mcp.InputRequest, raw json.RawMessage) bool {
	if req == nil {
		return false
	}
	switch req.Method {
	case mcp.MethodElicitationCreate:
		var r mcp.ElicitResult
		if json.Unmarshal(raw, &r) != nil {
			return false
		}
		switch r.Action {
		case mcp.ElicitActionAccept, mcp.ElicitActionDecline, mcp.ElicitActionCancel:
			return true
		}
		return false
	case mcp.MethodSamplingCreateMessage:
		var r struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Model   string          `json:"model"`
		}
		return json.Unmarshal(raw, &r) == nil && r.Role != "" && len(r.Content) > 0 && r.Model != ""
	case mcp.MethodRootsList:
		var r struct {
			Roots []json.RawMessage `json:"roots"`
		}
		return json.Unmarshal(raw, &r) == nil && r.Roots != nil
	}
	return false
}
