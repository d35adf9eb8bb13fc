package console_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/store/sqlite"
)

// recordedGauges is a store's backend.GaugeSource that records which of its
// reads were called.
type recordedGauges struct {
	st    *sqlite.Store
	mu    sync.Mutex
	calls []string
}

func (r *recordedGauges) record(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, name)
}

func (r *recordedGauges) Gauges(ctx context.Context) (backend.Gauges, error) {
	r.record("Gauges")
	return r.st.Gauges(ctx)
}

// recordedQueueGauges is a recordedGauges that is a backend.QueueGaugeSource.
type recordedQueueGauges struct{ *recordedGauges }

func (r recordedQueueGauges) QueueGauges(ctx context.Context) (backend.Gauges, error) {
	r.record("QueueGauges")
	return r.st.QueueGauges(ctx)
}

// TestOverviewGauges checks that the overview reads a backend.QueueGaugeSource
// without its counts of tasks (it has them from the store's counts by tool
// and status), and any other Source in full, showing the same queue.
func TestOverviewGauges(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue bool
		want  []string
	}{
		{"queue source", true, []string{"QueueGauges"}},
		{"source", false, []string{"Gauges"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recordedGauges{}
			f := newFixture(t, fixtureOpts{gauges: func(st *sqlite.Store) backend.GaugeSource {
				rec.st = st
				if tc.queue {
					return recordedQueueGauges{rec}
				}
				return rec
			}})
			r := f.get("/console/")
			if r.status != http.StatusOK {
				t.Fatalf("overview: %s", describe(r))
			}
			mustContain(t, "overview", r.body, "<caption>4 tasks held",
				"Queue depth by job state", `<th scope="row">available</th><td class="num">2</td>`)
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if d := cmp.Diff(tc.want, rec.calls); d != "" {
				t.Errorf("reads of the gauges (-want +got):\n%s", d)
			}
		})
	}
}

// fixedSchedules is a console.ScheduleSource with set statuses.
type fixedSchedules []schedule.Status

func (f fixedSchedules) Statuses() []schedule.Status { return f }

// TestOverviewSchedules checks that the overview lists the node's
// schedules, with a link to the last period's task, and shows no section
// without them.
func TestOverviewSchedules(t *testing.T) {
	at := time.Date(2026, 12, 3, 2, 0, 0, 0, time.UTC)
	f := newFixture(t, fixtureOpts{})
	src := fixedSchedules{
		{Name: "nightly", Tool: "report", Spec: "0 2 * * *", Next: at.Add(24 * time.Hour), LastPeriod: at},
		{Name: "hourly", Tool: "crunch", Spec: "every 1h0m0s", Next: at.Add(time.Hour), LastFailure: "unavailable", LastFailureAt: at},
	}
	g := newFixture(t, fixtureOpts{schedules: src})
	src[0].LastTaskID = g.completed // the source is read at each overview
	r := g.get("/console/")
	if r.status != http.StatusOK {
		t.Fatalf("overview: %s", describe(r))
	}
	mustContain(t, "overview", r.body, `<h2 id="schedules">Schedules</h2>`, `<th scope="row">nightly</th><td>report</td><td>0 2 * * *</td>`,
		`<td>2026-12-04 02:00:00.000 UTC</td>`, `href="/console/tasks/`+g.completed+`"`, "unavailable at 2026-12-03 02:00:00.000 UTC")
	if r := f.get("/console/"); strings.Contains(r.body, `id="schedules"`) {
		t.Error("an overview without schedules shows the section")
	}
}
