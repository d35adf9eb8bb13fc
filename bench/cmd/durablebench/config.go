package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/worker"
)

// allPhases are the phases in their run order.
var allPhases = []string{"pg-insert", "pg-worker", "river", "pg-e2e", "river-e2e", "sqlite-insert", "sqlite-worker", "sqlite-e2e",
	"pg-gateway-e2e", "sqlite-gateway-e2e", "pg-queues", "sqlite-queues"}

// config holds the flags of "durablebench run".
type config struct {
	Phases []string

	PGURL      string
	PGConns    int32
	SyncCommit string

	// Worker throughput (pg-worker, sqlite-worker, river).
	N                 int
	EnqueueGoroutines int
	EnqueueBatch      int
	Concurrency       int
	ClaimBatch        int
	PollInterval      time.Duration
	SQLiteN           int

	// River (river, river-e2e).
	RiverWorkers       int
	RiverFetchCooldown time.Duration
	RiverFetchPoll     time.Duration
	RiverInsertBatch   int

	// Creation rate (pg-insert, sqlite-insert).
	InsertGoroutines int
	InsertDuration   time.Duration
	InsertRounds     int

	// End to end over HTTP (pg-e2e, river-e2e, sqlite-e2e).
	E2EClients     int
	E2ETasks       int
	E2EPoll        time.Duration
	E2EConcurrency int
	E2EClaimBatch  int
	E2EWorkerPoll  time.Duration

	PhaseTimeout time.Duration
	ProfileDir   string
	Waits        bool
	TempDir      string

	WhatIfNoCancelRead bool
	Analyze            bool
	Progress           bool
	Checkpoint         bool
	CheckpointLater    bool
	ProgressRounds     int
	// Queues is the queue count of the pg-queues and sqlite-queues phases;
	// queuePhase is set while one of them runs.
	Queues     int
	queuePhase bool
}

// parseFlags parses the flags of "durablebench run".
func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("durablebench run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	phases := fs.String("phases", strings.Join(allPhases, ","), "comma-separated phases to run, in order: "+strings.Join(allPhases, ", ")+
		" (river-e2e: pg-e2e's clients and load against a net/http service that inserts River jobs with InsertTx and polls them with JobGet)")
	fs.StringVar(&c.PGURL, "pg-url", "postgres://postgres@127.0.0.1:5432/test", "PostgreSQL URL (loopback only); every phase uses a schema of its own and drops it")
	pgConns := fs.Int("pg-conns", 16, "connection pool size of the taskwire store, of River's pool (river-e2e: shared by its HTTP handlers and River client) and of the raw-insert pool")
	fs.StringVar(&c.SyncCommit, "sync-commit", "", "synchronous_commit for every PostgreSQL connection (on, off, ...); empty keeps the server's setting")

	fs.IntVar(&c.N, "n", 50000, "tasks (jobs) per PostgreSQL worker-throughput phase, taskwire and River alike")
	fs.IntVar(&c.SQLiteN, "sqlite-n", 50000, "tasks per SQLite worker-throughput phase")
	fs.IntVar(&c.EnqueueGoroutines, "enqueue-goroutines", 16, "goroutines that pre-create the worker phase's tasks with store.Enqueue")
	fs.IntVar(&c.EnqueueBatch, "enqueue-batch", 0, "when positive, pre-create the worker phase's tasks with store.EnqueueBatch in batches of this size from one goroutine (as River's InsertMany), instead of store.Enqueue")
	fs.IntVar(&c.Concurrency, "concurrency", 1000, "worker.Options.Concurrency of the worker phases")
	fs.IntVar(&c.ClaimBatch, "claim-batch", 500, "worker.Options.ClaimBatch of the worker phases")
	fs.DurationVar(&c.PollInterval, "poll", 10*time.Millisecond, "worker.Options.PollInterval of the worker phases")

	fs.IntVar(&c.RiverWorkers, "river-workers", 1000, "River QueueConfig.MaxWorkers (river, river-e2e)")
	fs.DurationVar(&c.RiverFetchCooldown, "river-fetch-cooldown", 5*time.Millisecond, "River Config.FetchCooldown (river, river-e2e)")
	fs.DurationVar(&c.RiverFetchPoll, "river-fetch-poll", 20*time.Millisecond, "River Config.FetchPollInterval (river, river-e2e; river-e2e also wakes on River's LISTEN/NOTIFY insert notifications)")
	fs.IntVar(&c.RiverInsertBatch, "river-insert-batch", 1000, "jobs per River InsertMany call")

	fs.IntVar(&c.InsertGoroutines, "insert-goroutines", 8, "goroutines of the creation-rate phases, taskwire and raw alike")
	fs.DurationVar(&c.InsertDuration, "insert-duration", 5*time.Second, "duration of each creation-rate measurement")
	fs.IntVar(&c.InsertRounds, "insert-rounds", 2, "interleaved rounds (taskwire, raw) of each creation-rate phase")

	fs.IntVar(&c.E2EClients, "e2e-clients", 32, "concurrent HTTP clients of the e2e phases (river-e2e too)")
	fs.IntVar(&c.E2ETasks, "e2e-tasks", 5000, "tasks created (and awaited) per e2e phase (river-e2e: jobs)")
	fs.DurationVar(&c.E2EPoll, "e2e-poll", 5*time.Millisecond, "interval between a client's tasks/get polls of one task (river-e2e: GET /jobs/{id})")
	fs.IntVar(&c.E2EConcurrency, "e2e-concurrency", 256, "worker.Options.Concurrency of the e2e server")
	fs.IntVar(&c.E2EClaimBatch, "e2e-claim-batch", 64, "worker.Options.ClaimBatch of the e2e server")
	fs.DurationVar(&c.E2EWorkerPoll, "e2e-worker-poll", 10*time.Millisecond, "worker.Options.PollInterval of the e2e server")

	fs.DurationVar(&c.PhaseTimeout, "phase-timeout", 3*time.Minute, "upper bound of each phase; a phase that has not finished fails")
	fs.StringVar(&c.ProfileDir, "profile-dir", "", "if set, write a CPU profile of this process for every worker and e2e phase into this directory")
	fs.BoolVar(&c.Waits, "pg-waits", true, "sample pg_stat_activity wait events of the benchmark's connections during PostgreSQL worker phases")
	fs.StringVar(&c.TempDir, "tmp", "", "directory for the SQLite databases (default: the system temporary directory)")
	fs.BoolVar(&c.WhatIfNoCancelRead, "whatif-no-cancel-read", false, "EXPERIMENT, not taskwire's behaviour: in the worker phases, answer the runtime's per-job CancelRequested with false without a database read (upper bound for a Claim that returns the cancel intent)")
	fs.BoolVar(&c.Analyze, "analyze", false, "run ANALYZE on the queue tables after pre-creating the jobs of the PostgreSQL worker phases (taskwire and River alike), as autovacuum eventually would")
	fs.BoolVar(&c.Progress, "progress", false, "run each worker phase twice on fresh stores, first with the no-op handler, then with a handler that makes one progress report (Job.ReportProgress) in every job, and compare the throughputs")
	fs.BoolVar(&c.Checkpoint, "checkpoint", false, "like -progress, with a handler that saves one checkpoint (Job.Checkpoint) in every job instead of a progress report")
	fs.BoolVar(&c.CheckpointLater, "checkpoint-later", false, "with -checkpoint, save the checkpoint with Job.CheckpointLater (written with the completion) instead of Job.Checkpoint")
	fs.IntVar(&c.Queues, "queues", 4, "queues of the pg-queues and sqlite-queues phases: the -n jobs spread over this many queues (one kind each), "+
		"worked by one runtime serving them all with -concurrency split evenly, against the same jobs in one queue")
	fs.IntVar(&c.ProgressRounds, "progress-rounds", 1, "with -progress or -checkpoint, how many times the four runs (without, with, with, without) repeat")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, usageError{fmt.Sprintf("unexpected arguments %q", fs.Args())}
	}
	for _, p := range strings.Split(*phases, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if !slices.Contains(allPhases, p) {
			return config{}, usageError{fmt.Sprintf("unknown phase %q (known: %s)", p, strings.Join(allPhases, ", "))}
		}
		if slices.Contains(c.Phases, p) {
			return config{}, usageError{fmt.Sprintf("phase %q listed twice", p)}
		}
		c.Phases = append(c.Phases, p)
	}
	c.PGConns = int32(*pgConns)
	switch {
	case len(c.Phases) == 0:
		return config{}, usageError{"no phases selected"}
	case c.CheckpointLater && !c.Checkpoint:
		return config{}, usageError{"-checkpoint-later needs -checkpoint"}
	case c.N < 1 || c.SQLiteN < 1 || c.E2ETasks < 1:
		return config{}, usageError{"-n, -sqlite-n and -e2e-tasks must be positive"}
	case c.EnqueueBatch < 0 || c.EnqueueBatch > backend.MaxEnqueueBatch:
		return config{}, usageError{fmt.Sprintf("-enqueue-batch must be between 0 and %d", backend.MaxEnqueueBatch)}
	case c.EnqueueGoroutines < 1 || c.InsertGoroutines < 1 || c.E2EClients < 1:
		return config{}, usageError{"goroutine and client counts must be positive"}
	case (slices.Contains(c.Phases, "pg-queues") || slices.Contains(c.Phases, "sqlite-queues")) &&
		(c.Queues < 2 || c.Queues > worker.MaxQueues || c.Concurrency%c.Queues != 0):
		return config{}, usageError{fmt.Sprintf("-queues must be between 2 and %d and divide -concurrency", worker.MaxQueues)}
	case c.Concurrency < 1 || c.ClaimBatch < 1 || c.ClaimBatch > c.Concurrency:
		return config{}, usageError{"-claim-batch must be between 1 and -concurrency"}
	case c.E2EConcurrency < 1 || c.E2EClaimBatch < 1 || c.E2EClaimBatch > c.E2EConcurrency:
		return config{}, usageError{"-e2e-claim-batch must be between 1 and -e2e-concurrency"}
	case c.RiverWorkers < 1 || c.RiverInsertBatch < 1:
		return config{}, usageError{"-river-workers and -river-insert-batch must be positive"}
	case c.ProgressRounds < 1 || c.ProgressRounds > 10:
		return config{}, usageError{"-progress-rounds must be between 1 and 10"}
	case c.PGConns < 1:
		return config{}, usageError{"-pg-conns must be positive"}
	case c.InsertDuration < 100*time.Millisecond || c.InsertRounds < 1:
		return config{}, usageError{"-insert-duration must be at least 100ms and -insert-rounds at least 1"}
	case c.PhaseTimeout < time.Second || c.PhaseTimeout > 10*time.Minute:
		return config{}, usageError{"-phase-timeout must be between 1s and 10m"}
	case c.PollInterval <= 0 || c.E2EPoll <= 0 || c.E2EWorkerPoll <= 0:
		return config{}, usageError{"poll intervals must be positive"}
	}
	return c, nil
}

// needsPG reports whether any selected phase uses PostgreSQL.
func (c config) needsPG() bool {
	for _, p := range c.Phases {
		if strings.HasPrefix(p, "pg-") || strings.HasPrefix(p, "river") {
			return true
		}
	}
	return false
}
