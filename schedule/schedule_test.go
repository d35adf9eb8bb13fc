package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

func TestNewReportsEveryProblem(t *testing.T) {
	alice := server.Identity{Principal: "alice", Tenant: "alice"}
	_, err := New(nil, []Schedule{
		{Name: "ok", Tool: "t", Identity: alice, Every: time.Hour},
		{Name: "ok", Tool: "t", Identity: alice, Every: time.Hour},
		{Name: "bad name", Tool: "t", Identity: alice, Every: time.Hour},
		{Name: "both", Tool: "t", Identity: alice, Every: time.Hour, Cron: "@daily"},
		{Name: "neither", Tool: "t", Identity: alice},
		{Name: "fast", Tool: "t", Identity: alice, Every: time.Millisecond},
		{Name: "cron", Tool: "t", Identity: alice, Cron: "61 * * * *"},
		{Name: "every", Tool: "t", Identity: alice, Cron: "@every 1h"},
		{Name: "nobody", Tool: "t", Every: time.Hour},
		{Name: "args", Tool: "t", Identity: alice, Every: time.Hour, Arguments: json.RawMessage(`[1]`)},
		{Name: "notool", Identity: alice, Every: time.Hour},
	}, Options{})
	if err == nil {
		t.Fatal("New accepted bad schedules")
	}
	for _, want := range []string{
		"schedule: a Creator is required",
		`schedule "ok": the name is used twice`,
		`schedule "bad name": the name may hold only`,
		`schedule "both": set Every or Cron, not both`,
		`schedule "neither": set Every or Cron`,
		`schedule "fast": Every 1ms is outside`,
		`schedule "cron": Cron "61 * * * *"`,
		`schedule "every": Cron "@every 1h": use Every`,
		`schedule "nobody": an Identity with a Principal is required`,
		`schedule "args": the arguments must be a JSON object`,
		`schedule "notool": a tool is required`,
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
}

func TestTimetables(t *testing.T) {
	at := time.Date(2026, 12, 3, 14, 37, 12, 0, time.UTC)
	daily, err := cronParser.Parse("0 2 * * *")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name          string
		tt            timetable
		current, next time.Time
	}{
		{"hourly interval", interval(time.Hour), time.Date(2026, 12, 3, 14, 0, 0, 0, time.UTC), time.Date(2026, 12, 3, 15, 0, 0, 0, time.UTC)},
		{"15 s interval", interval(15 * time.Second), time.Date(2026, 12, 3, 14, 37, 0, 0, time.UTC), time.Date(2026, 12, 3, 14, 37, 15, 0, time.UTC)},
		{"cron 02:00", cronTable{daily}, time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC), time.Date(2026, 12, 4, 2, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tt.current(at); !got.Equal(tt.current) {
				t.Errorf("current = %v, want %v", got, tt.current)
			}
			if got := tt.tt.next(at); !got.Equal(tt.next) {
				t.Errorf("next = %v, want %v", got, tt.next)
			}
		})
	}
}

// recorder is a Creator that records the keys it is asked for and fails
// the first fail calls with err.
type recorder struct {
	mu   sync.Mutex
	keys []string
	fail int
	err  error
}

func (r *recorder) CreateTask(_ context.Context, p server.CreateTaskParams) (mcp.TaskInfo, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keys = append(r.keys, p.IdempotencyKey)
	if r.fail > 0 {
		r.fail--
		return mcp.TaskInfo{}, r.err
	}
	return mcp.TaskInfo{TaskID: "t-" + p.IdempotencyKey}, nil
}

func (r *recorder) got() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.keys...)
}

// runFor runs s in the bubble until d has passed, then stops it.
func runFor(t *testing.T, s *Scheduler, d time.Duration) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	time.Sleep(d)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestRunCreatesOneTaskPerPeriod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The bubble's clock starts at 2000-01-01 00:00 UTC.
		rec := &recorder{}
		s, err := New(rec, []Schedule{{Name: "tick", Tool: "t", Identity: server.Identity{Principal: "svc"}, Every: time.Minute}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		runFor(t, s, 3*time.Minute+time.Second)
		want := []string{"schedule/tick/2000-01-01T00:01:00Z", "schedule/tick/2000-01-01T00:02:00Z", "schedule/tick/2000-01-01T00:03:00Z"}
		if diff := cmp.Diff(want, rec.got()); diff != "" {
			t.Errorf("keys (-want +got):\n%s", diff)
		}
		st := s.Statuses()[0]
		if st.LastTaskID != "t-schedule/tick/2000-01-01T00:03:00Z" || !st.Next.Equal(time.Date(2000, 1, 1, 0, 4, 0, 0, time.UTC)) {
			t.Errorf("status = %+v", st)
		}
	})
}

func TestRunCatchesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(30 * time.Second)
		rec := &recorder{}
		s, err := New(rec, []Schedule{{Name: "tick", Tool: "t", Identity: server.Identity{Principal: "svc"}, Every: time.Minute, CatchUp: true}}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		runFor(t, s, 40*time.Second)
		want := []string{"schedule/tick/2000-01-01T00:00:00Z", "schedule/tick/2000-01-01T00:01:00Z"}
		if diff := cmp.Diff(want, rec.got()); diff != "" {
			t.Errorf("keys (-want +got):\n%s", diff)
		}
	})
}

func TestRunRetriesWithinThePeriod(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want []string
	}{
		{"unavailable: retried", errors.New("connection refused"), []string{
			"schedule/tick/2000-01-01T00:01:00Z", "schedule/tick/2000-01-01T00:01:00Z", "schedule/tick/2000-01-01T00:01:00Z",
			"schedule/tick/2000-01-01T00:02:00Z",
		}},
		{"tool error: skipped", &server.ToolResultError{Text: "no"}, []string{
			"schedule/tick/2000-01-01T00:01:00Z", "schedule/tick/2000-01-01T00:02:00Z",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				rec := &recorder{fail: 2, err: tt.err}
				s, err := New(rec, []Schedule{{Name: "tick", Tool: "t", Identity: server.Identity{Principal: "svc"}, Every: time.Minute}},
					Options{RetryMin: time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if tt.err != nil && permanent(tt.err) {
					rec.fail = 1
				}
				runFor(t, s, 2*time.Minute+time.Second)
				if diff := cmp.Diff(tt.want, rec.got()); diff != "" {
					t.Errorf("keys (-want +got):\n%s", diff)
				}
			})
		})
	}
}

func TestDecode(t *testing.T) {
	got, err := Decode(strings.NewReader(`{"schedules": [
		{"name": "nightly", "tool": "reports.export", "arguments": {"month": "current"}, "principal": "bot", "cron": "0 2 * * *", "catchUp": true},
		{"name": "hourly", "tool": "sync", "principal": "bot", "tenant": "ops", "every": "1h"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Schedule{
		{Name: "nightly", Tool: "reports.export", Arguments: json.RawMessage(`{"month": "current"}`), Identity: server.Identity{Principal: "bot", Tenant: "bot"},
			Cron: "0 2 * * *", CatchUp: true},
		{Name: "hourly", Tool: "sync", Identity: server.Identity{Principal: "bot", Tenant: "ops"}, Every: time.Hour},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
	for _, tc := range []struct{ in, want string }{
		{`{"schedules": [{"name": "x", "tool": "t", "principal": "p", "every": "soon"}]}`, `every "soon" is not a duration`},
		{`{"schedules": [{"name": "x", "tool": "t", "principal": "p", "every": "1h", "when": 1}]}`, `unknown field "when"`},
		{`{"schedules": []} {}`, "followed by more data"},
		{`{"schedules": [{"name": "x", "tool": "t", "every": "1h"}]}`, "an Identity with a Principal is required"},
		{strings.Repeat(" ", MaxFileBytes+1), "larger than"},
	} {
		if _, err := Decode(strings.NewReader(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Decode(%.40q) = %v, want an error with %q", tc.in, err, tc.want)
		}
	}
}
