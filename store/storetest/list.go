package storetest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// The list cases pin task.Lister where backends must agree:
//
//   - A listing holds exactly the unexpired tasks FindTask finds for the
//     request (same endpoint and tenant), newest first, tasks created at
//     the same time by descending ID.
//   - A page holds at least one task when any remain and at most
//     min(Limit, 100); Limit below 1 counts as 1. NextCursor is "" exactly
//     on the last page.
//   - Cursors are keyset positions: tasks created after a listing began
//     never appear in its later pages, and a task that expires between
//     pages does not shift the others.
//   - A cursor is bound to the endpoint, tenant and principal it was
//     issued to; any other, altered or made-up cursor gets
//     task.ErrBadCursor.

// MaxListLimit is the largest page the list cases accept.
const MaxListLimit = 100

// ListManager is a manager that lists.
type ListManager interface {
	task.Manager
	task.Lister
}

// ListFixture is what the list cases need of a backend.
type ListFixture struct {
	Manager ListManager
	// Create creates a working task for cc that expires TTL after its
	// creation.
	Create func(cc *task.CreationContext) (task.Task, error)
	TTL    time.Duration
}

// RunLister runs the list cases alone, for managers that are not a
// backend.Store (store/memory lists the tasks its Create made through it).
// open receives the test clock, as in Run.
func RunLister(t *testing.T, open func(t *testing.T, now func() time.Time) ListFixture) {
	for _, tc := range listCases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewClock(Epoch)
			tc.fn(t, open(t, c.Now), c)
		})
	}
}

// listTTL is the TTL of the tasks the list cases create on a backend.Store.
const listTTL = time.Hour

var listCases = []struct {
	name string
	fn   func(t *testing.T, f ListFixture, c *Clock)
}{
	{"OrderAndPages", testListOrder},
	{"Binding", testListBinding},
	{"Cursors", testListCursors},
	{"Expiry", testListExpiry},
	{"Limit", testListLimit},
}

// testList runs the list cases against a backend.Store.
func testList(t *testing.T, open opener) {
	for _, tc := range listCases {
		t.Run(tc.name, func(t *testing.T) {
			b, c := open(t)
			tc.fn(t, backendFixture(t, b), c)
		})
	}
}

func backendFixture(t *testing.T, b backend.Store) ListFixture {
	return ListFixture{
		Manager: b,
		Create: func(cc *task.CreationContext) (task.Task, error) {
			return b.Enqueue(bg, cc, backend.EnqueueOptions{TTL: listTTL})
		},
		TTL: listTTL,
	}
}

// lister is the request of a listing by principal on endpoint for tenant.
func lister(endpoint, tenant, principal string) task.RequestContext {
	return task.RequestContext{Endpoint: endpoint, Tenant: tenant, Principal: principal, ProtocolVersion: "2025-11-25"}
}

// listAll pages through a listing with limit, checking the page bounds,
// and returns the IDs in order.
func listAll(t *testing.T, m ListManager, rc task.RequestContext, limit int) []string {
	t.Helper()
	var ids []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 1000 {
			t.Fatalf("listing with limit %d did not end after 1000 pages", limit)
		}
		page, err := m.ListTasks(bg, task.ListQuery{Request: rc, Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatalf("ListTasks(limit %d, page %d): %v", limit, pages, err)
		}
		if n := len(page.Tasks); n > max(limit, 1) || n > MaxListLimit || (n == 0 && page.NextCursor != "") {
			t.Fatalf("ListTasks(limit %d): page of %d tasks, next cursor %q", limit, n, page.NextCursor)
		}
		for _, tk := range page.Tasks {
			ids = append(ids, tk.ID())
		}
		if page.NextCursor == "" {
			return ids
		}
		cursor = page.NextCursor
	}
}

// listOrder sorts snapshots in listing order and returns their IDs.
func listOrder(tasks []task.Task) []string {
	tasks = slices.Clone(tasks)
	slices.SortFunc(tasks, func(a, b task.Task) int {
		return cmp.Or(b.CreatedAt().Compare(a.CreatedAt()), strings.Compare(b.ID(), a.ID()))
	})
	ids := make([]string, len(tasks))
	for i, tk := range tasks {
		ids[i] = tk.ID()
	}
	return ids
}

func mustCreateFor(t *testing.T, f ListFixture, endpoint, tenant, principal string) task.Task {
	t.Helper()
	cc := creation(t, endpoint, tenant, toolA, `{}`)
	cc.Request.Principal = principal
	tk, err := f.Create(cc)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return tk
}

// testListOrder: newest first, ties by descending ID, the same whatever the
// page size, and other callers' tasks never listed.
func testListOrder(t *testing.T, f ListFixture, c *Clock) {
	var mine []task.Task
	for i := range 7 {
		// Three tasks per millisecond: ties broken by ID.
		for range 3 {
			mine = append(mine, mustCreateFor(t, f, endpointA, tenantA, "alice"))
		}
		mustCreateFor(t, f, endpointB, tenantA, "alice")
		mustCreateFor(t, f, endpointA, tenantB, "alice")
		c.Advance(time.Duration(1+i%2) * time.Millisecond)
	}
	want := listOrder(mine)
	for _, limit := range []int{1, 2, 3, 5, 21, 22, 100} {
		if diff := gocmp.Diff(want, listAll(t, f.Manager, lister(endpointA, tenantA, "alice"), limit)); diff != "" {
			t.Errorf("listing with limit %d (-want +got):\n%s", limit, diff)
		}
	}
	if got := listAll(t, f.Manager, lister("ep-none", tenantA, "alice"), 10); len(got) != 0 {
		t.Errorf("an endpoint with no tasks listed %d", len(got))
	}
}

// testListBinding: a listing holds exactly what FindTask finds.
func testListBinding(t *testing.T, f ListFixture, c *Clock) {
	type owner struct{ endpoint, tenant, principal string }
	owners := []owner{
		{endpointA, tenantA, "alice"}, {endpointA, tenantA, "bob"}, {endpointB, tenantA, "alice"},
		{endpointA, tenantB, "alice"}, {endpointB, tenantB, "carol"},
	}
	var all []task.Task
	for i := range 12 {
		o := owners[i%len(owners)]
		all = append(all, mustCreateFor(t, f, o.endpoint, o.tenant, o.principal))
		c.Advance(time.Millisecond)
	}
	for _, o := range owners {
		rc := lister(o.endpoint, o.tenant, o.principal)
		var want []task.Task
		for _, tk := range all {
			found := rc
			found.TaskID = tk.ID()
			if _, ok, err := f.Manager.FindTask(bg, found); err != nil {
				t.Fatalf("FindTask: %v", err)
			} else if ok {
				want = append(want, tk)
			}
		}
		if len(want) == 0 {
			t.Fatalf("%v finds none of the tasks", o)
		}
		if diff := gocmp.Diff(listOrder(want), listAll(t, f.Manager, rc, 4)); diff != "" {
			t.Errorf("listing of %v (-want +got):\n%s", o, diff)
		}
	}
	// Text no store keeps names no task: an empty listing, not an error.
	for _, rc := range []task.RequestContext{lister(endpointA, tenantA+"\x00", "alice"), lister("\xff", tenantA, "alice")} {
		if got := listAll(t, f.Manager, rc, 4); len(got) != 0 {
			t.Errorf("listing of %q/%q: %d tasks", rc.Endpoint, rc.Tenant, len(got))
		}
	}
}

// testListCursors: cursors are keyset positions bound to their caller.
func testListCursors(t *testing.T, f ListFixture, c *Clock) {
	var mine []task.Task
	for range 5 {
		mine = append(mine, mustCreateFor(t, f, endpointA, tenantA, "alice"))
		c.Advance(time.Millisecond)
	}
	alice := lister(endpointA, tenantA, "alice")
	first, err := f.Manager.ListTasks(bg, task.ListQuery{Request: alice, Limit: 2})
	if err != nil || len(first.Tasks) != 2 || first.NextCursor == "" {
		t.Fatalf("first page: %d tasks, cursor %q, %v", len(first.Tasks), first.NextCursor, err)
	}
	// Tasks created after the first page do not appear in the next ones.
	mustCreateFor(t, f, endpointA, tenantA, "alice")
	rest := listAllFrom(t, f.Manager, alice, first.NextCursor, 2)
	if diff := gocmp.Diff(listOrder(mine)[2:], rest); diff != "" {
		t.Errorf("pages after the first (-want +got):\n%s", diff)
	}

	cur := first.NextCursor
	altered := []byte(cur)
	altered[len(altered)/2] ^= 0x01
	for name, tc := range map[string]struct {
		rc     task.RequestContext
		cursor string
	}{
		"another principal": {lister(endpointA, tenantA, "bob"), cur},
		"another tenant":    {lister(endpointA, tenantB, "alice"), cur},
		"another endpoint":  {lister(endpointB, tenantA, "alice"), cur},
		"altered":           {alice, string(altered)},
		"truncated":         {alice, cur[:len(cur)-1]},
		"made up":           {alice, "eyJpZCI6IngifQ"},
		"a task ID":         {alice, mine[0].ID()},
		"huge":              {alice, strings.Repeat("A", 1<<20)},
	} {
		page, err := f.Manager.ListTasks(bg, task.ListQuery{Request: tc.rc, Cursor: tc.cursor, Limit: 2})
		if !errors.Is(err, task.ErrBadCursor) || len(page.Tasks) != 0 {
			t.Errorf("%s cursor: %d tasks, err %v; want task.ErrBadCursor", name, len(page.Tasks), err)
		}
	}
}

func listAllFrom(t *testing.T, m ListManager, rc task.RequestContext, cursor string, limit int) []string {
	t.Helper()
	var ids []string
	for i := 0; cursor != "" && i < 100; i++ {
		page, err := m.ListTasks(bg, task.ListQuery{Request: rc, Cursor: cursor, Limit: limit})
		if err != nil {
			t.Fatalf("ListTasks: %v", err)
		}
		for _, tk := range page.Tasks {
			ids = append(ids, tk.ID())
		}
		cursor = page.NextCursor
	}
	return ids
}

// testListExpiry: expired tasks are never listed, swept or not, and a
// cursor whose task expired still continues the listing.
func testListExpiry(t *testing.T, f ListFixture, c *Clock) {
	for range 2 {
		mustCreateFor(t, f, endpointA, tenantA, "alice") // expire first
	}
	c.Advance(f.TTL / 2)
	young := []task.Task{mustCreateFor(t, f, endpointA, tenantA, "alice"), mustCreateFor(t, f, endpointA, tenantA, "alice")}
	alice := lister(endpointA, tenantA, "alice")
	page, err := f.Manager.ListTasks(bg, task.ListQuery{Request: alice, Limit: 3})
	if err != nil || len(page.Tasks) != 3 || page.NextCursor == "" {
		t.Fatalf("first page: %d tasks, cursor %q, %v", len(page.Tasks), page.NextCursor, err)
	}
	c.Advance(f.TTL / 2) // the old tasks expire, exactly at creation + TTL
	if diff := gocmp.Diff(listOrder(young), listAll(t, f.Manager, alice, 10)); diff != "" {
		t.Errorf("listing after the old tasks expired (-want +got):\n%s", diff)
	}
	// The cursor names an expired task; what follows it has expired too.
	if rest := listAllFrom(t, f.Manager, alice, page.NextCursor, 3); len(rest) != 0 {
		t.Errorf("after an expired position: %v, want nothing", rest)
	}
}

// testListLimit: pages are bounded whatever the limit asked for.
func testListLimit(t *testing.T, f ListFixture, c *Clock) {
	n := MaxListLimit + 5
	var mine []task.Task
	for i := range n {
		mine = append(mine, mustCreateFor(t, f, endpointA, tenantA, "alice"))
		if i%10 == 0 {
			c.Advance(time.Millisecond)
		}
	}
	alice := lister(endpointA, tenantA, "alice")
	for _, limit := range []int{-1, 0, 1 << 30} {
		page, err := f.Manager.ListTasks(bg, task.ListQuery{Request: alice, Limit: limit})
		if err != nil || len(page.Tasks) < 1 || len(page.Tasks) > max(limit, 1) || len(page.Tasks) > MaxListLimit ||
			page.NextCursor == "" {
			t.Errorf("limit %d: %d tasks, cursor %q, %v", limit, len(page.Tasks), page.NextCursor, err)
		}
	}
	if diff := gocmp.Diff(listOrder(mine), listAll(t, f.Manager, alice, 1<<30)); diff != "" {
		t.Errorf("listing with a huge limit (-want +got):\n%s", diff)
	}
}

// opList lists as a random caller, page by page, and compares with the
// model: the visible tasks, newest first, ties by descending ID.
func (s *sequence) opList() string {
	endpoint := []string{endpointA, endpointB}[s.rng.IntN(2)]
	tenant := []string{tenantA, tenantB}[s.rng.IntN(2)]
	limit := 1 + s.rng.IntN(4)
	rc := lister(endpoint, tenant, "user-"+tenant)
	desc := fmt.Sprintf("list %s/%s limit=%d", endpoint, tenant, limit)
	nowMs := s.nowMs()
	var want []*mTask
	for _, m := range s.model.tasks {
		if s.model.visible(m.id, endpoint, tenant, nowMs) != nil {
			want = append(want, m)
		}
	}
	slices.SortFunc(want, func(a, b *mTask) int {
		return cmp.Or(cmp.Compare(b.createdMs, a.createdMs), strings.Compare(b.id, a.id))
	})
	var got []string
	cursor := ""
	for pages := 0; pages <= len(want); pages++ {
		page, err := s.b.ListTasks(bg, task.ListQuery{Request: rc, Cursor: cursor, Limit: limit})
		s.compare(desc, err, "ok")
		if len(page.Tasks) > limit {
			s.fatalf("%s: page of %d tasks", desc, len(page.Tasks))
		}
		for _, tk := range page.Tasks {
			got = append(got, tk.ID())
		}
		if page.NextCursor == "" {
			break
		}
		if s.rng.IntN(8) == 0 { // someone else's cursor is refused
			other := rc
			other.Principal = "intruder"
			if _, err := s.b.ListTasks(bg, task.ListQuery{Request: other, Cursor: page.NextCursor, Limit: limit}); !errors.Is(err, task.ErrBadCursor) {
				s.fatalf("%s: another principal's cursor: %v, want task.ErrBadCursor", desc, err)
			}
		}
		cursor = page.NextCursor
	}
	var wantIDs []string
	for _, m := range want {
		wantIDs = append(wantIDs, m.id)
	}
	if diff := gocmp.Diff(wantIDs, got); diff != "" {
		s.fatalf("%s: listing (-model +backend):\n%s", desc, diff)
	}
	return fmt.Sprintf("%s → %d", desc, len(got))
}
