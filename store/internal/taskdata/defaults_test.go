package taskdata

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

func TestEnqueueDefaultsResolve(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   EnqueueDefaults
		want EnqueueDefaults
		err  string
	}{
		{"zero", EnqueueDefaults{}, EnqueueDefaults{TTL: DefaultTTL, PollInterval: DefaultPollInterval,
			MaxAttempts: backend.DefaultMaxAttempts}, ""},
		{"set", EnqueueDefaults{TTL: time.Hour, PollInterval: 2 * time.Second, MaxAttempts: 3},
			EnqueueDefaults{TTL: time.Hour, PollInterval: 2 * time.Second, MaxAttempts: 3}, ""},
		{"unlimited TTL", EnqueueDefaults{TTL: -1},
			EnqueueDefaults{TTL: -1, PollInterval: DefaultPollInterval, MaxAttempts: backend.DefaultMaxAttempts}, ""},
		{"negative attempts", EnqueueDefaults{MaxAttempts: -1}, EnqueueDefaults{}, "DefaultMaxAttempts must be between 0 and 2147483647"},
		{"too many attempts", EnqueueDefaults{MaxAttempts: backend.MaxMaxAttempts + 1}, EnqueueDefaults{},
			"DefaultMaxAttempts must be between 0 and 2147483647"},
		{"TTL not whole ms", EnqueueDefaults{TTL: time.Second + 1}, EnqueueDefaults{}, "DefaultTTL must be whole milliseconds"},
		{"negative poll", EnqueueDefaults{PollInterval: -time.Second}, EnqueueDefaults{},
			"DefaultPollInterval must be positive whole milliseconds"},
		{"poll not whole ms", EnqueueDefaults{PollInterval: time.Microsecond}, EnqueueDefaults{},
			"DefaultPollInterval must be positive whole milliseconds"},
	} {
		d := tc.in
		err := d.Resolve()
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		} else if diff := cmp.Diff(tc.want, d); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

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
