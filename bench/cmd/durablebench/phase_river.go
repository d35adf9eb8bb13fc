package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverVersion is the River version pinned in bench/go.mod.
const riverVersion = "v0.51.2"

// noopArgs are the arguments of River's no-op benchmark job.
type noopArgs struct {
	N int `json:"n"`
}

func (noopArgs) Kind() string { return "bench_noop" }

// noopWorker works River's benchmark jobs by doing nothing.
type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	worked *atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.worked.Add(1)
	return nil
}

// runRiverPhase inserts N no-op jobs with InsertMany into a schema of its
// own, then measures how fast a River client tuned for throughput works
// them all, counting completions through its job_completed events (sent
// once River's completer has committed them).
func runRiverPhase(ctx context.Context, cfg config, out io.Writer) ([]figure, error) {
	n := cfg.N
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	schema := randomName("riverbench_")
	var insDur time.Duration
	defer func() {
		if err := dropSchema(cfg.pgURL(), schema); err != nil {
			fmt.Fprintf(out, "   !!! cleanup: %v\n", err)
		}
	}()
	newPool := func() (*pgxpool.Pool, error) {
		poolCfg, err := pgxpool.ParseConfig(cfg.pgURL())
		if err != nil {
			return nil, err
		}
		poolCfg.MaxConns = cfg.PGConns
		return pgxpool.NewWithConfig(ctx, poolCfg)
	}
	var worked atomic.Int64
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &noopWorker{worked: &worked}); err != nil {
		return nil, err
	}
	newClient := func(pool *pgxpool.Pool) (*river.Client[pgx.Tx], error) {
		return river.NewClient(riverpgxv5.New(pool), &river.Config{
			Schema:            schema,
			Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: cfg.RiverWorkers}},
			Workers:           workers,
			FetchCooldown:     cfg.RiverFetchCooldown,
			FetchPollInterval: cfg.RiverFetchPoll,
			Logger:            slog.New(slog.DiscardHandler),
		})
	}

	// Insert through a pool and client of their own, closed before the
	// workers start, as in a separate inserting process.
	pool, err := newPool()
	if err != nil {
		return nil, err
	}
	insErr := func() error {
		defer pool.Close()
		if _, err := pool.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return err
		}
		migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return err
		}
		if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
			return fmt.Errorf("river migrate: %w", err)
		}
		fmt.Fprintf(out, "   River %s, schema %s, pools of %d connections\n", riverVersion, schema, cfg.PGConns)
		client, err := newClient(pool)
		if err != nil {
			return err
		}
		params := make([]river.InsertManyParams, 0, cfg.RiverInsertBatch)
		insStart := time.Now()
		for i := 0; i < n; {
			params = params[:0]
			for ; i < n && len(params) < cfg.RiverInsertBatch; i++ {
				params = append(params, river.InsertManyParams{Args: noopArgs{N: 1}})
			}
			if _, err := client.InsertMany(ctx, params); err != nil {
				return fmt.Errorf("river InsertMany: %w", err)
			}
		}
		insDur = time.Since(insStart)
		return nil
	}()
	if insErr != nil {
		return nil, insErr
	}

	insRate := float64(n) / insDur.Seconds()
	fmt.Fprintf(out, "   inserted %d jobs with InsertMany (batches of %d, one goroutine) in %.2fs: %.0f jobs/s\n",
		n, cfg.RiverInsertBatch, insDur.Seconds(), insRate)

	if cfg.Analyze {
		if err := analyzeTables(ctx, cfg.pgURL(), schema, "river_job"); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "   ANALYZE river_job done before the workers start\n")
	}
	stats0, err := takePGStats(ctx, cfg.pgURL())
	if err != nil {
		return nil, err
	}
	tables0, err := takeTableStats(ctx, cfg.pgURL(), schema)
	if err != nil {
		return nil, err
	}
	pool, err = newPool()
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	client, err := newClient(pool)
	if err != nil {
		return nil, err
	}
	events, unsubscribe := client.SubscribeConfig(&river.SubscribeConfig{Kinds: []river.EventKind{river.EventKindJobCompleted}, ChanSize: n + 1000})
	defer unsubscribe()
	var sampler *waitSampler
	if cfg.Waits {
		if sampler, err = startWaitSampler(ctx, cfg.pgURL(), 20*time.Millisecond); err != nil {
			return nil, err
		}
	}
	stopProfile, err := startProfile(cfg, "river-worker", out)
	if err != nil {
		return nil, err
	}
	cpu0 := takeCPU()
	start := time.Now()
	if err := client.Start(ctx); err != nil {
		stopProfile()
		return nil, fmt.Errorf("river Start: %w", err)
	}
	var timeline []int64
	tick := time.NewTicker(time.Second)
	var completed, last int64
	var waitErr error
wait:
	for completed < int64(n) {
		select {
		case ev, ok := <-events:
			if !ok {
				waitErr = fmt.Errorf("River's event channel closed after %d completions", completed)
				break wait
			}
			if ev.Kind == river.EventKindJobCompleted {
				completed++
			}
		case <-tick.C:
			timeline = append(timeline, completed-last)
			last = completed
		case <-ctx.Done():
			waitErr = fmt.Errorf("only %d of %d River jobs completed within -phase-timeout %s", completed, n, cfg.PhaseTimeout)
			break wait
		}
	}
	tick.Stop()
	elapsed := time.Since(start)
	ours, err := benchBackendPIDs(ctx, cfg.pgURL())
	if err != nil {
		return nil, err
	}
	cpu := takeCPU().since(cpu0, ours...)
	stopProfile()
	waits := ""
	if sampler != nil {
		waits = sampler.finish()
	}
	stopCtx, stopCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer stopCancel()
	if err := client.Stop(stopCtx); err != nil {
		return nil, fmt.Errorf("river Stop: %w", err)
	}
	if waitErr != nil {
		return nil, waitErr
	}
	pool.Close()
	stats, err := takePGStats(context.Background(), cfg.pgURL())
	if err != nil {
		return nil, err
	}
	tables, err := takeTableStats(context.Background(), cfg.pgURL(), schema)
	if err != nil {
		return nil, err
	}
	rate := float64(n) / elapsed.Seconds()
	fmt.Fprintf(out, "   client (MaxWorkers %d, FetchCooldown %s, FetchPollInterval %s): %d jobs completed in %.2fs: %.0f jobs/s\n",
		cfg.RiverWorkers, cfg.RiverFetchCooldown, cfg.RiverFetchPoll, n, elapsed.Seconds(), rate)
	fmt.Fprintf(out, "   completions per second: %s\n", fmtTimeline(timeline))
	fmt.Fprintf(out, "   %s\n", cpu)
	fmt.Fprintf(out, "   %s\n", cpu.perJob(n))
	if waits != "" {
		fmt.Fprintf(out, "   %s\n", waits)
	}
	fmt.Fprintf(out, "   %s\n", stats.perJob(stats0, n, sampler.samples()+2))
	fmt.Fprintf(out, "   %s\n", tables.perJob(tables0, n))
	conn, err := pgx.Connect(context.Background(), cfg.pgURL())
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.Background())
	var done, total int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FROM "+
		pgx.Identifier{schema}.Sanitize()+".river_job").Scan(&done, &total); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	fmt.Fprintf(out, "   verified in the database: %d of %d jobs completed; Work ran %d times\n", done, total, worked.Load())
	if done != n || total != n {
		return nil, fmt.Errorf("verify: %d of %d River jobs completed, want %d", done, total, n)
	}
	analyzed := ""
	if cfg.Analyze {
		analyzed = " (ANALYZE before work)"
	}
	return []figure{
		{Phase: "river", What: "River " + riverVersion + ": InsertMany", Rate: insRate, Unit: "jobs/s",
			Note: fmt.Sprintf("batches of %d, one goroutine", cfg.RiverInsertBatch)},
		{Phase: "river", What: "River " + riverVersion + ": worker throughput, no-op worker" + analyzed, Rate: rate, Unit: "jobs/s",
			Note: fmt.Sprintf("N=%d, MaxWorkers %d, FetchCooldown %s, FetchPollInterval %s", n, cfg.RiverWorkers, cfg.RiverFetchCooldown, cfg.RiverFetchPoll)},
		{Phase: "river", What: "River " + riverVersion + ": insert + work (InsertMany, then the worker)" + analyzed,
			Rate: float64(n) / (insDur + elapsed).Seconds(), Unit: "jobs/s", Note: fmt.Sprintf("N=%d", n)},
	}, nil
}
