package schemacheck

import (
	"strings"
	"sync"
	"testing"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		def     string
		doc     string
		wantErr bool
	}{
		{"text content", "TextContent", `{"type":"text","text":"hi"}`, false},
		{"text content without text", "TextContent", `{"type":"text"}`, true},
		{"discover result", "DiscoverResult", `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"ttlMs":0,"cacheScope":"private"}`, false},
		{"discover result without ttlMs", "DiscoverResult", `{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{},"cacheScope":"private"}`, true},
		{"bad cache scope", "ListToolsResult", `{"resultType":"complete","tools":[],"ttlMs":0,"cacheScope":"shared"}`, true},
		{"call tool request without _meta", "CallToolRequest", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.def, []byte(tt.doc))
			if (err != nil) != tt.wantErr {
				t.Errorf("Validate(%s) error = %v, want error %t", tt.def, err, tt.wantErr)
			}
		})
	}
}

func TestValidateTasks(t *testing.T) {
	tests := []struct {
		name    string
		def     string
		doc     string
		wantErr bool
	}{
		{"create task result", "CreateTaskResult", `{"resultType":"task","taskId":"t","status":"working","createdAt":"2026-08-01T10:00:00Z","lastUpdatedAt":"2026-08-01T10:00:00Z","ttlMs":null}`, false},
		{"create task result with complete", "CreateTaskResult", `{"resultType":"complete","taskId":"t","status":"working","createdAt":"2026-08-01T10:00:00Z","lastUpdatedAt":"2026-08-01T10:00:00Z","ttlMs":null}`, true},
		{"create task result without ttlMs", "CreateTaskResult", `{"resultType":"task","taskId":"t","status":"working","createdAt":"2026-08-01T10:00:00Z","lastUpdatedAt":"2026-08-01T10:00:00Z"}`, true},
		{"failed task without error", "GetTaskResult", `{"resultType":"complete","taskId":"t","status":"failed","createdAt":"a","lastUpdatedAt":"b","ttlMs":5}`, true},
		{"cancelled task", "GetTaskResult", `{"resultType":"complete","taskId":"t","status":"cancelled","createdAt":"a","lastUpdatedAt":"b","ttlMs":5}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateTasks(tt.def, []byte(tt.doc))
			if (err != nil) != tt.wantErr {
				t.Errorf("ValidateTasks(%s) error = %v, want error %t", tt.def, err, tt.wantErr)
			}
		})
	}
}

func TestUnknownDefinition(t *testing.T) {
	if err := Validate("NoSuchType", []byte(`{}`)); err == nil {
		t.Error("Validate with an unknown definition succeeded")
	}
	if err := ValidateTasks("NoSuchType", []byte(`{}`)); err == nil {
		t.Error("ValidateTasks with an unknown definition succeeded")
	}
}

func TestNotJSON(t *testing.T) {
	err := Validate("TextContent", []byte(`{"type":`))
	if err == nil || !strings.Contains(err.Error(), "not JSON") {
		t.Errorf("Validate(invalid JSON) error = %v, want a not-JSON error", err)
	}
}

func TestConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := Validate("TextContent", []byte(`{"type":"text","text":"x"}`)); err != nil {
				t.Error(err)
			}
			if err := ValidateTasks("TaskStatus", []byte(`"working"`)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
}
