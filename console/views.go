package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/task"
)

// statuses are the task statuses in display order.
var statuses = []task.Status{task.Working, task.InputRequired, task.Completed, task.Failed, task.Cancelled}

// overviewView is the overview page.
type overviewView struct {
	Statuses    []task.Status
	Totals      []count // by status, in Statuses order
	Total       int64
	Tools       []toolRow
	Queue       []count // by job state; nil without gauges
	JobStates   []backend.JobState
	Queues      []queueRow // by queue, in name order; nil without gauges
	Oldest      string     // how long the oldest due job has waited
	QueueAt     time.Time
	QueueMaxAge time.Duration
	Chart       chart
	Hour        hourTotals
	Schedules   []schedule.Status // nil without Options.Schedules
}

// queueRow counts the unfinished jobs of one queue by state.
type queueRow struct {
	Queue  string
	Counts []int64 // in backend.JobStates order
	Total  int64
}

type count struct {
	Label string
	N     int64
}

type toolRow struct {
	Tool   string
	Counts []int64 // in Statuses order
	Total  int64
}

type hourTotals struct {
	Completed, Failed, Cancelled int64
	FailureRate                  string
}

// overview reads the overview's three parts at once (each is a scan of its
// own), in goroutines it waits for.
func (c *Console) overview(ctx context.Context) (*overviewView, error) {
	now := c.opts.Now()
	var (
		wg               sync.WaitGroup
		counts           []backend.TaskCount
		buckets          []backend.ActivityBucket
		snap             backend.Gauges
		snapAt           time.Time
		errC, errA, errG error
	)
	wg.Go(func() { counts, errC = c.opts.Store.Counts(ctx) })
	wg.Go(func() { buckets, errA = c.opts.Store.Activity(ctx, now.Add(-backend.MaxActivityWindow)) })
	if c.opts.Gauges != nil {
		wg.Go(func() { snap, snapAt, errG = c.gauges.get(ctx, c.opts) })
	}
	wg.Wait()
	switch {
	case errC != nil:
		return nil, fmt.Errorf("counts: %w", errC)
	case errA != nil:
		return nil, fmt.Errorf("activity: %w", errA)
	case errG != nil:
		return nil, fmt.Errorf("gauges: %w", errG)
	}
	v := &overviewView{Statuses: statuses}
	idx := map[task.Status]int{}
	for i, s := range statuses {
		idx[s] = i
		v.Totals = append(v.Totals, count{Label: string(s)})
	}
	tools := map[string]*toolRow{}
	for _, tc := range counts {
		i, ok := idx[tc.Status]
		if !ok {
			continue
		}
		v.Totals[i].N += tc.N
		v.Total += tc.N
		row := tools[tc.Tool]
		if row == nil {
			row = &toolRow{Tool: tc.Tool, Counts: make([]int64, len(statuses))}
			tools[tc.Tool] = row
		}
		row.Counts[i] += tc.N
		row.Total += tc.N
	}
	for _, row := range tools {
		v.Tools = append(v.Tools, *row)
	}
	sort.Slice(v.Tools, func(i, j int) bool { return v.Tools[i].Tool < v.Tools[j].Tool })
	if c.opts.Gauges != nil {
		v.QueueAt, v.QueueMaxAge = snapAt, c.opts.GaugesMaxAge
		byState := map[backend.JobState]int64{}
		stateIdx := map[backend.JobState]int{}
		for i, st := range backend.JobStates {
			stateIdx[st] = i
		}
		queues := map[string]*queueRow{}
		for k, n := range snap.Jobs {
			byState[k.State] += int64(n)
			row := queues[k.Queue]
			if row == nil {
				row = &queueRow{Queue: k.Queue, Counts: make([]int64, len(backend.JobStates))}
				queues[k.Queue] = row
			}
			if i, ok := stateIdx[k.State]; ok {
				row.Counts[i] += int64(n)
				row.Total += int64(n)
			}
		}
		v.JobStates = backend.JobStates
		for _, row := range queues {
			v.Queues = append(v.Queues, *row)
		}
		sort.Slice(v.Queues, func(i, j int) bool { return v.Queues[i].Queue < v.Queues[j].Queue })
		for _, s := range backend.JobStates {
			v.Queue = append(v.Queue, count{Label: string(s), N: byState[s]})
		}
		v.Oldest = snap.OldestAvailable.Round(time.Second).String()
	}
	v.Chart = newChart(now, buckets)
	for _, b := range buckets {
		v.Hour.Completed += b.Completed
		v.Hour.Failed += b.Failed
		v.Hour.Cancelled += b.Cancelled
	}
	v.Hour.FailureRate = rate(v.Hour.Failed, v.Hour.Completed+v.Hour.Failed)
	if c.opts.Schedules != nil {
		v.Schedules = c.opts.Schedules.Statuses()
	}
	return v, nil
}

// gaugeCache keeps the last Gauges snapshot for Options.GaugesMaxAge;
// concurrent overviews wait for one read rather than each making their
// own.
type gaugeCache struct {
	mu   sync.Mutex
	at   time.Time
	snap backend.Gauges
}

func (g *gaugeCache) get(ctx context.Context, opts Options) (backend.Gauges, time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := opts.Now()
	if !g.at.IsZero() && now.Sub(g.at) < opts.GaugesMaxAge && !now.Before(g.at) {
		return g.snap, g.at, nil
	}
	read := opts.Gauges.Gauges
	if q, ok := opts.Gauges.(backend.QueueGaugeSource); ok {
		read = q.QueueGauges // the overview counts tasks from Store.Counts
	}
	snap, err := read(ctx)
	if err != nil {
		return backend.Gauges{}, time.Time{}, err
	}
	g.snap, g.at = snap, now
	return snap, now, nil
}

// rate formats part/whole as a percentage, "—" for an empty whole.
func rate(part, whole int64) string {
	if whole == 0 {
		return "—"
	}
	return strconv.FormatFloat(100*float64(part)/float64(whole), 'f', 1, 64) + " %"
}

// chart is the throughput chart: a bar per minute of the last hour,
// stacked completed / failed / cancelled, and the failure rate as a line.
type chart struct {
	Width, Height, Plot int    // the plot area
	ViewBox             string // the SVG's, with room for the axis labels
	Max                 int64
	Bars                []bar
	RatePoints          string // SVG polyline points of the failure rate
	RateDots            []dot  // the same points, drawn so that a lone one shows
	Label               string // the chart's text alternative
	Ticks               []tick
}

type bar struct {
	X, W                     int
	CompletedY, CompletedH   int
	FailedY, FailedH         int
	CancelledY, CancelledH   int
	Title                    string
	Completed, Failed, Total int64
}

type dot struct{ X, Y int }

type tick struct {
	X     int
	Label string
}

const (
	chartMinutes = 60
	barW         = 10
	chartPlot    = 120
)

func newChart(now time.Time, buckets []backend.ActivityBucket) chart {
	start := now.UTC().Truncate(time.Minute).Add(-(chartMinutes - 1) * time.Minute)
	per := make([]backend.ActivityBucket, chartMinutes)
	for i := range per {
		per[i].Start = start.Add(time.Duration(i) * time.Minute)
	}
	for _, b := range buckets {
		i := int(b.Start.Sub(start) / time.Minute)
		if i >= 0 && i < chartMinutes {
			per[i].Completed += b.Completed
			per[i].Failed += b.Failed
			per[i].Cancelled += b.Cancelled
		}
	}
	ch := chart{Width: chartMinutes * barW, Height: chartPlot, Plot: chartPlot, Max: 1}
	ch.ViewBox = fmt.Sprintf("-36 -10 %d %d", ch.Width+46, ch.Height+30)
	for _, b := range per {
		ch.Max = max(ch.Max, b.Completed+b.Failed+b.Cancelled)
	}
	scale := func(n int64) int { return int(n * int64(chartPlot) / ch.Max) }
	var pts []byte
	var total, failed int64
	for i, b := range per {
		x := i * barW
		ch1, fh, cah := scale(b.Completed), scale(b.Failed), scale(b.Cancelled)
		br := bar{X: x, W: barW - 2, Completed: b.Completed, Failed: b.Failed, Total: b.Completed + b.Failed + b.Cancelled}
		br.CompletedY, br.CompletedH = chartPlot-ch1, ch1
		br.FailedY, br.FailedH = br.CompletedY-fh, fh
		br.CancelledY, br.CancelledH = br.FailedY-cah, cah
		br.Title = fmt.Sprintf("%s: %d completed, %d failed, %d cancelled", b.Start.Format("15:04"), b.Completed,
			b.Failed, b.Cancelled)
		ch.Bars = append(ch.Bars, br)
		if ended := b.Completed + b.Failed; ended > 0 {
			y := chartPlot - int(b.Failed*int64(chartPlot)/ended)
			pts = fmt.Appendf(pts, "%d,%d ", x+barW/2, y)
			ch.RateDots = append(ch.RateDots, dot{x + barW/2, y})
		}
		total += b.Completed + b.Failed + b.Cancelled
		failed += b.Failed
		if i%15 == 0 {
			ch.Ticks = append(ch.Ticks, tick{X: x, Label: b.Start.Format("15:04")})
		}
	}
	ch.RatePoints = string(pts)
	ch.Label = fmt.Sprintf("Tasks ended per minute over the last hour (UTC): %d in all, %d failed; the highest minute had %d.",
		total, failed, ch.Max)
	return ch
}

// listView is the task list.
type listView struct {
	Query    backend.OperatorQuery
	From     string
	Before   string
	Statuses []task.Status
	Tasks    []backend.TaskSummary
	Next     string // URL of the next page, "" on the last
	First    string // URL of the first page with the same filters, "" on it
}

func newListView(prefix string, q backend.OperatorQuery, page backend.OperatorPage) *listView {
	v := &listView{Query: q, Statuses: statuses, Tasks: page.Tasks}
	vals := url.Values{}
	set := func(k, val string) {
		if val != "" {
			vals.Set(k, val)
		}
	}
	set("status", string(q.Status))
	set("tool", q.Tool)
	set("tenant", q.Tenant)
	if !q.CreatedFrom.IsZero() {
		v.From = q.CreatedFrom.UTC().Format("2006-01-02T15:04:05")
		set("from", v.From)
	}
	if !q.CreatedBefore.IsZero() {
		v.Before = q.CreatedBefore.UTC().Format("2006-01-02T15:04:05")
		set("before", v.Before)
	}
	if q.Cursor != "" {
		v.First = prefix + "/tasks?" + vals.Encode()
	}
	if page.NextCursor != "" {
		vals.Set("cursor", page.NextCursor)
		v.Next = prefix + "/tasks?" + vals.Encode()
	}
	return v
}

// taskView is the task page.
type taskView struct {
	T         backend.OperatorTask
	Events    []backend.TaskEvent
	Result    string // indented JSON, "" when none
	Error     string
	Arguments string // "" unless shown
	Hidden    bool   // arguments exist but are not shown
	Progress  string
	Actions   []actionLink
	Failures  int // the job's failed runs, the one that failed the task included
}

type actionLink struct {
	Verb, URL string
}

// maxShown bounds the JSON a task page shows of one value.
const maxShown = 64 << 10

func pretty(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "(not displayable)"
	}
	if len(b) > maxShown {
		return string(b[:maxShown]) + "\n… (cut at 64 KiB)"
	}
	return string(b)
}

func newTaskView(prefix string, ot backend.OperatorTask, showArgs bool) *taskView {
	v := &taskView{T: ot, Events: ot.Events, Failures: failedRuns(ot)}
	if ot.Result != nil {
		v.Result = pretty(ot.Result)
	}
	if ot.Error != nil {
		v.Error = pretty(ot.Error)
	}
	if len(ot.Arguments) > 0 {
		if showArgs {
			v.Arguments = pretty(ot.Arguments)
		} else {
			v.Hidden = true
		}
	}
	if p := ot.Progress; p != nil {
		v.Progress = strconv.FormatFloat(p.Current, 'g', -1, 64)
		if p.Total > 0 {
			v.Progress += " of " + strconv.FormatFloat(p.Total, 'g', -1, 64)
		}
	}
	for _, a := range []string{"cancel", "retry", "delete"} {
		if allowed(a, ot) {
			v.Actions = append(v.Actions, actionLink{Verb: actions[a].verb,
				URL: prefix + "/tasks/" + url.PathEscape(ot.ID) + "/" + a})
		}
	}
	return v
}

// failedRuns counts the failed runs of ot's job. The job's Failures counts
// the runs the store retried; the worker ends the run that uses up the
// attempts, or one that fails without a retry, with Fail, which records the
// run's category on the failed event but does not count it. So a task
// that failed that way has one failed run more than Failures says (never
// more than MaxAttempts, which a store that counted it already reached).
func failedRuns(ot backend.OperatorTask) int {
	j := ot.Job
	if j == nil {
		return 0
	}
	n := j.Failures
	if ot.Status != task.Failed || n >= j.MaxAttempts {
		return n
	}
	for _, e := range slices.Backward(ot.Events) {
		if e.Kind == backend.EventFailed {
			if e.Category != "" {
				n++
			}
			break
		}
	}
	return n
}

// confirmView is an action's confirmation.
type confirmView struct {
	Action, Verb, Explain string
}
