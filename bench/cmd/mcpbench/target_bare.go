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
		TaskID    json.RawMessage `json:"taskId"`
		Meta      map[string]any  `json:"_meta"`
	} `json:"params"`
}

const (
	// bareResultPrefix and bareResultSuffix surround the echoed request id
	// in the bare handler's response.
	bareResultPrefix = `{"jsonrpc":"2.0","id":`
	bareResultSuffix = `,"result":{"content":[{"type":"text","text":"` + expectedText + `"}],"resultType":"complete"}}`

	// bareTaskPrefix, bareTaskMiddle and bareTaskSuffix surround the echoed
	// request id and task ID in the bare handler's tasks/get response: a
	// fixed completed task of the same shape and size as the taskwire
	// fixture's answer for its slow_compute {"seconds":0} task.
	bareTaskPrefix = `{"jsonrpc":"2.0","id":`
	bareTaskMiddle = `,"result":{"resultType":"complete","taskId":`
	bareTaskSuffix = `,"status":"completed","statusMessage":"Done.",` +
		`"createdAt":"2026-11-30T12:00:00.000Z","lastUpdatedAt":"2026-11-30T12:00:00.000Z",` +
		`"ttlMs":3600000,"pollIntervalMs":1000,` +
		`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcpbench-bare-server","version":"1.0.0"}},` +
		`"result":{"resultType":"complete","content":[{"type":"text","text":"Computed \"\" in 0s."}]}}}`
)

// noStore is the Cache-Control value of tasks/get responses, as taskwire
// sends it.
var noStore = []string{"no-store"}

// newBareHandler returns the lower-bound baseline: a plain net/http handler
// that does the minimum any server must do for this request, namely read and
// decode the JSON body with encoding/json and write the result, with no MCP
// machinery at all.
func newBareHandler() (http.Handler, error) {
	return mountAt(endpointPath, http.HandlerFunc(serveBare)), nil
}

// serveBare answers one tools/call of test_simple_text, or one tasks/get
// with a fixed completed task.
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
	if req.JSONRPC == "2.0" && len(req.ID) > 0 && req.Method == "tasks/get" {
		serveBareTaskGet(w, &req)
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

// serveBareTaskGet answers tasks/get with a fixed completed task, echoing
// the request id and task ID.
func serveBareTaskGet(w http.ResponseWriter, req *bareRequest) {
	id := req.Params.TaskID
	if len(id) < 3 || id[0] != '"' {
		http.Error(w, "bad request: tasks/get without a string taskId", http.StatusBadRequest)
		return
	}
	out := make([]byte, 0, len(bareTaskPrefix)+len(req.ID)+len(bareTaskMiddle)+len(id)+len(bareTaskSuffix))
	out = append(out, bareTaskPrefix...)
	out = append(out, req.ID...)
	out = append(out, bareTaskMiddle...)
	out = append(out, id...)
	out = append(out, bareTaskSuffix...)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h["Cache-Control"] = noStore
	_, _ = w.Write(out)
}
