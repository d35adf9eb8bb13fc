package taskdata

import (
	"testing"

	"github.com/taskwire/taskwire/task"
)

func TestFindableListable(t *testing.T) {
	for _, tc := range []struct {
		name               string
		rc                 task.RequestContext
		findable, listable bool
	}{
		{"plain", task.RequestContext{TaskID: "id", Endpoint: "e", Tenant: "t"}, true, true},
		{"no task ID", task.RequestContext{Endpoint: "e", Tenant: "t"}, true, true},
		{"NUL in the task ID", task.RequestContext{TaskID: "i\x00d", Endpoint: "e", Tenant: "t"}, false, true},
		{"invalid UTF-8 endpoint", task.RequestContext{TaskID: "id", Endpoint: "\xff", Tenant: "t"}, false, false},
		{"NUL in the tenant", task.RequestContext{TaskID: "id", Endpoint: "e", Tenant: "\x00"}, false, false},
	} {
		if got := Findable(tc.rc); got != tc.findable {
			t.Errorf("%s: Findable = %v, want %v", tc.name, got, tc.findable)
		}
		if got := Listable(tc.rc); got != tc.listable {
			t.Errorf("%s: Listable = %v, want %v", tc.name, got, tc.listable)
		}
	}
}
