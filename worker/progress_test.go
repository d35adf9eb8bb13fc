package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// manualClock is a progressClock whose time moves only when the test
// advances it; due timers fire synchronously inside advance. Through
// clockWaker it wakes a coalescer.
type manualClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*manualTimer
}

type manualTimer struct {
	at      time.Time
	f       func()
	stopped bool
}

func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *manualClock) AfterFunc(d time.Duration, f func()) func() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{at: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	return func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		was := !t.stopped
		t.stopped = true
		return was
	}
}

// clockWaker is a progressWaker on a manualClock's timers.
type clockWaker struct {
	clock *manualClock
	c     *progressCoalescer
}

func (w clockWaker) wakeAfter(d time.Duration) { w.clock.AfterFunc(d, w.c.wake) }

// writeFunc is a progressWriter.
type writeFunc func(progressReport) bool

func (f writeFunc) writeProgress(r progressReport) bool { return f(r) }

// newProgressCoalescer returns a coalescer for a run claimed at start, on
// clock's time and timers.
func newProgressCoalescer(clock *manualClock, interval time.Duration, start time.Time, write writeFunc) *progressCoalescer {
	c := &progressCoalescer{}
	c.init(clock, clockWaker{clock, c}, write, interval, start, nil)
	return c
}

// advance moves the time by d and runs the timers that came due.
func (c *manualClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*manualTimer
	rest := c.timers[:0]
	for _, t := range c.timers {
		switch {
		case t.stopped:
		case !t.at.After(c.now):
			t.stopped = true
			due = append(due, t)
		default:
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	for _, t := range due {
		t.f()
	}
}

// written is one write the coalescer made: its message and its time as an
// offset from the claim.
type written struct {
	Message string
	At      time.Duration
}

func TestProgressCoalescing(t *testing.T) {
	type step struct {
		advance time.Duration // before the action
		report  string        // "" for none
		fail    bool          // the write of this step's report fails once (retried)
		wait    int           // writes to wait for after the step (asynchronous ones)
	}
	const sec = time.Second
	tests := []struct {
		name    string
		steps   []step
		want    []written
		pending string // what finish returns
	}{
		{
			name:  "first write one interval after the claim",
			steps: []step{{report: "a"}, {advance: 999 * time.Millisecond}, {advance: time.Millisecond}},
			want:  []written{{"a", sec}},
		},
		{
			name: "a later report replaces the waiting one; the last is written",
			steps: []step{
				{advance: 100 * time.Millisecond, report: "a"}, {advance: 300 * time.Millisecond, report: "b"},
				{advance: 300 * time.Millisecond, report: "c"}, {advance: 300 * time.Millisecond},
			},
			want: []written{{"c", sec}},
		},
		{
			name: "at most one write per interval",
			steps: []step{
				{advance: sec, report: "a", wait: 1}, {advance: 200 * time.Millisecond, report: "b"},
				{advance: 200 * time.Millisecond, report: "c"}, {advance: 600 * time.Millisecond},
				{advance: 100 * time.Millisecond, report: "d"}, {advance: 900 * time.Millisecond},
			},
			want: []written{{"a", sec}, {"c", 2 * sec}, {"d", 3 * sec}},
		},
		{
			name:    "a report after a quiet spell is written at once",
			steps:   []step{{advance: 5 * sec, report: "a", wait: 1}, {advance: 100 * time.Millisecond, report: "b"}},
			want:    []written{{"a", 5 * sec}},
			pending: "b",
		},
		{
			name: "a failed write is tried again one interval later",
			steps: []step{
				{report: "a", fail: true}, {advance: sec}, {advance: sec},
			},
			want: []written{{"a", sec}, {"a", 2 * sec}},
		},
		{
			name:    "still pending when the handler returns",
			steps:   []step{{advance: 10 * time.Millisecond, report: "a"}},
			pending: "a",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			claim := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
			clock := &manualClock{now: claim}
			var mu sync.Mutex
			var got []written
			failNext := map[string]bool{}
			wrote := make(chan struct{}, 100)
			c := newProgressCoalescer(clock, sec, claim, func(r progressReport) bool {
				mu.Lock()
				defer mu.Unlock()
				got = append(got, written{r.message, clock.Now().Sub(claim)})
				wrote <- struct{}{}
				if failNext[r.message] {
					delete(failNext, r.message)
					return true
				}
				return false
			})
			for _, s := range tt.steps {
				clock.advance(s.advance)
				if s.report != "" {
					mu.Lock()
					failNext[s.report] = s.fail
					mu.Unlock()
					c.report(progressReport{message: s.report})
				}
				for range s.wait {
					<-wrote
				}
			}
			last := c.finish()
			mu.Lock()
			defer mu.Unlock()
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			var pending string
			if last != nil {
				pending = last.message
			}
			if pending != tt.pending {
				t.Errorf("pending at finish = %q, want %q", pending, tt.pending)
			}
			c.report(progressReport{message: "late"})
			if c.finish() != nil {
				t.Error("a report after finish was kept")
			}
		})
	}
}

func TestReportProgressRejectsInvalidReports(t *testing.T) {
	jc := newJob(backend.JobRow{}, nil)
	tests := []struct {
		name string
		call func() error
	}{
		{"too long", func() error { return jc.ReportStatus(strings.Repeat("x", backend.MaxProgressMessage+1)) }},
		{"invalid UTF-8", func() error { return jc.ReportStatus("\xff") }},
		{"NUL byte", func() error { return jc.ReportStatus("a\x00b") }},
		{"negative", func() error { return jc.ReportProgress("m", -1, 10) }},
		{"NaN", func() error { return jc.ReportProgress("m", math.NaN(), 0) }},
		{"infinite total", func() error { return jc.ReportProgress("m", 1, math.Inf(1)) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); !errors.Is(err, backend.ErrInvalidProgress) {
				t.Errorf("err = %v, want backend.ErrInvalidProgress", err)
			}
		})
	}
	if err := jc.ReportProgress(strings.Repeat("x", backend.MaxProgressMessage), 0, 0); err != nil {
		t.Errorf("a message of the maximum length: %v", err)
	}
}

func TestProgressIntervalOption(t *testing.T) {
	for _, d := range []time.Duration{-time.Second, time.Millisecond} {
		if _, err := New(Options{Store: newJobs(t), ProgressInterval: d}); err == nil {
			t.Errorf("ProgressInterval %v accepted", d)
		}
	}
}

// runRows runs one task of the harness's "rows" tool to completion and
// returns its job and its progress writes, timed from the claim.
func runRows(t *testing.T, h *harness) (jobView, []written) {
	t.Helper()
	id := h.enqueue(t, testOrigin(t, "rows", `{}`, sumSchema), 3)
	h.start()
	j := h.waitStatus(t, id, task.Completed)
	h.stop(t)
	var got []written
	for _, r := range j.reports {
		got = append(got, written{r.message, r.at.Sub(j.claimTimes[0])})
	}
	return j, got
}

// TestReportProgressWritesUnderTheLease runs a handler that reports every
// 100 ms for 3.4 s (fake time): the store sees one write per interval, the
// first an interval after the claim, and the last report right before the
// completion.
func TestReportProgressWritesUnderTheLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			time.Sleep(50 * time.Millisecond) // off the interval's ticks: no ties between timers
			for i := 1; i <= 35; i++ {
				if i > 1 {
					time.Sleep(100 * time.Millisecond) // the handler's work, in fake time
				}
				if err := job.ReportProgress(fmt.Sprintf("row %d of 35", i), float64(i), 35); err != nil {
					return sumOut{}, err
				}
			}
			return sumOut{Sum: 35}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		j, got := runRows(t, h)
		want := []written{
			{"row 10 of 35", time.Second}, {"row 20 of 35", 2 * time.Second}, {"row 30 of 35", 3 * time.Second},
			{"row 35 of 35", 3450 * time.Millisecond},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("progress writes (-want +got):\n%s", diff)
		}
		if last := j.reports[len(j.reports)-1].progress; last == nil || *last != (task.Progress{Current: 35, Total: 35}) {
			t.Errorf("last numbers = %v", last)
		}
		if diff := cmp.Diff([]string{"ReportProgress", "ReportProgress", "ReportProgress", "ReportProgress", "Complete"},
			h.store.writeLog()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
	})
}

// TestReportProgressAfterLostLease: once another worker holds the job, a
// progress write is refused, changes nothing (the task keeps the message
// of the rescue), and cancels the handler with
// cause ErrLeaseLost; nothing else is written for the run.
func TestReportProgressAfterLostLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{})
		reported := make(chan struct{})
		lost := make(chan struct{})
		var cause error
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			if err := job.ReportStatus("before"); err != nil {
				return sumOut{}, err
			}
			time.Sleep(1500 * time.Millisecond) // the first write happens
			close(reported)
			<-lost
			if err := job.ReportStatus("after"); err != nil {
				return sumOut{}, err
			}
			<-ctx.Done()
			cause = context.Cause(ctx)
			return sumOut{}, ctx.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
		id := h.enqueue(t, testOrigin(t, "rows", `{}`, sumSchema), 3)
		h.start()
		<-reported
		// The runtime settles first: a claim of its own under way (its
		// poll timer fires as the handler's sleep ends) would take the
		// rescued job before the other worker does.
		synctest.Wait()
		h.rescueElsewhere(t)
		h.claimElsewhere(t, id, time.Hour)
		close(lost)
		synctest.Wait()
		time.Sleep(2 * time.Second) // past the next interval; the refused write cancels the handler
		synctest.Wait()
		h.stop(t)

		j := h.job(t, id)
		// The message is the rescue's, not the refused write's.
		if len(j.reports) != 1 || j.reports[0].message != "before" || j.message != backend.InterruptedMessage {
			t.Errorf("reports = %+v, message %q; want only the write made under the lease", j.reports, j.message)
		}
		if !errors.Is(cause, backend.ErrLeaseLost) {
			t.Errorf("handler cause = %v, want ErrLeaseLost", cause)
		}
		if diff := cmp.Diff([]string{"ReportProgress"}, h.store.writeLog()); diff != "" {
			t.Errorf("writes (-want +got):\n%s", diff)
		}
		if n := h.metrics.transition("rows", TransitionLeaseLost); n != 1 {
			t.Errorf("lease_lost = %d", n)
		}
	})
}

// TestProgressAndHeartbeatsShareTheTimer: the lease keeper's timer wakes
// the waiting reports and keeps the heartbeats on their period, both at
// once, in a run longer than several of each.
func TestProgressAndHeartbeatsShareTheTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Lease: 3 * time.Second, ProgressInterval: 400 * time.Millisecond}) // heartbeats every 1 s
		err := AddHandler(h.rt, "rows", func(ctx context.Context, job *Job, in struct{}) (sumOut, error) {
			steps := []struct {
				sleep time.Duration
				msg   string
			}{
				{50 * time.Millisecond, "a"},    // waits for 400 ms
				{2450 * time.Millisecond, "b"},  // 2.5 s: written at once
				{100 * time.Millisecond, "c"},   // 2.6 s: waits for 2.9 s
				{1300 * time.Millisecond, "d"},  // 3.9 s: written at once
				{10 * time.Millisecond, "last"}, // pending when the handler returns
			}
			for _, s := range steps {
				time.Sleep(s.sleep)
				if err := job.ReportStatus(s.msg); err != nil {
					return sumOut{}, err
				}
			}
			return sumOut{Sum: 1}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		_, got := runRows(t, h)
		want := []written{{"a", 400 * time.Millisecond}, {"b", 2500 * time.Millisecond}, {"c", 2900 * time.Millisecond},
			{"d", 3900 * time.Millisecond}, {"last", 3910 * time.Millisecond}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("progress writes (-want +got):\n%s", diff)
		}
		if _, _, beats := h.store.calls(); beats != 3 {
			t.Errorf("heartbeats = %d, want 3 (at 1 s, 2 s and 3 s)", beats)
		}
	})
}

// TestProgressNeverGoesBack: a run claimed with a count drops reports
// below it, and below the highest it reported since; a report without
// numbers keeps the highest count.
func TestProgressNeverGoesBack(t *testing.T) {
	clock := &manualClock{now: time.Unix(0, 0)}
	var got []string
	c := &progressCoalescer{}
	c.init(clock, clockWaker{clock, c}, writeFunc(func(r progressReport) bool {
		got = append(got, fmt.Sprintf("%s %v", r.message, r.count()))
		return false
	}), time.Second, clock.Now(), &task.Progress{Current: 10, Total: 20})
	for _, r := range []progressReport{
		{message: "page 1", progress: task.Progress{Current: 1, Total: 20}, counted: true},
		{message: "resuming"},
		{message: "page 11", progress: task.Progress{Current: 11, Total: 20}, counted: true},
		{message: "page 10 again", progress: task.Progress{Current: 10, Total: 20}, counted: true},
		{message: "saving"},
	} {
		c.report(r)
		c.active.Wait() // a write due at once runs in a goroutine
		clock.advance(time.Second)
	}
	want := []string{"resuming &{10 20}", "page 11 &{11 20}", "saving &{11 20}"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("writes (-want +got):\n%s", d)
	}
	if p := c.finish(); p != nil {
		t.Errorf("pending after the last interval: %+v", p)
	}
}
