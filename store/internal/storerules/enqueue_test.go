package storerules

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// checkResolved reports a resolution that did not fail with wantErr, or,
// when wantErr is empty, did not give want.
func checkResolved[T any](t *testing.T, name string, got T, err error, want T, wantErr string) {
	t.Helper()
	switch {
	case wantErr != "":
		if err == nil || err.Error() != wantErr {
			t.Errorf("%s: err %v, want %q", name, err, wantErr)
		}
	case err != nil:
		t.Errorf("%s: %v", name, err)
	default:
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", name, diff)
		}
	}
}

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
		checkResolved(t, tc.name, d, err, tc.want, tc.err)
	}
}

func TestSameArguments(t *testing.T) {
	o := func(args string) task.Origin {
		x, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "v", Endpoint: "e", Operation: "tools/call", Tool: "t",
			Arguments: json.RawMessage(args)})
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{`{"a":1}`, `{"a":1}`, true},
		{`{"a":1}`, "{ \"a\" :\n 1 }", true},
		{`{"a":1}`, `{"a":1.0}`, false},
		{`{"a":1,"b":2}`, `{"b":2,"a":1}`, true},
		{`{"a":"\u00e9"}`, `{"a":"é"}`, true},
		{`{"a":{"x":[1,2],"y":null}}`, `{ "a" : { "y" : null , "x" : [ 1 , 2 ] } }`, true},
		{`{"a":[1,2]}`, `{"a":[2,1]}`, false},
		{`{"a":1}`, `{"a":2}`, false},
	} {
		if got := SameArguments(o(tc.a), o(tc.b)); got != tc.want {
			t.Errorf("SameArguments(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestResolveEnqueue(t *testing.T) {
	origin, err := task.NewOrigin(task.OriginParams{ProtocolVersion: "v", Endpoint: "e", Operation: "tools/call", Tool: "t",
		Arguments: json.RawMessage(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	cc := &task.CreationContext{Origin: origin, Request: task.RequestContext{Endpoint: "e", Tenant: "acme"}}
	d := EnqueueDefaults{TTL: time.Hour, PollInterval: time.Second, MaxAttempts: 5}
	for _, tc := range []struct {
		name string
		opts backend.EnqueueOptions
		want Enqueue
		err  string
	}{
		{"defaults", backend.EnqueueOptions{}, Enqueue{TTL: time.Hour, PollInterval: time.Second, MaxAttempts: 5, Queue: "default", Priority: 1}, ""},
		{"set", backend.EnqueueOptions{TTL: time.Minute, PollInterval: 2 * time.Second, MaxAttempts: 1},
			Enqueue{TTL: time.Minute, PollInterval: 2 * time.Second, MaxAttempts: 1, Queue: "default", Priority: 1}, ""},
		{"unlimited TTL", backend.EnqueueOptions{TTL: -1}, Enqueue{PollInterval: time.Second, MaxAttempts: 5, Queue: "default", Priority: 1}, ""},
		{"most attempts", backend.EnqueueOptions{MaxAttempts: backend.MaxMaxAttempts},
			Enqueue{TTL: time.Hour, PollInterval: time.Second, MaxAttempts: backend.MaxMaxAttempts, Queue: "default", Priority: 1}, ""},
		{"too many attempts", backend.EnqueueOptions{MaxAttempts: backend.MaxMaxAttempts + 1}, Enqueue{},
			"MaxAttempts must be between 0 and 2147483647"},
		{"negative attempts", backend.EnqueueOptions{MaxAttempts: -1}, Enqueue{}, "MaxAttempts must be between 0 and 2147483647"},
		{"TTL not whole ms", backend.EnqueueOptions{TTL: time.Second + 1}, Enqueue{}, "TTL and PollInterval must be whole milliseconds"},
		{"queue and priority", backend.EnqueueOptions{Queue: "mail", Priority: 4},
			Enqueue{TTL: time.Hour, PollInterval: time.Second, MaxAttempts: 5, Queue: "mail", Priority: 4}, ""},
		{"bad queue", backend.EnqueueOptions{Queue: "a b"}, Enqueue{},
			"Queue: a queue name must hold only ASCII letters, digits, '_', '-' and '.', starting with a letter or a digit"},
		{"bad priority", backend.EnqueueOptions{Priority: 5}, Enqueue{},
			"Priority: a priority must be between 1 (highest) and 4 (lowest), got 5"},
		{"NUL in the key", backend.EnqueueOptions{IdempotencyKey: "k\x00"}, Enqueue{},
			"idempotency key: backend: text must be valid UTF-8 without NUL bytes"},
	} {
		got, err := ResolveEnqueue(cc, tc.opts, d)
		checkResolved(t, tc.name, got, err, tc.want, tc.err)
	}
	if _, err := ResolveBatch([]backend.BatchItem{{Creation: cc}, {Creation: cc, Options: backend.EnqueueOptions{MaxAttempts: -1}}}, d); err == nil ||
		err.Error() != "batch item 1: MaxAttempts must be between 0 and 2147483647" {
		t.Errorf("ResolveBatch with an invalid item: %v", err)
	}
}

func TestCheckRequests(t *testing.T) {
	req := &mcp.InputRequest{Method: mcp.MethodRootsList}
	for _, tc := range []struct {
		name string
		reqs mcp.InputRequests
		ok   bool
	}{
		{"one", mcp.InputRequests{"a": req}, true},
		{"none", nil, false},
		{"empty key", mcp.InputRequests{"": req}, false},
		{"no request", mcp.InputRequests{"a": nil}, false},
		{"no method", mcp.InputRequests{"a": {}}, false},
		{"NUL in the key", mcp.InputRequests{"a\x00": req}, false},
	} {
		if err := CheckRequests(tc.reqs); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}
