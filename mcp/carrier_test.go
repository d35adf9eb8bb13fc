package mcp

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMetaCarriers: every result type takes _meta through MetaCarrier and
// every request params type through RequestMetaCarrier, and what SetMeta
// stores is what the encoding carries.
func TestMetaCarriers(t *testing.T) {
	results := []MetaCarrier{
		&CallToolResult{}, &DiscoverResult{}, &ListToolsResult{}, &ListResourcesResult{},
		&ListResourceTemplatesResult{}, &ListPromptsResult{}, &ReadResourceResult{}, &GetPromptResult{},
		&CompleteResult{}, &CreateTaskResult{}, &GetTaskResult{}, &EmptyResult{}, &ListenResult{},
		&InputRequiredResult{},
	}
	for _, r := range results {
		r.SetMeta(Meta{"k": "v"})
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatalf("%T: %v", r, err)
		}
		var got struct {
			Meta Meta `json:"_meta"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%T: %v", r, err)
		}
		if diff := cmp.Diff(Meta{"k": "v"}, got.Meta); diff != "" {
			t.Errorf("%T: _meta (-want +got):\n%s", r, diff)
		}
		if diff := cmp.Diff(Meta{"k": "v"}, r.GetMeta()); diff != "" {
			t.Errorf("%T: GetMeta (-want +got):\n%s", r, diff)
		}
	}
	params := []RequestMetaCarrier{
		&DiscoverParams{}, &ListToolsParams{}, &CallToolParams{}, &ListPromptsParams{}, &GetPromptParams{},
		&ListResourcesParams{}, &ListResourceTemplatesParams{}, &ReadResourceParams{}, &CompleteParams{},
		&TaskParams{}, &UpdateTaskParams{}, &ListenParams{},
	}
	for _, p := range params {
		p.SetMeta(&RequestMeta{ProtocolVersion: LatestProtocolVersion})
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatalf("%T: %v", p, err)
		}
		var got struct {
			Meta RequestMeta `json:"_meta"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%T: %v", p, err)
		}
		if got.Meta.ProtocolVersion != LatestProtocolVersion || p.GetMeta().ProtocolVersion != LatestProtocolVersion {
			t.Errorf("%T: _meta %s, GetMeta %+v", p, b, p.GetMeta())
		}
		p.SetMeta(nil)
		if b, _ := json.Marshal(p); json.Valid(b) && containsKey(b, "_meta") {
			t.Errorf("%T: SetMeta(nil) still encodes _meta: %s", p, b)
		}
	}
}

func containsKey(obj []byte, key string) bool {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(obj, &m)
	_, ok := m[key]
	return ok
}
