package memory_test

import (
	"context"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

func TestCountActive(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{TTL: time.Minute})
	var ac task.ActiveCounter = m
	owner := task.Owner{Tenant: tenant, Principal: "alice"}
	done, asking := create(t, m), create(t, m)
	create(t, m)
	if _, err := m.Create(creation(t, "other-endpoint", tenant)); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(creation(t, endpoint, "other-tenant")); err != nil {
		t.Fatal(err)
	}
	bob := creation(t, endpoint, tenant)
	bob.Request.Principal = "bob"
	if _, err := m.Create(bob); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Complete(done.ID(), textResult("done"), ""); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RequestInput(asking.ID(), mcp.InputRequests{"k": &mcp.InputRequest{Method: mcp.MethodRootsList}}, ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		owner       task.Owner
		limit, want int
	}{
		{owner, 100, 3}, {owner, 2, 2}, {owner, 0, 0},
		{task.Owner{Tenant: tenant, Principal: "bob"}, 100, 1},
		{task.Owner{Tenant: "other-tenant", Principal: "alice"}, 100, 1},
		{task.Owner{Tenant: tenant}, 100, 0},
	} {
		n, err := ac.CountActive(context.Background(), tc.owner, tc.limit)
		if err != nil || n != tc.want {
			t.Errorf("CountActive(%+v, %d) = %d, %v; want %d", tc.owner, tc.limit, n, err, tc.want)
		}
	}
	c.Advance(time.Minute)
	if n, _ := ac.CountActive(context.Background(), owner, 100); n != 0 {
		t.Errorf("after expiry: CountActive = %d, want 0", n)
	}
}
