package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// Options configure a Runtime. Zero values mean the defaults given on each
// field; negative durations and counts are errors.
type Options struct {
	// Store is the job side of the durable store the runtime claims jobs
	// from: a backend.Store's Jobs(). Required. The runtime also uses the
	// optional backend.BatchCompleter, backend.ProgressReporter,
	// backend.Checkpointer and backend.Pruner when Store implements them.
	Store backend.JobStore
	// Events, when set, is the store's task-change publisher. Hints wake the
	// idle claim loop early and make a running job check its task's cancel
	// intent at once instead of at the next heartbeat. Without it the
	// runtime relies on PollInterval and HeartbeatEvery alone.
	Events task.EventPublisher
	// Name identifies this worker in claims, for diagnostics. Default
	// "<hostname>-<pid>". It must be valid UTF-8 of at most
	// MaxWorkerNameBytes bytes without control characters (PostgreSQL
	// text cannot hold a NUL byte, and the name is shown to operators).
	Name string

	// Concurrency bounds the handlers running at once, of every queue. Default
	// 10, or the sum of the queues' MaxWorkers when Queues is set. A job
	// whose handler has returned and whose completion waits for its batch
	// to commit no longer counts; the completions waiting are bounded by
	// Concurrency too.
	Concurrency int
	// Queues, when set, names the queues the runtime serves, each with its
	// own bound on running handlers (QueueConfig.MaxWorkers), all within
	// Concurrency: the runtime claims the jobs of the kinds whose handler
	// names one of these queues (WithQueue), and leaves the jobs of the
	// other handlers' queues to other runtimes. Nil (the default) serves
	// every queue the handlers name, all sharing Concurrency. New refuses
	// an empty map, more than MaxQueues queues, a name backend.CheckQueue
	// refuses, and a MaxWorkers below 1 or above a Concurrency that is
	// set; Run refuses a queue no handler names. The runtime claims for
	// the queues with free slots at once, in one statement, when the
	// store is a backend.QueuesClaimer (the stores of this module are),
	// and from each apart otherwise, so that an idle runtime polls each of
	// its queues every PollInterval.
	Queues map[string]QueueConfig
	// ClaimBatch bounds the jobs taken by one claim; each claim asks for at
	// most the number of free handler slots. Default Concurrency; it must
	// not exceed Concurrency.
	ClaimBatch int
	// Lease is how long a claim lasts without a heartbeat. Default 30 s.
	Lease time.Duration
	// HeartbeatEvery is the heartbeat period of a running job; it must be
	// shorter than Lease. Default Lease/3.
	HeartbeatEvery time.Duration
	// PollInterval is how long the claim loop sleeps after a claim that
	// returned nothing, unless an event hint or a freed slot wakes it
	// first. Default 500 ms.
	PollInterval time.Duration

	// ProgressInterval is the shortest time between two progress writes
	// of one job (see Job.ReportProgress). Default
	// DefaultProgressInterval; values below 10 ms are errors.
	ProgressInterval time.Duration

	// RescueEvery is the period of Store.RescueExpired passes; one pass
	// also runs when Run starts. Default Lease/2.
	RescueEvery time.Duration
	// RescueBatch is the limit of one RescueExpired call, and of one
	// InstanceHold.RescueDead call. Default 100.
	RescueBatch int
	// DisableFastRecovery turns off the rescue of a dead worker's jobs by
	// its liveness, which the runtime otherwise uses when Store is a
	// backend.LivenessRescuer: Run takes an instance hold, names it in
	// every claim, and every FastRescueEvery takes the running jobs of
	// instances whose hold has ended (a process that was killed or
	// crashed), without waiting for their leases to expire. Turn it off
	// where the hold cannot work: store/postgres behind a pooler that
	// does not keep sessions (PgBouncer in transaction mode), where the
	// dead look alive and the passes only cost queries. Jobs are then
	// rescued by lease expiry alone, as they are in any case when the
	// hold cannot be taken (Run logs why) or the dead worker's liveness
	// is in doubt.
	DisableFastRecovery bool
	// FastRescueEvery is the period of the passes that rescue the jobs
	// of dead instances (see DisableFastRecovery); one pass also runs
	// when Run starts, so that a node that restarts takes back the jobs
	// of its dead predecessor on SQLite at once. Each pass is one cheap
	// query when no instance died. Default DefaultFastRescueEvery.
	FastRescueEvery time.Duration
	// MaxInterruptedRuns bounds the runs of one job that end without an
	// outcome because their lease expired: the process crashed or was
	// killed, lost the database, or stalled past its lease. Such runs do
	// not use up the job's MaxAttempts, which count handler failures; the
	// rescue that counts the MaxInterruptedRuns-th fails the task (a job
	// that crashes its process every time is a poison pill). Default
	// DefaultMaxInterruptedRuns.
	MaxInterruptedRuns int
	// CleanupEvery is the period of Store.DeleteExpired passes; one pass
	// also runs when Run starts. Default 1 min.
	CleanupEvery time.Duration
	// CleanupBatch is the limit of one DeleteExpired call. Default 500.
	// It also bounds each call of the pruning passes (see backend.Pruner).
	CleanupBatch int
	// OutboxRetention is how long outbox rows are kept when the store is a
	// backend.Pruner: longer than any outage a listener of another node should
	// bridge by catching up from the outbox. Default 1 h; negative keeps
	// the outbox unpruned.
	OutboxRetention time.Duration
	// JobRetention is how long the job rows of finished tasks are kept
	// when the store is a backend.Pruner, for operators to inspect their attempt,
	// failure and interrupted-run counts. Default 1 h; negative keeps
	// them unpruned.
	JobRetention time.Duration

	// Backoff returns the delay before the next attempt after the given
	// number of failures (1 after the first). It must be safe for
	// concurrent use; negative results count as zero. Default
	// DefaultBackoff.
	Backoff func(failures int) time.Duration
	// RetryWindow is how long the failures of a job that reports an
	// infrastructure fault (Unavailable) are retried at least: such a job
	// fails only when it has used its MaxAttempts and its first failure
	// was RetryWindow or more ago, so that a database or service that is
	// down for less than RetryWindow delays its tasks without failing
	// them. Other handler failures are bounded by MaxAttempts alone.
	// Default DefaultRetryWindow; negative values are errors.
	RetryWindow time.Duration
	// ShutdownGrace is how long Run waits, once its context is done, for
	// running handlers to return by themselves before it cancels their
	// contexts (cause ErrShuttingDown). Default 10 s.
	ShutdownGrace time.Duration

	// Logger receives operational messages. Nil discards them. Log lines
	// carry the job kind, the attempt and the text of the error at hand
	// (bounded to 1,000 bytes), never task IDs, arguments or results: in
	// a handler's error text the task ID and the argument strings are
	// replaced by placeholders (see "Logs and metrics" in the package
	// doc). Keep secrets, and values derived from arguments, out of the
	// errors handlers return.
	Logger *slog.Logger
	// Metrics receives counters with bounded labels. Nil discards them.
	Metrics Metrics
	// Tracer, when set, traces every run of a job, linked to the request
	// that created its task (package tracing implements it with
	// OpenTelemetry). Nil traces nothing, at no cost.
	Tracer Tracer
	// Now overrides the clock passed to the store (claim, rescue and
	// cleanup times, retry run-at times) and used for local lease
	// deadlines. Timers always come from package time, so tests that
	// need fake timers run the runtime inside a testing/synctest bubble.
	Now func() time.Time
}

// Option defaults.
const (
	defaultConcurrency   = 10
	defaultLease         = 30 * time.Second
	defaultPollInterval  = 500 * time.Millisecond
	defaultRescueBatch   = 100
	defaultCleanupEvery  = time.Minute
	defaultCleanupBatch  = 500
	defaultShutdownGrace = 10 * time.Second
	minProgressInterval  = 10 * time.Millisecond
	// DefaultFastRescueEvery is the default Options.FastRescueEvery:
	// store/postgres counts an instance dead at the second pass that
	// finds its lock free, so a killed worker's jobs are available again
	// within about two seconds of its death (1 to 2 periods, and the
	// time the server takes to end the session).
	DefaultFastRescueEvery = time.Second
	// DefaultMaxInterruptedRuns is the default Options.MaxInterruptedRuns:
	// a job survives that many crashes, less one, of the processes running
	// it.
	DefaultMaxInterruptedRuns = 20
	// DefaultRetryWindow is the default Options.RetryWindow: with
	// DefaultBackoff, whose waits reach 5 minutes, a job that keeps
	// reporting Unavailable is tried about every 2.5 to 5 minutes once
	// its first ten failures are past, and fails at the first failure
	// after half an hour.
	DefaultRetryWindow = 30 * time.Minute
	// MaxWorkerNameBytes bounds Options.Name.
	MaxWorkerNameBytes = 256
	// maxMaintenanceRounds bounds the back-to-back calls of one
	// maintenance pass when every call returns a full batch.
	maxMaintenanceRounds = 10
)

// checkWorkerName reports why name cannot be stored with a claim, or nil.
// Empty means the default.
func checkWorkerName(name string) error {
	switch {
	case len(name) > MaxWorkerNameBytes:
		return fmt.Errorf("worker: Options.Name must be at most %d bytes, got %d", MaxWorkerNameBytes, len(name))
	case !utf8.ValidString(name):
		return errors.New("worker: Options.Name must be valid UTF-8")
	case strings.ContainsFunc(name, unicode.IsControl):
		return errors.New("worker: Options.Name must not contain control characters")
	}
	return nil
}

// checkNonNegative refuses a negative count or duration among the
// options.
func (o Options) checkNonNegative() error {
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"Concurrency", int64(o.Concurrency)}, {"ClaimBatch", int64(o.ClaimBatch)},
		{"Lease", int64(o.Lease)}, {"HeartbeatEvery", int64(o.HeartbeatEvery)},
		{"PollInterval", int64(o.PollInterval)}, {"RescueEvery", int64(o.RescueEvery)},
		{"RescueBatch", int64(o.RescueBatch)}, {"CleanupEvery", int64(o.CleanupEvery)},
		{"CleanupBatch", int64(o.CleanupBatch)}, {"ShutdownGrace", int64(o.ShutdownGrace)},
		{"MaxInterruptedRuns", int64(o.MaxInterruptedRuns)}, {"ProgressInterval", int64(o.ProgressInterval)},
		{"RetryWindow", int64(o.RetryWindow)}, {"FastRescueEvery", int64(o.FastRescueEvery)},
	} {
		if c.v < 0 {
			return fmt.Errorf("worker: Options.%s must not be negative", c.name)
		}
	}
	return nil
}

// withDefaults validates o and fills in its defaults.
func (o Options) withDefaults() (Options, error) {
	if o.Store == nil {
		return o, errors.New("worker: Options.Store is required")
	}
	if err := o.checkNonNegative(); err != nil {
		return o, err
	}
	if err := checkWorkerName(o.Name); err != nil {
		return o, err
	}
	c, err := checkQueues(o.Queues, o.Concurrency)
	if err != nil {
		return o, err
	}
	o.Concurrency = c
	o.Queues = maps.Clone(o.Queues)
	if o.Name == "" {
		host, err := os.Hostname()
		if err != nil || host == "" {
			host = "worker"
		}
		o.Name = host + "-" + strconv.Itoa(os.Getpid())
	}
	if o.Concurrency == 0 {
		o.Concurrency = defaultConcurrency
	}
	if o.ClaimBatch == 0 {
		o.ClaimBatch = o.Concurrency
	}
	if o.ClaimBatch > o.Concurrency {
		return o, errors.New("worker: Options.ClaimBatch must not exceed Concurrency")
	}
	if o.Lease == 0 {
		o.Lease = defaultLease
	}
	if o.HeartbeatEvery == 0 {
		o.HeartbeatEvery = o.Lease / 3
	}
	if o.HeartbeatEvery <= 0 || o.HeartbeatEvery >= o.Lease {
		return o, errors.New("worker: Options.HeartbeatEvery must be positive and shorter than Lease")
	}
	if o.PollInterval == 0 {
		o.PollInterval = defaultPollInterval
	}
	if o.ProgressInterval == 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.ProgressInterval < minProgressInterval {
		return o, errors.New("worker: Options.ProgressInterval must be at least 10ms")
	}
	if o.RescueEvery == 0 {
		o.RescueEvery = o.Lease / 2
	}
	if o.FastRescueEvery == 0 {
		o.FastRescueEvery = DefaultFastRescueEvery
	}
	if o.RescueBatch == 0 {
		o.RescueBatch = defaultRescueBatch
	}
	if o.MaxInterruptedRuns == 0 {
		o.MaxInterruptedRuns = DefaultMaxInterruptedRuns
	}
	if o.CleanupEvery == 0 {
		o.CleanupEvery = defaultCleanupEvery
	}
	if o.OutboxRetention == 0 {
		o.OutboxRetention = defaultOutboxRetention
	}
	if o.JobRetention == 0 {
		o.JobRetention = defaultJobRetention
	}
	if o.CleanupBatch == 0 {
		o.CleanupBatch = defaultCleanupBatch
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.RetryWindow == 0 {
		o.RetryWindow = DefaultRetryWindow
	}
	if o.ShutdownGrace == 0 {
		o.ShutdownGrace = defaultShutdownGrace
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Metrics == nil {
		o.Metrics = nopMetrics{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o, nil
}

// Runtime claims jobs from Options.Store and runs the handlers registered
// for their kinds. Register handlers with AddHandler or AddRawHandler, then
// call Run once. A Runtime is safe for concurrent use.
type Runtime struct {
	opts    Options
	log     *slog.Logger
	metrics Metrics
	// queueMetrics is metrics when it is a QueueMetrics, else nil.
	queueMetrics QueueMetrics
	validator    *task.Validator

	// slots is the handler semaphore: one token per running job. Only the
	// claim loop acquires; finishing jobs release and signal wake.
	slots chan struct{}
	// wake (capacity 1) wakes the claim loop: a slot was freed, a hint
	// arrived, or a rescue made jobs available.
	wake chan struct{}

	// completer batches completions when the store supports it; nil
	// otherwise. Set by Run before any job starts.
	completer *completer
	// checkpoints batches checkpoint writes when the store keeps them;
	// nil otherwise. Set by Run before any job starts.
	checkpoints *batcher[backend.CheckpointWrite]
	// hold is the runtime's instance hold (Options.DisableFastRecovery);
	// nil when it has none. Set by Run before any claim.
	hold backend.InstanceHold

	mu      sync.Mutex
	started bool
	// handlers are the registered handlers by kind. Before Run they are
	// changed in place under mu; once Run has started, a registration
	// (Runtime.AddRawHandler) replaces the map, under mu, and publishes
	// it in table, which the jobs read without locking.
	handlers map[string]handler
	table    atomic.Pointer[map[string]handler]
	queues   []*queueState // the served queues, set at start
	// hinted is set by an event hint or a rescue: every queue may have
	// jobs to claim.
	hinted  atomic.Bool
	running map[string][]*leaseKeeper // running jobs by task, for hints
	// stopCause, once set by stopJobs, cancels every running job and every
	// job that starts afterwards.
	stopCause error
}

// New validates opts, fills in the defaults and returns a Runtime with no
// handlers.
func New(opts Options) (*Runtime, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	qm, _ := o.Metrics.(QueueMetrics)
	return &Runtime{
		opts:         o,
		log:          o.Logger,
		metrics:      o.Metrics,
		queueMetrics: qm,
		validator:    task.NewValidator(task.ValidatorOptions{}),
		slots:        make(chan struct{}, o.Concurrency),
		wake:         make(chan struct{}, 1),
		handlers:     map[string]handler{},
		running:      map[string][]*leaseKeeper{},
	}, nil
}

// Run claims and runs jobs until ctx is done, then drains and returns nil.
//
// While ctx is live, Run keeps up to Options.Concurrency handlers busy,
// heartbeats their leases, and runs the rescue and cleanup passes. When ctx
// is done it stops claiming and the maintenance passes, waits up to
// ShutdownGrace for running handlers, then cancels the contexts of the rest
// (cause ErrShuttingDown) and releases their jobs with Store.Release once
// they return: a task is never failed or cancelled because a process stops.
// A handler that ignores its context therefore delays Run's return. Every
// goroutine the runtime starts has ended when Run returns. Handler contexts
// carry ctx's values, but not its cancellation.
//
// Run fails at once, without claiming, when it was called before or when no
// handler is registered (claiming with no kinds would take every kind).
// Store errors do not end Run: they are logged and the loops go on.
func (rt *Runtime) Run(ctx context.Context) error {
	rt.mu.Lock()
	if rt.started {
		rt.mu.Unlock()
		return errors.New("worker: Run may be called only once")
	}
	if len(rt.handlers) == 0 {
		rt.mu.Unlock()
		return errors.New("worker: no handlers registered")
	}
	qs, err := rt.servedQueues()
	if err != nil {
		rt.mu.Unlock()
		return err
	}
	rt.started = true
	rt.queues = qs
	rt.table.Store(&rt.handlers)
	rt.mu.Unlock()

	// base outlives ctx: final writes and releases during the drain use it.
	base := context.WithoutCancel(ctx)

	if rt.opts.Events != nil {
		unsubscribe := rt.opts.Events.Subscribe(rt.hint)
		defer unsubscribe()
	}

	rt.hold = rt.holdInstance(ctx)
	var maint sync.WaitGroup
	maint.Go(func() {
		rt.maintain(ctx, rt.opts.RescueEvery, TransitionRescued, rt.opts.RescueBatch, rt.rescue)
	})
	if rt.hold != nil {
		maint.Go(func() {
			rt.maintain(ctx, rt.opts.FastRescueEvery, TransitionRescued, rt.opts.RescueBatch, rt.rescueDead)
		})
	}
	maint.Go(func() {
		rt.maintain(ctx, rt.opts.CleanupEvery, TransitionExpiredDeleted, rt.opts.CleanupBatch, rt.opts.Store.DeleteExpired)
	})
	if p, ok := rt.opts.Store.(backend.Pruner); ok {
		if rt.opts.OutboxRetention > 0 {
			maint.Go(func() {
				rt.maintain(ctx, rt.opts.CleanupEvery, TransitionOutboxPruned, rt.opts.CleanupBatch, rt.pruneOutbox(p))
			})
		}
		if rt.opts.JobRetention > 0 {
			maint.Go(func() {
				rt.maintain(ctx, rt.opts.CleanupEvery, TransitionJobPruned, rt.opts.CleanupBatch, rt.pruneJobs(p))
			})
		}
	}

	if bc, ok := rt.opts.Store.(backend.BatchCompleter); ok {
		rt.completer = newCompleter(bc, rt.opts.Concurrency)
	}
	if cp, ok := rt.opts.Store.(backend.Checkpointer); ok {
		rt.checkpoints = newCheckpointer(cp, rt.opts.Concurrency)
	}
	var jobs sync.WaitGroup
	rt.claimLoop(ctx, base, &jobs)
	rt.drain(&jobs)
	if rt.completer != nil {
		rt.completer.close() // every job has finished: no more submissions
	}
	if rt.checkpoints != nil {
		rt.checkpoints.close()
	}
	maint.Wait()
	if rt.hold != nil {
		// Every job was released or finished: none is left to rescue.
		if err := rt.hold.Close(); err != nil {
			rt.log.Warn("worker: releasing the instance hold failed", "err", errText(err))
		}
	}
	return nil
}

// drain waits for running jobs, cancelling them after the grace period.
func (rt *Runtime) drain(jobs *sync.WaitGroup) {
	done := make(chan struct{})
	go func() {
		jobs.Wait()
		close(done)
	}()
	grace := time.NewTimer(rt.opts.ShutdownGrace)
	defer grace.Stop()
	select {
	case <-done:
	case <-grace.C:
		rt.log.Warn("worker: shutdown grace elapsed; cancelling running handlers")
		rt.stopJobs(ErrShuttingDown)
		<-done
	}
}

// releaseUnstarted gives back a job that was claimed but is not run.
func (rt *Runtime) releaseUnstarted(base context.Context, j backend.JobRow, claimedAt time.Time) {
	kind := rt.kindLabel(j.Kind)
	rt.metrics.JobTransition(kind, TransitionClaimed)
	rt.release(base, j, kind, claimedAt.Add(rt.opts.Lease))
}

// maintain runs a maintenance pass at start and then every period until ctx
// is done.
func (rt *Runtime) maintain(ctx context.Context, every time.Duration, what Transition, batch int,
	pass func(ctx context.Context, now time.Time, limit int) (int, error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rt.maintenancePass(ctx, what, batch, pass)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// maintenancePass calls pass until it returns less than a full batch (at
// most maxMaintenanceRounds times).
func (rt *Runtime) maintenancePass(ctx context.Context, what Transition, batch int,
	pass func(ctx context.Context, now time.Time, limit int) (int, error)) {
	for round := 0; round < maxMaintenanceRounds && ctx.Err() == nil; round++ {
		cctx, cancel := context.WithTimeout(ctx, rt.opts.Lease)
		n, err := pass(cctx, rt.now(), batch)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				rt.log.Error("worker: maintenance pass failed", "pass", string(what), "err", errText(err))
			}
			return
		}
		if n > 0 {
			rt.metrics.Maintenance(what, n)
			if what == TransitionRescued {
				rt.hinted.Store(true)
				rt.signalWake()
			}
		}
		if n < batch {
			return
		}
	}
}

// rescue is one Store.RescueExpired call.
func (rt *Runtime) rescue(ctx context.Context, now time.Time, limit int) (int, error) {
	return rt.opts.Store.RescueExpired(ctx, backend.RescueParams{Now: now, Limit: limit, MaxInterruptedRuns: rt.opts.MaxInterruptedRuns})
}

// holdInstance takes the runtime's instance hold, or returns nil when fast
// recovery is off or the store cannot hold one (then logged, unless the
// store does not support it in its configuration).
func (rt *Runtime) holdInstance(ctx context.Context) backend.InstanceHold {
	lr, ok := rt.opts.Store.(backend.LivenessRescuer)
	if !ok || rt.opts.DisableFastRecovery {
		return nil
	}
	hctx, cancel := context.WithTimeout(ctx, rt.opts.Lease)
	defer cancel()
	h, err := lr.HoldInstance(hctx)
	if err != nil {
		if !errors.Is(err, backend.ErrLivenessUnsupported) {
			rt.log.Warn("worker: no instance hold; the jobs of a dead worker wait for their leases", "err", errText(err))
		}
		return nil
	}
	return h
}

// rescueDead is one InstanceHold.RescueDead call.
func (rt *Runtime) rescueDead(ctx context.Context, now time.Time, limit int) (int, error) {
	return rt.hold.RescueDead(ctx, backend.RescueParams{Now: now, Limit: limit, MaxInterruptedRuns: rt.opts.MaxInterruptedRuns})
}

// hint is the event subscriber: it must not block.
func (rt *Runtime) hint(taskID string) {
	rt.hinted.Store(true)
	rt.signalWake()
	rt.mu.Lock()
	defer rt.mu.Unlock()
	for _, k := range rt.running[taskID] {
		k.hinted()
	}
}

// signalWake wakes the claim loop without blocking.
func (rt *Runtime) signalWake() {
	select {
	case rt.wake <- struct{}{}:
	default:
	}
}

// track registers a running job's keeper for hints and shutdown, and
// returns its untrack func. A job tracked after stopJobs is cancelled at
// once.
func (rt *Runtime) track(taskID string, k *leaseKeeper) func() {
	rt.mu.Lock()
	rt.running[taskID] = append(rt.running[taskID], k)
	if rt.stopCause != nil {
		k.cancel(rt.stopCause)
	}
	rt.mu.Unlock()
	return func() {
		rt.mu.Lock()
		defer rt.mu.Unlock()
		rs := slices.DeleteFunc(rt.running[taskID], func(x *leaseKeeper) bool { return x == k })
		if len(rs) == 0 {
			delete(rt.running, taskID)
		} else {
			rt.running[taskID] = rs
		}
	}
}

// stopJobs cancels the handler contexts of every running job, and of every
// job that starts afterwards, with cause. (Handler contexts do not derive
// from a common cancellable parent: registering a thousand children on one
// would serialise job starts and ends on its lock.)
func (rt *Runtime) stopJobs(cause error) {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	rt.stopCause = cause
	for _, ks := range rt.running {
		for _, k := range ks {
			k.cancel(cause)
		}
	}
}

// handler returns the handler of kind, once Run has started.
func (rt *Runtime) handler(kind string) (handler, bool) {
	h, ok := (*rt.table.Load())[kind]
	return h, ok
}

// now is the runtime's clock.
func (rt *Runtime) now() time.Time { return rt.opts.Now() }

// kindLabel bounds the kind metric label: a registered kind or
// unknownKind. Its callers run once Run has started.
func (rt *Runtime) kindLabel(kind string) string {
	if _, ok := rt.handler(kind); ok {
		return kind
	}
	return unknownKind
}
