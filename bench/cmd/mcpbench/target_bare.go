package main

import (
	"encoding/json"
	"net/http"
)

// bareRequest is the JSON-RPC request body the bare handler decodes.
type bareRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
		Meta      map[string]any  `json:"_meta"`
	} `json:"params"`
}

const (
	// bareResultPrefix and bareResultSuffix surround the echoed request id
	// in the bare handler's response.
	bareResultPrefix = `{"jsonrpc":"2.0","id":`
	bareResultSuffix = `,"result":{"content":[{"type":"text","text":"` + expectedText + `"}],"resultType":"complete"}}`
)

// newBareHandler returns the lower-bound baseline: a plain net/http handler
// that does the minimum any server must do for this request, namely read and
// decode the JSON body with encoding/json and write the result, with no MCP
// machinery at all.
func newBareHandler() (http.Handler, error) {
	return mountAt(endpointPath, http.HandlerFunc(serveBare)), nil
}

// serveBare answers one tools/call of test_simple_text.
func serveBare(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var req bareRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
		return
	}
	if req.JSONRPC != "2.0" || len(req.ID) == 0 || req.Method != "tools/call" || req.Params.Name != toolName {
		http.Error(w, "bad request: not a tools/call of "+toolName, http.StatusBadRequest)
		return
	}
	out := make([]byte, 0, len(bareResultPrefix)+len(req.ID)+len(bareResultSuffix))
	out = append(out, bareResultPrefix...)
	out = append(out, req.ID...)
	out = append(out, bareResultSuffix...)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(out)
}
