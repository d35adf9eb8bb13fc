package server

import (
	"bytes"
	"net/http"

	"github.com/taskwire/taskwire/mcp"
)

// envelope is one JSON-RPC message as the transports that accept more than
// requests read it (a 2025-era POST body, a stdio line of either era): a
// request, a notification or a response to a server-to-client request.
type envelope struct {
	req      *mcp.Request // set for requests and notifications
	response bool         // a JSON-RPC response
	id       mcp.ID       // the response's id (or the request's, on failure)
}

// decodeEnvelope reads one JSON-RPC message (data is valid JSON
// within the depth limit). Batches are refused.
func decodeEnvelope(data []byte) (envelope, *protocolError) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		return envelope{}, errBatch
	}
	var hasMethod, hasResult, hasError bool
	var rawID, version []byte
	if len(data) == 0 || data[0] != '{' {
		return envelope{}, invalidRequest("Invalid Request: the body must be one JSON-RPC message object")
	}
	err := mcp.EachMember(data, func(name, value []byte) error {
		switch string(name) {
		case "method":
			hasMethod = true
		case "result":
			hasResult = true
		case "error":
			hasError = true
		case "id":
			rawID = value
		case "jsonrpc":
			version = value
		}
		return nil
	})
	if err != nil {
		return envelope{}, invalidRequest("Invalid Request: malformed envelope")
	}
	if hasMethod {
		req, err := mcp.DecodeValidRequest(data)
		if err != nil {
			var env envelope
			if req != nil {
				env.id = req.ID
			}
			return env, newProtocolError(http.StatusBadRequest, err.(*mcp.Error))
		}
		return envelope{req: req}, nil
	}
	if string(version) != `"2.0"` {
		return envelope{}, invalidRequest(`Invalid Request: "jsonrpc" must be "2.0"`)
	}
	if hasResult == hasError || rawID == nil {
		return envelope{}, invalidRequest("Invalid Request: a response needs an id and exactly one of result and error")
	}
	var id mcp.ID
	if err := id.UnmarshalJSON(rawID); err != nil || id.IsZero() {
		return envelope{}, invalidRequest("Invalid Request: id must be a string or an integer")
	}
	return envelope{response: true, id: id}, nil
}
