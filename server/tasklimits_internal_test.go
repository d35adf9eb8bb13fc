package server

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/mcptest"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

// countingManager counts CountActive calls.
type countingManager struct {
	*memory.Manager
	mu      sync.Mutex
	queries int
}

func (m *countingManager) CountActive(ctx context.Context, o task.Owner, limit int) (int, error) {
	m.mu.Lock()
	m.queries++
	m.mu.Unlock()
	return m.Manager.CountActive(ctx, o, limit)
}

func (m *countingManager) takeQueries() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.queries
	m.queries = 0
	return n
}

// TestActiveCountReuse: while a caller is well under MaxActive, one count
// serves the calls of the next second; at half the limit and beyond, every
// call counts again, so the limit itself is exact on one node.
func TestActiveCountReuse(t *testing.T) {
	mem, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := &countingManager{Manager: mem}
	ep := NewEndpoint(EndpointOptions{Path: "/mcp", Name: "e", Version: "1", TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	ep.AddRawTaskTool(&mcp.Tool{Name: "job", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(_ context.Context, req *Request) (*mcp.CallToolResult, *task.Handle, error) {
			tk, err := mem.Create(req.TaskCreation())
			return nil, &task.Handle{ID: tk.ID()}, err
		})
	var mu sync.Mutex
	now := time.Unix(1_800_000_000, 0)
	srv, err := New(Options{
		Endpoints: []*Endpoint{ep}, TaskManager: m, TaskLimits: TaskLimits{CreateRate: NoLimit, MaxActive: 10},
		now: func() time.Time { mu.Lock(); defer mu.Unlock(); return now },
	})
	if err != nil {
		t.Fatal(err)
	}
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	c := mcptest.NewClient(srv, "/mcp")
	c.DeclareTasks()
	create := func() string {
		t.Helper()
		res, err := c.CallTool(context.Background(), "job", map[string]any{})
		if err != nil {
			t.Fatal(err)
		}
		if res.Error != nil {
			return res.Error.Message
		}
		return "task"
	}
	var got []string
	for i := range 12 {
		if i == 3 {
			advance(activeCacheTTL) // the first count (0) is stale now
		}
		got = append(got, fmt.Sprintf("%s/%d", create(), m.takeQueries()))
	}
	want := []string{
		"task/1", "task/0", "task/0", // a count of 0 serves the second: 3 local calls
		"task/1", "task/0", // counted 3 at once, then local up to the threshold of 5
		"task/1", "task/1", "task/1", "task/1", "task/1", // at the threshold every call counts
		"Too many active tasks/1", "Too many active tasks/1",
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("outcome/queries per call:\n got %v\nwant %v", got, want)
	}
}

func TestActiveCacheBounded(t *testing.T) {
	a := newActiveCache(1000)
	at := time.Unix(1_800_000_000, 0)
	for i := range activeCacheKeys + 10 {
		a.record(task.Owner{Tenant: fmt.Sprint(i)}, 0, at)
	}
	if n := len(a.entries); n != activeCacheKeys {
		t.Fatalf("%d entries, want at most %d", n, activeCacheKeys)
	}
	if a.allow(task.Owner{Tenant: fmt.Sprint(activeCacheKeys + 5)}, at) {
		t.Error("an owner that did not fit was remembered")
	}
	// Once the entries are stale they make room.
	later := at.Add(activeCacheTTL)
	a.record(task.Owner{Tenant: "new"}, 0, later)
	if !a.allow(task.Owner{Tenant: "new"}, later) || len(a.entries) != 1 {
		t.Errorf("stale entries were not dropped: %d entries", len(a.entries))
	}
	// A clock that steps back makes an entry stale, never fresher.
	if a.allow(task.Owner{Tenant: "new"}, later.Add(-time.Millisecond)) {
		t.Error("an entry from the future was used")
	}
}

// TestActiveCacheSweepsOncePerTTL checks that a full cache of fresh counts
// is swept at most once per activeCacheTTL, so that a stream of new owners
// costs no scan of the whole cache each.
func TestActiveCacheSweepsOncePerTTL(t *testing.T) {
	a := newActiveCache(1000)
	at := time.Unix(1_800_000_000, 0)
	older := at.Add(-activeCacheTTL * 9 / 10)
	for i := range activeCacheKeys {
		when := at
		if i%2 == 0 {
			when = older
		}
		a.record(task.Owner{Tenant: fmt.Sprint(i)}, 0, when)
	}
	a.record(task.Owner{Tenant: "first"}, 0, at) // sweeps: nothing is stale
	// Half the entries are stale now, but the last sweep was within the
	// TTL: no scan, and the owner is not remembered.
	soon := at.Add(activeCacheTTL / 5)
	a.record(task.Owner{Tenant: "second"}, 0, soon)
	if n := len(a.entries); n != activeCacheKeys {
		t.Errorf("%d entries after a record within the TTL of a sweep, want %d (no sweep)", n, activeCacheKeys)
	}
	// A TTL after the sweep, the stale entries make room.
	later := at.Add(activeCacheTTL)
	a.record(task.Owner{Tenant: "third"}, 0, later)
	if !a.allow(task.Owner{Tenant: "third"}, later) {
		t.Error("an owner was not remembered a TTL after the last sweep")
	}
}
