package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/store/memory"
	"github.com/taskwire/taskwire/task"
)

var t0 = time.Date(2026, 8, 1, 10, 0, 0, 0, time.UTC)

// clock is an injectable, race-safe clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

// newManager returns a manager on a clock set to t0.
func newManager(t testing.TB, opts memory.Options) (*memory.Manager, *clock) {
	t.Helper()
	c := &clock{now: t0}
	opts.Now = c.Now
	m, err := memory.New(opts)
	if err != nil {
		t.Fatalf("memory.New: %v", err)
	}
	return m, c
}

var allKinds = []string{task.InputElicitationForm, task.InputElicitationURL, task.InputSampling, task.InputRoots}

func testOrigin(t testing.TB) task.Origin {
	t.Helper()
	o, err := task.NewOrigin(task.OriginParams{
		ProtocolVersion: mcp.LatestProtocolVersion, Endpoint: "main", Operation: mcp.MethodToolsCall,
		Tool: "report", Arguments: json.RawMessage(`{"q":"x"}`), InputKinds: allKinds,
	})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

const (
	endpoint = "main"
	tenant   = "acme"
)

func creation(t testing.TB, endpoint, tenant string) *task.CreationContext {
	return &task.CreationContext{
		Request: task.RequestContext{Endpoint: endpoint, Tenant: tenant, Principal: "alice", ProtocolVersion: mcp.LatestProtocolVersion},
		Origin:  testOrigin(t),
	}
}

// create makes a task bound to endpoint and tenant.
func create(t testing.TB, m *memory.Manager) task.Task {
	t.Helper()
	tk, err := m.Create(creation(t, endpoint, tenant))
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	return tk
}

// rc is the request context of the task's owner.
func rc(id string) task.RequestContext {
	return task.RequestContext{TaskID: id, Endpoint: endpoint, Tenant: tenant, Principal: "alice"}
}

func update(id string, responses mcp.InputResponses) task.UpdateContext {
	return task.UpdateContext{RequestContext: rc(id), Responses: responses}
}

// snapshotView is a comparable rendering of a task.Task.
type snapshotView struct {
	ID, Status, StatusMessage string
	Origin                    string
	CreatedAt, LastUpdatedAt  time.Time
	TTL, PollInterval         time.Duration
	InputRequests             mcp.InputRequests
	Result                    *mcp.CallToolResult
	Error                     *mcp.Error
	Meta                      mcp.Meta
}

func view(t task.Task) snapshotView {
	return snapshotView{
		ID: t.ID(), Status: string(t.Status()), StatusMessage: t.StatusMessage(),
		Origin:    string(t.Origin().Persisted()),
		CreatedAt: t.CreatedAt(), LastUpdatedAt: t.LastUpdatedAt(),
		TTL: t.TTL(), PollInterval: t.PollInterval(),
		InputRequests: t.InputRequests(), Result: t.Result(), Error: t.Error(), Meta: t.Meta(),
	}
}

func find(t testing.TB, m *memory.Manager, id string) task.Task {
	t.Helper()
	tk, err := m.Find(id)
	if err != nil {
		t.Fatalf("Find(%s): %v", id, err)
	}
	return tk
}

// hints records the hints a manager publishes, with the snapshot Find
// returned from inside the subscriber, when the hint arrived.
type hints struct {
	mu   sync.Mutex
	got  []string
	seen []snapshotView
}

func subscribe(t testing.TB, m *memory.Manager) *hints {
	h := &hints{}
	unsub := m.EventPublisher().Subscribe(func(id string) {
		tk, err := m.Find(id) // deadlocks if the manager publishes under its lock
		h.mu.Lock()
		defer h.mu.Unlock()
		h.got = append(h.got, id)
		if err == nil {
			h.seen = append(h.seen, view(tk))
		} else {
			h.seen = append(h.seen, snapshotView{Status: "find failed: " + err.Error()})
		}
	})
	t.Cleanup(unsub)
	return h
}

// take returns and forgets the hints received so far.
func (h *hints) take() ([]string, []snapshotView) {
	h.mu.Lock()
	defer h.mu.Unlock()
	got, seen := h.got, h.seen
	h.got, h.seen = nil, nil
	return got, seen
}

func TestDefaults(t *testing.T) {
	t.Parallel()
	if memory.DefaultCapacity != 1024 || memory.DefaultTTL != time.Hour || memory.DefaultPollInterval != time.Second {
		t.Errorf("defaults = %d, %v, %v; want 1024, 1h, 1s",
			memory.DefaultCapacity, memory.DefaultTTL, memory.DefaultPollInterval)
	}
	m, _ := newManager(t, memory.Options{})
	tk := create(t, m)
	if tk.TTL() != time.Hour || tk.PollInterval() != time.Second {
		t.Errorf("TTL, PollInterval = %v, %v; want 1h, 1s", tk.TTL(), tk.PollInterval())
	}
	for i := 1; i < 1024; i++ {
		create(t, m)
	}
	if _, err := m.Create(creation(t, endpoint, tenant)); !errors.Is(err, memory.ErrFull) {
		t.Errorf("Create beyond 1024 tasks = %v, want ErrFull", err)
	}

	// The default clock is the wall clock.
	real, err := memory.New(memory.Options{})
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	tk, err = real.Create(creation(t, endpoint, tenant))
	if err != nil {
		t.Fatal(err)
	}
	if tk.CreatedAt().Before(before) || tk.CreatedAt().After(time.Now()) {
		t.Errorf("CreatedAt = %v, want about now", tk.CreatedAt())
	}
}

func TestNewOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      memory.Options
		wantErr   bool
		wantTTL   time.Duration
		wantPoll  time.Duration
		wantSlots int
	}{
		{name: "custom", opts: memory.Options{Capacity: 3, TTL: 90 * time.Second, PollInterval: 250 * time.Millisecond},
			wantTTL: 90 * time.Second, wantPoll: 250 * time.Millisecond, wantSlots: 3},
		{name: "one millisecond", opts: memory.Options{Capacity: 1, TTL: time.Millisecond, PollInterval: time.Millisecond},
			wantTTL: time.Millisecond, wantPoll: time.Millisecond, wantSlots: 1},
		{name: "capacity only", opts: memory.Options{Capacity: 2}, wantTTL: time.Hour, wantPoll: time.Second, wantSlots: 2},
		{name: "negative capacity", opts: memory.Options{Capacity: -1}, wantErr: true},
		{name: "negative TTL", opts: memory.Options{TTL: -time.Millisecond}, wantErr: true},
		{name: "TTL 1ns", opts: memory.Options{TTL: time.Nanosecond}, wantErr: true},
		{name: "TTL 999µs", opts: memory.Options{TTL: 999 * time.Microsecond}, wantErr: true},
		{name: "TTL 1.5ms", opts: memory.Options{TTL: 1500 * time.Microsecond}, wantErr: true},
		{name: "negative poll interval", opts: memory.Options{PollInterval: -time.Second}, wantErr: true},
		{name: "poll interval 500µs", opts: memory.Options{PollInterval: 500 * time.Microsecond}, wantErr: true},
		{name: "poll interval 1.0001s", opts: memory.Options{PollInterval: time.Second + 100*time.Microsecond}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts := tt.opts
			frozen := time.Unix(1_800_000_000, 0)
			opts.Now = func() time.Time { return frozen } // a 1 ms TTL must not expire mid-test
			m, err := memory.New(opts)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New() error = %v, want error %t", err, tt.wantErr)
			}
			if err != nil {
				if m != nil {
					t.Error("New() failed but returned a manager")
				}
				return
			}
			for i := range tt.wantSlots {
				tk, err := m.Create(creation(t, endpoint, tenant))
				if err != nil {
					t.Fatalf("Create #%d: %v", i+1, err)
				}
				if tk.TTL() != tt.wantTTL || tk.PollInterval() != tt.wantPoll {
					t.Errorf("TTL, PollInterval = %v, %v; want %v, %v", tk.TTL(), tk.PollInterval(), tt.wantTTL, tt.wantPoll)
				}
			}
			if _, err := m.Create(creation(t, endpoint, tenant)); !errors.Is(err, memory.ErrFull) {
				t.Errorf("Create beyond capacity = %v, want ErrFull", err)
			}
		})
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestCreate(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{TTL: time.Minute, PollInterval: 2 * time.Second})
	h := subscribe(t, m)
	cc := creation(t, endpoint, tenant)
	seen := map[string]bool{}
	for range 200 {
		tk, err := m.Create(cc)
		if err != nil {
			t.Fatal(err)
		}
		id := tk.ID()
		if !uuidV4.MatchString(id) || task.ValidID(id) != nil {
			t.Errorf("ID %q is not a UUIDv4 task ID", id)
		}
		if seen[id] {
			t.Errorf("ID %q issued twice", id)
		}
		seen[id] = true

		want := snapshotView{
			ID: id, Status: string(task.Working), Origin: string(cc.Origin.Persisted()),
			CreatedAt: t0, LastUpdatedAt: t0, TTL: time.Minute, PollInterval: 2 * time.Second,
		}
		if diff := cmp.Diff(want, view(tk)); diff != "" {
			t.Fatalf("Create() (-want +got):\n%s", diff)
		}
		got, found, err := m.FindTask(context.Background(), rc(id))
		if err != nil || !found {
			t.Fatalf("FindTask right after Create = %t, %v", found, err)
		}
		if diff := cmp.Diff(want, view(got)); diff != "" {
			t.Errorf("FindTask() (-want +got):\n%s", diff)
		}
		if !got.Origin().Equal(cc.Origin) {
			t.Error("stored origin differs")
		}
		if diff := cmp.Diff(want, view(find(t, m, id))); diff != "" {
			t.Errorf("Find() (-want +got):\n%s", diff)
		}
		if req, err := m.CancelRequested(id); err != nil || req {
			t.Errorf("CancelRequested = %t, %v", req, err)
		}
		if ids, _ := h.take(); !cmp.Equal(ids, []string{id}) {
			t.Errorf("hints after Create = %q, want [%s]", ids, id)
		}
	}
}

func TestCreateRejectsMalformedContext(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{Capacity: 1})
	h := subscribe(t, m)
	good := creation(t, endpoint, tenant)
	tests := []struct {
		name string
		cc   *task.CreationContext
	}{
		{"nil", nil},
		{"zero origin", &task.CreationContext{Request: good.Request}},
		{"no endpoint", &task.CreationContext{Request: task.RequestContext{Tenant: tenant}, Origin: good.Origin}},
	}
	for _, tt := range tests {
		if _, err := m.Create(tt.cc); err == nil || errors.Is(err, memory.ErrFull) {
			t.Errorf("%s: Create() = %v, want a validation error", tt.name, err)
		}
	}
	// The failures consumed no capacity and published nothing.
	if _, err := m.Create(good); err != nil {
		t.Errorf("Create after malformed contexts = %v", err)
	}
	if _, err := m.Create(good); !errors.Is(err, memory.ErrFull) {
		t.Errorf("second Create = %v, want ErrFull", err)
	}
	if ids, _ := h.take(); len(ids) != 1 {
		t.Errorf("hints = %q, want exactly one", ids)
	}
}

func TestAuthorization(t *testing.T) {
	t.Parallel()
	m, _ := newManager(t, memory.Options{})
	owned := create(t, m)
	if _, err := m.RequestInput(owned.ID(), mcp.InputRequests{"k": formRequest()}, ""); err != nil {
		t.Fatal(err)
	}
	tenantless, err := m.Create(creation(t, endpoint, ""))
	if err != nil {
		t.Fatal(err)
	}
	other := create(t, m) // a different task of the same tenant
	h := subscribe(t, m)

	tests := []struct {
		name  string
		rc    task.RequestContext
		found bool
	}{
		{"owner", rc(owned.ID()), true},
		{"another principal of the tenant", task.RequestContext{TaskID: owned.ID(), Endpoint: endpoint, Tenant: tenant, Principal: "bob"}, true},
		{"tenantless owner", task.RequestContext{TaskID: tenantless.ID(), Endpoint: endpoint}, true},
		{"unknown ID", rc("00000000-0000-4000-8000-000000000000"), false},
		{"empty ID", rc(""), false},
		{"ID with different case", rc(strings.ToUpper(owned.ID())), false},
		{"wrong endpoint", task.RequestContext{TaskID: owned.ID(), Endpoint: "admin", Tenant: tenant}, false},
		{"endpoint with different case", task.RequestContext{TaskID: owned.ID(), Endpoint: "Main", Tenant: tenant}, false},
		{"no endpoint", task.RequestContext{TaskID: owned.ID(), Tenant: tenant}, false},
		{"wrong tenant", task.RequestContext{TaskID: owned.ID(), Endpoint: endpoint, Tenant: "evil"}, false},
		{"no tenant", task.RequestContext{TaskID: owned.ID(), Endpoint: endpoint}, false},
		{"tenant on a tenantless task", task.RequestContext{TaskID: tenantless.ID(), Endpoint: endpoint, Tenant: tenant}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			got, found, err := m.FindTask(ctx, tt.rc)
			if err != nil || found != tt.found {
				t.Fatalf("FindTask() = found %t, %v; want found %t", found, err, tt.found)
			}
			if tt.found {
				if got.ID() != tt.rc.TaskID {
					t.Errorf("FindTask() returned task %q", got.ID())
				}
				return
			}
			if !got.IsZero() {
				t.Error("FindTask() returned a task with found false")
			}
			before := view(find(t, m, owned.ID()))
			uc := task.UpdateContext{RequestContext: tt.rc, Responses: mcp.InputResponses{"k": json.RawMessage(`{"action":"accept","content":{"n":1}}`)}}
			errs := map[string]error{
				"UpdateTask":    m.UpdateTask(ctx, uc),
				"RequestCancel": m.RequestCancel(ctx, tt.rc),
			}
			for op, err := range errs {
				// The very same error value: nothing tells unknown from
				// unauthorized, and nothing echoes the ID.
				if err != task.ErrNotFound {
					t.Errorf("%s() = %v, want task.ErrNotFound", op, err)
				}
				if err != nil && strings.Contains(err.Error(), owned.ID()) {
					t.Errorf("%s() error %q names the task", op, err)
				}
			}
			if diff := cmp.Diff(before, view(find(t, m, owned.ID()))); diff != "" {
				t.Errorf("an unauthorized call changed the task (-before +after):\n%s", diff)
			}
			if r, err := m.TakeInputResponses(owned.ID()); err != nil || len(r) != 0 {
				t.Errorf("an unauthorized update was accepted: %v, %v", r, err)
			}
			for _, id := range []string{owned.ID(), tenantless.ID(), other.ID()} {
				if req, _ := m.CancelRequested(id); req {
					t.Errorf("an unauthorized cancel was recorded on %s", id)
				}
			}
			if ids, _ := h.take(); len(ids) != 0 {
				t.Errorf("unauthorized calls published %q", ids)
			}
		})
	}
}

func TestCapacityAndExpiry(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{Capacity: 2, TTL: time.Minute})
	ctx := context.Background()
	a := create(t, m)
	c.Advance(30 * time.Second)
	b := create(t, m)
	h := subscribe(t, m)

	full := func(when string) {
		t.Helper()
		if _, err := m.Create(creation(t, endpoint, tenant)); !errors.Is(err, memory.ErrFull) {
			t.Errorf("%s: Create() = %v, want ErrFull", when, err)
		}
	}
	alive := func(when string, tasks ...task.Task) {
		t.Helper()
		for _, tk := range tasks {
			if _, found, err := m.FindTask(ctx, rc(tk.ID())); !found || err != nil {
				t.Errorf("%s: task created at %v not found (%v)", when, tk.CreatedAt(), err)
			}
		}
	}
	gone := func(when string, id string) {
		t.Helper()
		if _, found, err := m.FindTask(ctx, rc(id)); found || err != nil {
			t.Errorf("%s: FindTask() = %t, %v; want not found", when, found, err)
		}
		if _, err := m.Find(id); err != task.ErrNotFound {
			t.Errorf("%s: Find() = %v, want ErrNotFound", when, err)
		}
		checks := map[string]error{
			"UpdateTask":    m.UpdateTask(ctx, update(id, nil)),
			"RequestCancel": m.RequestCancel(ctx, rc(id)),
		}
		_, checks["MarkWorking"] = m.MarkWorking(id, "")
		_, checks["RequestInput"] = m.RequestInput(id, mcp.InputRequests{"z": formRequest()}, "")
		_, checks["Complete"] = m.Complete(id, &mcp.CallToolResult{}, "")
		_, checks["Fail"] = m.Fail(id, mcp.NewError(-32603, "x"), "")
		_, checks["Cancel"] = m.Cancel(id, "")
		_, checks["TakeInputResponses"] = m.TakeInputResponses(id)
		_, checks["CancelRequested"] = m.CancelRequested(id)
		for op, err := range checks {
			if err != task.ErrNotFound {
				t.Errorf("%s: %s() = %v, want task.ErrNotFound", when, op, err)
			}
		}
	}

	full("at capacity")
	alive("at capacity, nothing evicted", a, b)
	c.Set(t0.Add(time.Minute - time.Millisecond))
	full("just before expiry")
	alive("just before expiry", a, b)

	c.Set(t0.Add(time.Minute)) // a expires, b has 30 s left
	gone("after expiry", a.ID())
	alive("after a's expiry", b)
	d := create(t, m)
	full("after refilling the freed slot")

	c.Set(t0.Add(90 * time.Second))
	gone("after b's expiry", b.ID())
	alive("after b's expiry", d)
	create(t, m)
	full("after refilling again")
	if ids, _ := h.take(); len(ids) != 2 {
		t.Errorf("hints = %q, want the two successful creations only", ids)
	}
}

func TestExpiryWhenClockGoesBack(t *testing.T) {
	t.Parallel()
	m, c := newManager(t, memory.Options{TTL: time.Hour})
	create(t, m)                     // expires at t0+60m
	c.Set(t0.Add(-10 * time.Minute)) // the clock steps back
	b := create(t, m)                // expires at t0+50m
	c.Set(t0.Add(55 * time.Minute))
	if _, found, _ := m.FindTask(context.Background(), rc(b.ID())); found {
		t.Error("a task past its TTL is still readable")
	}
}
