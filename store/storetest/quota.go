package storetest

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// testCountActive: a backend that counts active tasks counts, for one
// tenant and principal on every endpoint, the unexpired tasks that are
// working or input_required, and stops at the limit.
func testCountActive(t *testing.T, open opener) {
	b, c := open(t)
	ac, ok := b.(task.ActiveCounter)
	if !ok {
		t.Skip("backend does not implement task.ActiveCounter")
	}
	owner := task.Owner{Tenant: tenantA, Principal: "user-" + tenantA}
	count := func(o task.Owner, limit int) int {
		t.Helper()
		n, err := ac.CountActive(bg, o, limit)
		if err != nil {
			t.Fatalf("CountActive(%d): %v", limit, err)
		}
		return n
	}
	mustEnqueue := func(cc *task.CreationContext, opts backend.EnqueueOptions) task.Task {
		t.Helper()
		tk, err := b.Enqueue(bg, cc, opts)
		if err != nil {
			t.Fatalf("Enqueue: %v", err)
		}
		return tk
	}
	if n := count(owner, 10); n != 0 {
		t.Fatalf("empty store: CountActive = %d, want 0", n)
	}

	// Owner's tasks: done (terminal), asking (input_required), short
	// (expires), and two working, one of them on another endpoint.
	done := enqueue(t, b, backend.EnqueueOptions{})
	j := claimOne(t, b, c, done.ID())
	if err := b.Jobs().Complete(bg, j.Lease, textResult, ""); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	asking := enqueue(t, b, backend.EnqueueOptions{})
	j = claimOne(t, b, c, asking.ID())
	if err := b.Jobs().RequestInput(bg, j.Lease, mcp.InputRequests{"k": reqElicit}, ""); err != nil {
		t.Fatalf("RequestInput: %v", err)
	}
	enqueue(t, b, backend.EnqueueOptions{TTL: time.Minute})
	enqueue(t, b, backend.EnqueueOptions{})
	mustEnqueue(creation(t, endpointB, tenantA, toolA, `{}`), backend.EnqueueOptions{})

	// Other owners: another tenant, and another principal of the same tenant.
	mustEnqueue(creation(t, endpointA, tenantB, toolA, `{}`), backend.EnqueueOptions{})
	other := creation(t, endpointA, tenantA, toolA, `{}`)
	other.Request.Principal = "someone-else"
	mustEnqueue(other, backend.EnqueueOptions{})

	for _, tc := range []struct {
		owner task.Owner
		limit int
		want  int
	}{
		{owner, 100, 4},
		{owner, 4, 4},
		{owner, 3, 3}, // stops at the limit
		{owner, 1, 1},
		{owner, 0, 0},
		{owner, -1, 0},
		{task.Owner{Tenant: tenantB, Principal: "user-" + tenantB}, 100, 1},
		{task.Owner{Tenant: tenantA, Principal: "someone-else"}, 100, 1},
		{task.Owner{Tenant: tenantA}, 100, 0},
		{task.Owner{Tenant: "nobody", Principal: "user-" + tenantA}, 100, 0},
	} {
		if got := count(tc.owner, tc.limit); got != tc.want {
			t.Errorf("CountActive(%+v, %d) = %d, want %d", tc.owner, tc.limit, got, tc.want)
		}
	}

	// An expired task no longer counts.
	c.Advance(time.Minute)
	if n := count(owner, 100); n != 3 {
		t.Fatalf("after the short task expired: CountActive = %d, want 3", n)
	}
}
