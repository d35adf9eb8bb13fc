package schedule

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/taskwire/taskwire/server"
)

// Options configure a Scheduler.
type Options struct {
	// Logger receives a line per failed creation. Default: discarded.
	Logger *slog.Logger
	// CallTimeout bounds each CreateTask call. Default 30 s.
	CallTimeout time.Duration
	// RetryMin and RetryMax bound the pause before a failed creation is
	// tried again; it doubles from RetryMin up to RetryMax. Defaults 1 s
	// and 1 min.
	RetryMin, RetryMax time.Duration
}

// Scheduler runs a fixed set of schedules against one Creator. Build it
// with New; Run it once.
type Scheduler struct {
	c     Creator
	opts  Options
	items []*item

	mu      sync.Mutex
	running bool
}

// item is one schedule and its state, guarded by Scheduler.mu.
type item struct {
	s  Schedule
	tt timetable

	next     time.Time // the start of the next period to create
	retryAt  time.Time // when a failed creation is tried again; zero: none
	pending  time.Time // the period a retry is for
	attempts int       // failed tries of pending

	last Status
}

// Status is what the console shows of a schedule.
type Status struct {
	Name, Tool string
	// Spec is the period as configured: the interval or the expression.
	Spec string
	// Next is the start of the next period the scheduler will create.
	Next time.Time
	// LastPeriod is the start of the latest period this scheduler
	// created a task for (or was handed the task another node created);
	// LastTaskID is that task. Zero and "" before the first.
	LastPeriod time.Time
	LastTaskID string
	// LastFailure is the category of the latest failed try ("" after a
	// success), and LastFailureAt its time.
	LastFailure   string
	LastFailureAt time.Time
}

// New validates every schedule and the options, reporting every problem
// at once (one line each, naming its schedule), and returns a Scheduler
// that is not running yet.
func New(c Creator, schedules []Schedule, opts Options) (*Scheduler, error) {
	var problems []string
	if c == nil {
		problems = append(problems, "schedule: a Creator is required")
	}
	if opts.CallTimeout < 0 || opts.RetryMin < 0 || opts.RetryMax < 0 {
		problems = append(problems, "schedule: negative Options durations")
	}
	if opts.Logger == nil {
		opts.Logger = discard
	}
	opts.CallTimeout = cmpOr(opts.CallTimeout, 30*time.Second)
	opts.RetryMin = cmpOr(opts.RetryMin, time.Second)
	opts.RetryMax = cmpOr(opts.RetryMax, time.Minute)
	if opts.RetryMax < opts.RetryMin {
		problems = append(problems, "schedule: Options.RetryMax below RetryMin")
	}
	s := &Scheduler{c: c, opts: opts}
	items, ps := check(schedules)
	if problems = append(problems, ps...); len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	s.items = items
	return s, nil
}

// Check reports every problem of schedules in one error, one line per
// problem, each naming its schedule, or nil: what New checks of them.
// node.New runs it, so that a bad schedule stops a node before it starts.
func Check(schedules []Schedule) error {
	if _, ps := check(schedules); len(ps) > 0 {
		return errors.New(strings.Join(ps, "\n"))
	}
	return nil
}

func check(schedules []Schedule) ([]*item, []string) {
	var (
		problems []string
		items    []*item
	)
	if len(schedules) > MaxSchedules {
		problems = append(problems, fmt.Sprintf("schedule: %d schedules, more than %d", len(schedules), MaxSchedules))
	}
	seen := map[string]bool{}
	for i := range schedules {
		sc := schedules[i]
		sc.Arguments = slices.Clone(sc.Arguments)
		tt, ps := sc.validate()
		if seen[sc.Name] && sc.Name != "" {
			ps = append(ps, "the name is used twice")
		}
		seen[sc.Name] = true
		for _, p := range ps {
			problems = append(problems, fmt.Sprintf("schedule %q: %s", sc.Name, p))
		}
		if len(ps) == 0 {
			spec := sc.Cron
			if sc.Every != 0 {
				spec = "every " + sc.Every.String()
			}
			items = append(items, &item{s: sc, tt: tt, last: Status{Name: sc.Name, Tool: sc.Tool, Spec: spec}})
		}
	}
	return items, problems
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Run creates each schedule's tasks until ctx ends, then returns nil once
// the creation under way, if any, has returned. It returns an error only
// when called twice. Creations run one at a time, each bounded by
// Options.CallTimeout.
func (s *Scheduler) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.running {
		s.mu.Unlock()
		return errors.New("schedule: Run called twice")
	}
	s.running = true
	now := time.Now()
	for _, it := range s.items {
		it.next = it.tt.next(now)
		if it.s.CatchUp {
			if cur := it.tt.current(now); !cur.IsZero() {
				it.retryAt, it.pending = now, cur
			}
		}
		it.last.Next = it.next
	}
	s.mu.Unlock()

	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		wake := s.due(time.Now())
		if wake.IsZero() {
			return nil // no schedules
		}
		timer.Reset(time.Until(wake))
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		}
	}
}

// due creates what is due at now and returns when to look again.
func (s *Scheduler) due(now time.Time) time.Time {
	var wake time.Time
	for _, it := range s.items {
		s.mu.Lock()
		var period time.Time
		switch {
		case !it.retryAt.IsZero() && !now.Before(it.retryAt):
			period = it.pending
		case !now.Before(it.next):
			// A period that began while the previous creation ran is
			// created late; periods missed entirely are skipped.
			period = it.tt.current(now)
			if period.Before(it.next) {
				period = it.next
			}
			it.next = it.tt.next(now)
			it.last.Next = it.next
			it.attempts = 0
		}
		s.mu.Unlock()
		if !period.IsZero() {
			s.create(it, period)
		}
		s.mu.Lock()
		for _, t := range []time.Time{it.next, it.retryAt} {
			if !t.IsZero() && (wake.IsZero() || t.Before(wake)) {
				wake = t
			}
		}
		s.mu.Unlock()
	}
	return wake
}

// create makes the task of it's period starting at period, and records
// the outcome: a failure that may pass is tried again after a pause, if
// that is before the next period.
func (s *Scheduler) create(it *item, period time.Time) {
	ctx, cancel := context.WithTimeout(context.Background(), s.opts.CallTimeout)
	info, err := s.c.CreateTask(ctx, server.CreateTaskParams{
		Endpoint: it.s.Endpoint, Tool: it.s.Tool, Arguments: it.s.Arguments, Identity: it.s.Identity,
		IdempotencyKey: it.s.key(period),
	})
	cancel()
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	it.retryAt, it.pending = time.Time{}, time.Time{}
	if err == nil {
		it.attempts = 0
		it.last.LastPeriod, it.last.LastTaskID, it.last.LastFailure = period, info.TaskID, ""
		return
	}
	cat := category(err)
	it.last.LastFailure, it.last.LastFailureAt = cat, now
	it.attempts++
	if permanent(err) {
		s.opts.Logger.Warn("schedule: the task was not created; the period is skipped", "schedule", it.s.Name, "category", cat)
		return
	}
	pause := s.opts.RetryMin << min(it.attempts-1, 20)
	if pause > s.opts.RetryMax || pause <= 0 {
		pause = s.opts.RetryMax
	}
	if at := now.Add(pause); at.Before(it.next) {
		it.retryAt, it.pending = at, period
		s.opts.Logger.Warn("schedule: the task was not created; trying again", "schedule", it.s.Name, "category", cat, "retry_in", pause)
		return
	}
	s.opts.Logger.Warn("schedule: the task was not created before the next period; the period is skipped", "schedule", it.s.Name, "category", cat)
}

// Statuses returns the state of every schedule, in the order given to
// New. It is safe to call at any time.
func (s *Scheduler) Statuses() []Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Status, len(s.items))
	for i, it := range s.items {
		out[i] = it.last
	}
	return out
}
