package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
	"github.com/taskwire/taskwire/worker"
)

// countingMetrics is a worker.Metrics that counts transitions and closes
// done when the completions reach target.
type countingMetrics struct {
	target    int64
	completed atomic.Int64
	claimed   atomic.Int64
	done      chan struct{}
	once      sync.Once

	mu    sync.Mutex
	other map[string]int64 // every other transition and failure category
}

func newCountingMetrics(target int) *countingMetrics {
	return &countingMetrics{target: int64(target), done: make(chan struct{}), other: map[string]int64{}}
}

func (m *countingMetrics) JobTransition(_ string, t worker.Transition) {
	switch t {
	case worker.TransitionCompleted:
		if m.completed.Add(1) == m.target {
			m.once.Do(func() { close(m.done) })
		}
	case worker.TransitionClaimed:
		m.claimed.Add(1)
	default:
		m.count(string(t))
	}
}

func (m *countingMetrics) JobFailure(_ string, c worker.FailureCategory) {
	m.count("failure:" + string(c))
}
func (m *countingMetrics) HandlerDuration(string, time.Duration) {}
func (m *countingMetrics) Maintenance(t worker.Transition, n int) {
	m.mu.Lock()
	m.other["maintenance:"+string(t)] += int64(n)
	m.mu.Unlock()
}

func (m *countingMetrics) count(k string) {
	m.mu.Lock()
	m.other[k]++
	m.mu.Unlock()
}

// anomalies lists every transition other than claimed and completed.
func (m *countingMetrics) anomalies() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.other) == 0 {
		return "none"
	}
	var parts []string
	for k, v := range m.other {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	return strings.Join(parts, " ")
}

// enqueueN creates n tasks with store.Enqueue, one per transaction, from
// the given number of goroutines, and returns how long it took. With
// queues above 1 the tasks go round-robin to that many queues, each of a
// kind of its own (queueKind).
func enqueueN(ctx context.Context, st backend.Enqueuer, n, goroutines, queues int) (time.Duration, error) {
	ccs, opts, err := queueCreations(queues)
	if err != nil {
		return 0, err
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, goroutines)
	start := time.Now()
	for range goroutines {
		wg.Go(func() {
			for i := next.Add(1); i <= int64(n); i = next.Add(1) {
				q := int(i) % len(ccs)
				if _, err := st.Enqueue(ctx, ccs[q], opts[q]); err != nil {
					errc <- err
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errc)
	if err := <-errc; err != nil {
		return elapsed, fmt.Errorf("enqueue: %w", err)
	}
	return elapsed, nil
}

// enqueueBatchN creates n tasks with store.EnqueueBatch in batches of size
// from one goroutine, and returns how long it took.
func enqueueBatchN(ctx context.Context, st backend.Enqueuer, n, size, queues int) (time.Duration, error) {
	be, ok := st.(backend.BatchEnqueuer)
	if !ok {
		return 0, errors.New("the store does not implement backend.BatchEnqueuer")
	}
	ccs, opts, err := queueCreations(queues)
	if err != nil {
		return 0, err
	}
	items := make([]backend.BatchItem, 0, size)
	start := time.Now()
	for done := 0; done < n; done += len(items) {
		items = items[:0]
		for i := range min(size, n-done) {
			q := (done + i) % len(ccs)
			items = append(items, backend.BatchItem{Creation: ccs[q], Options: opts[q]})
		}
		if _, err := be.EnqueueBatch(ctx, items); err != nil {
			return 0, fmt.Errorf("enqueue batch: %w", err)
		}
	}
	return time.Since(start), nil
}

// startProfile starts a CPU profile of this process in cfg.ProfileDir, if
// set; the returned function stops it.
func startProfile(cfg config, name string, out io.Writer) (func(), error) {
	if cfg.ProfileDir == "" {
		return func() {}, nil
	}
	if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
		return nil, err
	}
	path := filepath.Join(cfg.ProfileDir, name+".pprof")
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		fmt.Fprintf(out, "   CPU profile of this process: %s\n", path)
	}, nil
}

// workerRun is the outcome of one run of a worker phase.
type workerRun struct {
	figs      []figure
	rate      float64       // worker throughput, jobs/s
	cpuPerJob time.Duration // CPU time of this process per job, while the worker ran
}

// runWorkerRun is one run of pg-worker or sqlite-worker: pre-create N
// tasks with store.Enqueue, then measure how fast a worker.Runtime with a
// no-op handler completes them all. With progress, the handler makes one
// progress report per job.
func runWorkerRun(ctx context.Context, cfg config, kind string, progress bool, out io.Writer) (workerRun, error) {
	n := cfg.N
	if kind == "sqlite" {
		n = cfg.SQLiteN
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	tgt, err := openStore(ctx, cfg, kind)
	if err != nil {
		return workerRun{}, err
	}
	defer func() {
		if err := tgt.close(); err != nil {
			fmt.Fprintf(out, "   !!! cleanup: %v\n", err)
		}
	}()
	fmt.Fprintf(out, "   store: %s %s\n", kind, tgt.Where)
	queues := 1 // the jobs go to the default queue, as they always did
	if progress && cfg.queuePhase {
		queues = cfg.Queues
	}

	var enqDur time.Duration
	var how string
	if cfg.EnqueueBatch > 0 {
		enqDur, err = enqueueBatchN(ctx, tgt.Store, n, cfg.EnqueueBatch, queues)
		how = fmt.Sprintf("store.EnqueueBatch (batches of %d, one goroutine)", cfg.EnqueueBatch)
	} else {
		enqDur, err = enqueueN(ctx, tgt.Store, n, cfg.EnqueueGoroutines, queues)
		how = fmt.Sprintf("store.Enqueue (1 task/tx, %d goroutines)", cfg.EnqueueGoroutines)
	}
	if err != nil {
		return workerRun{}, err
	}
	enqRate := float64(n) / enqDur.Seconds()
	fmt.Fprintf(out, "   pre-created %d tasks with %s in %.2fs: %.0f tasks/s\n", n, how, enqDur.Seconds(), enqRate)
	// The worker gets a Store of its own, as a separate worker process
	// would; closing the first one also makes its backends report their
	// statistics before the snapshot.
	if err := tgt.reopen(ctx); err != nil {
		return workerRun{}, fmt.Errorf("reopen store: %w", err)
	}
	if kind == "postgres" && cfg.Analyze {
		if err := analyzeTables(ctx, cfg.pgURL(), tgt.Where, "tasks", "jobs", "outbox"); err != nil {
			return workerRun{}, err
		}
		fmt.Fprintf(out, "   ANALYZE tasks, jobs, outbox done before the worker starts\n")
	}
	var stats0 pgStats
	var tables0 tableStats
	if kind == "postgres" {
		if stats0, err = takePGStats(ctx, cfg.pgURL()); err != nil {
			return workerRun{}, err
		}
		if tables0, err = takeTableStats(ctx, cfg.pgURL(), tgt.Where); err != nil {
			return workerRun{}, err
		}
	}

	metrics := newCountingMetrics(n)
	var handled atomic.Int64
	var calls storeStats
	rt, err := worker.New(worker.Options{
		Store:         instrument(tgt.Store, &calls, cfg.WhatIfNoCancelRead),
		Events:        tgt.Store.EventPublisher(),
		Name:          "durablebench",
		Concurrency:   cfg.Concurrency,
		Queues:        queueConfigs(queues, cfg.Concurrency),
		ClaimBatch:    cfg.ClaimBatch,
		PollInterval:  cfg.PollInterval,
		ShutdownGrace: 5 * time.Second,
		Logger:        warnLogger(),
		Metrics:       metrics,
	})
	if err != nil {
		return workerRun{}, err
	}
	handler := func(_ context.Context, jc *worker.Job) (*mcp.CallToolResult, error) {
		handled.Add(1)
		switch {
		case progress && cfg.Checkpoint && cfg.CheckpointLater:
			if err := jc.CheckpointLater(1); err != nil {
				return nil, err
			}
		case progress && cfg.Checkpoint:
			if err := jc.Checkpoint(1); err != nil {
				return nil, err
			}
		case progress:
			if err := jc.ReportProgress("row 1 of 1", 1, 1); err != nil {
				return nil, err
			}
		}
		return noopResult(), nil
	}
	for q := range queues {
		kind, opts := benchKind, []worker.HandlerOption(nil)
		if queues > 1 {
			kind, opts = queueKind(q), []worker.HandlerOption{worker.WithQueue(queueName(q))}
		}
		if err := rt.AddRawHandler(kind, handler, opts...); err != nil {
			return workerRun{}, err
		}
	}
	var sampler *waitSampler
	if kind == "postgres" && cfg.Waits {
		if sampler, err = startWaitSampler(ctx, cfg.pgURL(), 20*time.Millisecond); err != nil {
			return workerRun{}, err
		}
	}
	profile := kind + "-worker"
	if cfg.queuePhase {
		profile = fmt.Sprintf("%s-queues-%d", kind, queues)
	} else if progress {
		profile += "-" + strings.ReplaceAll(cfg.variant(), " ", "-")
	}
	stopProfile, err := startProfile(cfg, profile, out)
	if err != nil {
		return workerRun{}, err
	}
	// The window starts on a collected heap, so that the garbage of the
	// pre-creation (and of an earlier run) is not collected inside it.
	runtime.GC()
	cpu0 := takeCPU()
	runCtx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	start := time.Now()
	runErr := make(chan error, 1)
	go func() { runErr <- rt.Run(runCtx) }()

	// Completions per second, for the timeline.
	var timeline []int64
	tick := time.NewTicker(time.Second)
	var last int64
	var waitErr error
wait:
	for {
		select {
		case <-metrics.done:
			break wait
		case <-tick.C:
			c := metrics.completed.Load()
			timeline = append(timeline, c-last)
			last = c
		case <-ctx.Done():
			waitErr = fmt.Errorf("only %d of %d tasks completed within -phase-timeout %s", metrics.completed.Load(), n, cfg.PhaseTimeout)
			break wait
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	var ours []int
	if kind == "postgres" {
		if ours, err = benchBackendPIDs(ctx, cfg.pgURL()); err != nil {
			return workerRun{}, err
		}
	}
	cpu := takeCPU().since(cpu0, ours...)
	if ours == nil {
		cpu.KnowOurs = false
	}
	stopProfile()
	waits := ""
	if sampler != nil {
		waits = sampler.finish()
	}
	stopRun()
	if err := <-runErr; err != nil {
		return workerRun{}, fmt.Errorf("worker Run: %w", err)
	}
	if waitErr != nil {
		return workerRun{}, waitErr
	}
	if err := tgt.closeStore(); err != nil {
		return workerRun{}, err
	}
	perJob := ""
	if kind == "postgres" {
		stats, err := takePGStats(ctx, cfg.pgURL())
		if err != nil {
			return workerRun{}, err
		}
		tables, err := takeTableStats(ctx, cfg.pgURL(), tgt.Where)
		if err != nil {
			return workerRun{}, err
		}
		perJob = stats.perJob(stats0, n, sampler.samples()+2) + "\n   " + tables.perJob(tables0, n)
	}
	rate := float64(n) / elapsed.Seconds()
	if cfg.WhatIfNoCancelRead {
		fmt.Fprintf(out, "   !!! WHAT-IF experiment: CancelRequested answered false without a database read (not taskwire's behaviour)\n")
	}
	fmt.Fprintf(out, "   worker (Concurrency %d, ClaimBatch %d, PollInterval %s, %s): %d tasks completed in %.2fs: %.0f jobs/s\n",
		cfg.Concurrency, cfg.ClaimBatch, cfg.PollInterval, fmtQueues(queues, cfg.Concurrency), n, elapsed.Seconds(), rate)
	fmt.Fprintf(out, "   completions per second: %s\n", fmtTimeline(timeline))
	fmt.Fprintf(out, "   %s\n", cpu)
	fmt.Fprintf(out, "   %s\n", cpu.perJob(n))
	if waits != "" {
		fmt.Fprintf(out, "   %s\n", waits)
	}
	if perJob != "" {
		fmt.Fprintf(out, "   %s\n", perJob)
	}
	fmt.Fprintf(out, "   %s\n", &calls)
	if t := calls.claimTrend(n); t != "" {
		fmt.Fprintf(out, "   %s\n", t)
	}
	fmt.Fprintf(out, "   handler runs %d, claims %d, other transitions: %s\n", handled.Load(), metrics.claimed.Load(), metrics.anomalies())

	vctx, vcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer vcancel()
	counts, err := tgt.statusCounts(vctx)
	if err != nil {
		return workerRun{}, fmt.Errorf("verify: %w", err)
	}
	fmt.Fprintf(out, "   verified in the database: %s\n", fmtCounts(counts))
	if counts[string(task.Completed)] != n || len(counts) != 1 {
		return workerRun{}, errors.New("verify: not every task completed exactly")
	}
	name := "taskwire " + kind
	handlerText := "no-op handler"
	if cfg.queuePhase {
		name += ", " + fmtQueues(queues, cfg.Concurrency)
	} else if progress && cfg.Checkpoint {
		name += " with " + cfg.variant() + "s"
		handlerText = "handler with one " + cfg.variant() + " per job"
		c, err := tgt.checkpointCounts(vctx)
		if err != nil {
			return workerRun{}, fmt.Errorf("verify checkpoints: %w", err)
		}
		fmt.Fprintf(out, "   verified in the database: %d of %d jobs carry their checkpoint; SaveCheckpoints calls %d for %d items\n",
			c, n, calls.checkpoints.calls.Load(), calls.checkpoints.items.Load())
		if c != n {
			return workerRun{}, errors.New("verify: a checkpoint was lost")
		}
	} else if progress {
		name += " with progress"
		handlerText = "handler with one progress report per job"
		p, err := tgt.progressCounts(vctx)
		if err != nil {
			return workerRun{}, fmt.Errorf("verify progress: %w", err)
		}
		fmt.Fprintf(out, "   verified in the database: %d of %d tasks carry their progress count; ReportProgress calls %d\n",
			p, n, calls.progress.calls.Load())
		if p != n {
			return workerRun{}, errors.New("verify: a progress report was lost")
		}
	}
	if cfg.WhatIfNoCancelRead {
		name += " WHAT-IF (no per-job cancel-intent read)"
	}
	if kind == "postgres" && cfg.Analyze {
		name += " (ANALYZE before work)"
	}
	phase := cfg.workerPhase(kind)
	figs := []figure{
		{Phase: phase, What: name + ": " + how + " pre-creation", Rate: enqRate, Unit: "tasks/s"},
		{Phase: phase, What: name + ": worker throughput, " + handlerText, Rate: rate, Unit: "jobs/s",
			Note: fmt.Sprintf("N=%d, Concurrency %d, ClaimBatch %d, PollInterval %s", n, cfg.Concurrency, cfg.ClaimBatch, cfg.PollInterval)},
		{Phase: phase, What: name + ": insert + work (pre-creation, then the worker)", Rate: float64(n) / (enqDur + elapsed).Seconds(),
			Unit: "jobs/s", Note: fmt.Sprintf("N=%d", n)},
	}
	return workerRun{figs: figs, rate: rate, cpuPerJob: cpu.Self / time.Duration(n)}, nil
}

// fmtTimeline renders per-second counts.
func fmtTimeline(t []int64) string {
	if len(t) == 0 {
		return "(under 1 s)"
	}
	parts := make([]string, len(t))
	for i, v := range t {
		parts[i] = fmt.Sprint(v)
	}
	return strings.Join(parts, " ")
}
