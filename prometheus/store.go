package prometheus

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"
	"unicode/utf8"

	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// Defaults of StoreOptions.
const (
	DefaultStoreTimeout     = 2 * time.Second
	DefaultStoreMinInterval = 5 * time.Second
	DefaultMaxKinds         = 64
)

// otherKind is the kind label of the kinds beyond StoreOptions.MaxKinds.
const otherKind = "other"

var errNilSource = errors.New("prometheus: nil gauge source")

// StoreOptions configure RegisterStoreGauges. Zero values mean the
// defaults.
type StoreOptions struct {
	// Kinds are the job kinds the application registers: each gets a
	// series for every state, zero or not, so that alerts see a value
	// from the first scrape. Kinds found in the store are reported too.
	// Each must be non-empty UTF-8, listed once, and not "other"; there
	// may be at most MaxKinds (or its default).
	Kinds []string
	// MaxKinds bounds the kinds with series of their own, Kinds first,
	// then the store's others in name order; the jobs of kinds beyond it
	// are added up under kind "other". Default DefaultMaxKinds.
	MaxKinds int
	// Timeout bounds one read of the store at scrape time. Default
	// DefaultStoreTimeout (2 s).
	Timeout time.Duration
	// MinInterval is how long a read is reused by the scrapes that follow
	// it, so that several scrapers cost one read. Default
	// DefaultStoreMinInterval (5 s); a negative value reads at every
	// scrape.
	MinInterval time.Duration
	// Logger receives the errors of failed reads (the scrape shows only
	// taskwire_store_up 0 and an error count). Nil discards them.
	Logger *slog.Logger
}

func (o StoreOptions) validate() error {
	var errs []error
	if o.MaxKinds < 0 {
		errs = append(errs, fmt.Errorf("StoreOptions.MaxKinds (%d) is negative", o.MaxKinds))
	}
	if o.Timeout < 0 {
		errs = append(errs, fmt.Errorf("StoreOptions.Timeout (%v) is negative", o.Timeout))
	}
	if maxKinds := cmp.Or(o.MaxKinds, DefaultMaxKinds); o.MaxKinds >= 0 && len(o.Kinds) > maxKinds {
		errs = append(errs, fmt.Errorf("StoreOptions.Kinds has %d kinds, more than MaxKinds (%d)", len(o.Kinds), maxKinds))
	}
	seen := make(map[string]bool, len(o.Kinds))
	for i, k := range o.Kinds {
		// Such a kind would get no series of its own: a label value must
		// be UTF-8, and "other" is the label of the kinds beyond MaxKinds.
		switch {
		case k == "" || !utf8.ValidString(k):
			errs = append(errs, fmt.Errorf("StoreOptions.Kinds[%d] must be a non-empty UTF-8 kind", i))
		case k == otherKind:
			errs = append(errs, fmt.Errorf("StoreOptions.Kinds[%d] %q is the label of the kinds beyond MaxKinds", i, k))
		case seen[k]:
			errs = append(errs, fmt.Errorf("StoreOptions.Kinds[%d] %q is listed twice", i, k))
		}
		seen[k] = true
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("prometheus: %w", err)
	}
	return nil
}

// RegisterStoreGauges registers, on reg, gauges of a store read at scrape
// time from src (*sqlite.Store, *postgres.Store and *memory.Manager
// implement backend.GaugeSource): tasks by status, unfinished jobs by kind
// and state and by queue and state (taskwire_store_queue_jobs, bounded by
// MaxQueueSeries), the age of the oldest available job, and live sessions, with
// taskwire_store_up, taskwire_store_read_errors_total and
// taskwire_store_read_duration_seconds about the read itself. A read that
// fails or passes its Timeout leaves the store's series out of that scrape
// and sets taskwire_store_up to 0; the scrape itself succeeds. It fails
// when reg or src is nil, an option is out of range, or reg holds metrics
// of the same names.
func RegisterStoreGauges(reg prom.Registerer, src backend.GaugeSource, opts StoreOptions) error {
	if src == nil {
		return errNilSource
	}
	if err := opts.validate(); err != nil {
		return err
	}
	if opts.MaxKinds == 0 {
		opts.MaxKinds = DefaultMaxKinds
	}
	if opts.Timeout == 0 {
		opts.Timeout = DefaultStoreTimeout
	}
	if opts.MinInterval == 0 {
		opts.MinInterval = DefaultStoreMinInterval
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return register(reg, &storeCollector{src: src, opts: opts})
}

var (
	storeTasksDesc = prom.NewDesc(namespace+"_store_tasks",
		"Tasks in the store by status, terminal and expired ones included until deleted.", []string{"status"}, nil)
	storeJobsDesc = prom.NewDesc(namespace+"_store_jobs",
		"Unfinished jobs in the store by kind and state (available, retry_waiting, scheduled, running, input_waiting).", []string{"kind", "state"}, nil)
	storeQueueJobsDesc = prom.NewDesc(namespace+"_store_queue_jobs",
		"Unfinished jobs in the store by queue and state: the queues found, up to MaxQueueSeries, the rest as queue \"other\".",
		[]string{"queue", "state"}, nil)
	storeOldestDesc = prom.NewDesc(namespace+"_store_oldest_available_job_age_seconds",
		"How long the longest-waiting available job has been due; 0 when none is.", nil, nil)
	storeSessionsDesc = prom.NewDesc(namespace+"_store_sessions",
		"Live 2025-era sessions in the store, of every node sharing it.", nil, nil)
	storeUpDesc = prom.NewDesc(namespace+"_store_up",
		"1 when the last read of the store's gauges succeeded, else 0.", nil, nil)
	storeReadDesc = prom.NewDesc(namespace+"_store_read_duration_seconds",
		"Wall time of the last read of the store's gauges.", nil, nil)
	storeErrorsDesc = prom.NewDesc(namespace+"_store_read_errors_total",
		"Scrape-time reads of the store's gauges that failed or timed out.", nil, nil)
)

// taskStatuses lists every task status, reported even when zero.
var taskStatuses = []task.Status{task.Working, task.InputRequired, task.Completed, task.Failed, task.Cancelled}

// storeCollector reads its source at Collect, at most once per
// MinInterval; mu serializes reads, so concurrent scrapes cost one.
type storeCollector struct {
	src  backend.GaugeSource
	opts StoreOptions

	mu      sync.Mutex
	read    time.Time // when last was read; zero before the first read
	last    backend.Gauges
	lastErr error
	took    time.Duration
	errors  int // reads that failed
}

func (c *storeCollector) Describe(ch chan<- *prom.Desc) {
	for _, d := range []*prom.Desc{storeTasksDesc, storeJobsDesc, storeQueueJobsDesc, storeOldestDesc, storeSessionsDesc, storeUpDesc, storeReadDesc, storeErrorsDesc} {
		ch <- d
	}
}

func (c *storeCollector) Collect(ch chan<- prom.Metric) {
	snap, took, errs, err := c.snapshot()
	ch <- prom.MustNewConstMetric(storeReadDesc, prom.GaugeValue, took.Seconds())
	ch <- prom.MustNewConstMetric(storeErrorsDesc, prom.CounterValue, float64(errs))
	if err != nil {
		ch <- prom.MustNewConstMetric(storeUpDesc, prom.GaugeValue, 0)
		return
	}
	ch <- prom.MustNewConstMetric(storeUpDesc, prom.GaugeValue, 1)
	for _, s := range taskStatuses {
		ch <- prom.MustNewConstMetric(storeTasksDesc, prom.GaugeValue, float64(snap.Tasks[s]), string(s))
	}
	for job, n := range c.jobSeries(snap.Jobs) {
		// A kind that is not a valid label value (the stores refuse
		// invalid UTF-8, so only a row written by other means) is left
		// out rather than failing the scrape.
		if m, err := prom.NewConstMetric(storeJobsDesc, prom.GaugeValue, float64(n), job.Kind, string(job.State)); err == nil {
			ch <- m
		}
	}
	for q, n := range queueSeries(snap.Jobs) {
		// Queue names are ASCII (backend.CheckQueue); a row written by
		// other means that is no label value is left out.
		if m, err := prom.NewConstMetric(storeQueueJobsDesc, prom.GaugeValue, float64(n), q.Queue, string(q.State)); err == nil {
			ch <- m
		}
	}
	ch <- prom.MustNewConstMetric(storeOldestDesc, prom.GaugeValue, snap.OldestAvailable.Seconds())
	ch <- prom.MustNewConstMetric(storeSessionsDesc, prom.GaugeValue, float64(snap.Sessions))
}

// snapshot returns the last read if it is recent enough, else reads the
// source under the Timeout; errs counts the failed reads so far.
func (c *storeCollector) snapshot() (snap backend.Gauges, took time.Duration, errs int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if !c.read.IsZero() && c.opts.MinInterval > 0 && now.Sub(c.read) < c.opts.MinInterval {
		return c.last, c.took, c.errors, c.lastErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.Timeout)
	defer cancel()
	start := time.Now()
	snap, err = c.src.Gauges(ctx)
	c.took = time.Since(start)
	c.read, c.last, c.lastErr = now, snap, err
	if err != nil {
		c.errors++
		c.opts.Logger.Warn("reading the store's gauges failed", "err", err)
	}
	return snap, c.took, c.errors, err
}

// jobSeries returns the value of every job series: each state of the
// configured kinds and of the kinds found, up to MaxKinds kinds, and the
// rest under otherKind.
func (c *storeCollector) jobSeries(jobs map[backend.JobKey]int) map[backend.JobKey]int {
	kinds := slices.Clone(c.opts.Kinds)
	known := map[string]bool{}
	for _, k := range kinds {
		known[k] = true
	}
	var found []string
	for j := range jobs {
		if !known[j.Kind] {
			known[j.Kind] = true
			found = append(found, j.Kind)
		}
	}
	slices.Sort(found)
	kinds = append(kinds, found...)
	own := map[string]bool{}
	for _, k := range kinds[:min(len(kinds), c.opts.MaxKinds)] {
		own[k] = true
	}
	out := map[backend.JobKey]int{}
	for k := range own {
		for _, s := range backend.JobStates {
			out[backend.JobKey{Kind: k, State: s}] = 0
		}
	}
	overflow := len(kinds) > c.opts.MaxKinds
	if overflow {
		for _, s := range backend.JobStates {
			out[backend.JobKey{Kind: otherKind, State: s}] = 0
		}
	}
	for j, n := range jobs {
		if !own[j.Kind] {
			j.Kind = otherKind
		}
		j.Queue = "" // summed over the queues: see queueSeries
		out[j] += n
	}
	return out
}

// MaxQueueSeries bounds the queues of taskwire_store_queue_jobs: the
// queues found in the store, in name order, up to this many, each with
// every state; the jobs of the rest count under the queue "other".
const MaxQueueSeries = 32

// queueSeries returns the value of every queue series: the jobs summed
// over their kinds by queue and state.
func queueSeries(jobs map[backend.JobKey]int) map[backend.JobKey]int {
	seen := map[string]bool{}
	var queues []string
	for j := range jobs {
		if !seen[j.Queue] {
			seen[j.Queue] = true
			queues = append(queues, j.Queue)
		}
	}
	slices.Sort(queues)
	own := map[string]bool{}
	for _, q := range queues[:min(len(queues), MaxQueueSeries)] {
		own[q] = true
	}
	if len(queues) > MaxQueueSeries {
		own[otherKind] = true
	}
	out := map[backend.JobKey]int{}
	for q := range own {
		for _, s := range backend.JobStates {
			out[backend.JobKey{Queue: q, State: s}] = 0
		}
	}
	for j, n := range jobs {
		k := backend.JobKey{Queue: j.Queue, State: j.State}
		if !own[j.Queue] {
			k.Queue = otherKind
		}
		out[k] += n
	}
	return out
}
