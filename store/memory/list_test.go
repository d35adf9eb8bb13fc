package memory_test

import (
	"testing"
	"time"

	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/store/storetest"
	"github.com/taskwire/taskwire/task"
)

// TestList runs the list cases every durable store passes.
func TestList(t *testing.T) {
	storetest.RunLister(t, func(t *testing.T, now func() time.Time) storetest.ListFixture {
		m, err := memory.New(memory.Options{Now: now, Capacity: 4096})
		if err != nil {
			t.Fatal(err)
		}
		return storetest.ListFixture{Manager: m, Create: m.Create, TTL: memory.DefaultTTL}
	})
}

// TestListCursorsArePerManager: a cursor of one manager is refused by
// another, whose key differs.
func TestListCursorsArePerManager(t *testing.T) {
	a, _ := newManager(t, memory.Options{})
	b, _ := newManager(t, memory.Options{})
	rc := task.RequestContext{Endpoint: endpoint, Tenant: tenant, Principal: "alice"}
	for _, m := range []*memory.Manager{a, b} {
		for range 2 {
			if _, err := m.Create(creation(t, endpoint, tenant)); err != nil {
				t.Fatal(err)
			}
		}
	}
	page, err := a.ListTasks(t.Context(), task.ListQuery{Request: rc, Limit: 1})
	if err != nil || page.NextCursor == "" {
		t.Fatalf("ListTasks: %v, cursor %q", err, page.NextCursor)
	}
	if _, err := b.ListTasks(t.Context(), task.ListQuery{Request: rc, Cursor: page.NextCursor, Limit: 1}); err != task.ErrBadCursor {
		t.Fatalf("another manager's cursor: %v, want task.ErrBadCursor", err)
	}
}
