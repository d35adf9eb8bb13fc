package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
	"github.com/riverqueue/river/rivertype"
)

// The river-e2e phase is the peer of pg-e2e that a Go developer would
// build without taskwire: a net/http JSON service whose create endpoint
// inserts a River job in a transaction of the request and whose poll
// endpoint reads the job's state back from the database, with a River
// client working the jobs in the same process.

// riverJobsPath is the river-e2e service's collection of jobs: POST creates
// one, GET riverJobsPath+"/{id}" reads one.
const riverJobsPath = "/jobs"

// riverJob is the river-e2e service's view of a job: what the create
// endpoint answers (ID and state) and what the poll endpoint answers (and
// the job's arguments, as stored).
type riverJob struct {
	ID    int64           `json:"id"`
	State string          `json:"state"`
	Args  json.RawMessage `json:"args,omitempty"`
}

// riverService is the river-e2e HTTP service.
type riverService struct {
	pool   *pgxpool.Pool
	client *river.Client[pgx.Tx]
	log    *slog.Logger
}

// requestTimeout bounds the database work of one river-e2e request.
const requestTimeout = 10 * time.Second

// handler routes the service's two endpoints.
func (s *riverService) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+riverJobsPath, s.create)
	mux.HandleFunc("GET "+riverJobsPath+"/{id}", s.get)
	return mux
}

// create inserts the job of the body's {"n":N} with InsertTx in a
// transaction of its own, commits it, and answers the job's ID and state.
func (s *riverService) create(w http.ResponseWriter, r *http.Request) {
	var args noopArgs
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&args); err != nil {
		http.Error(w, "body: want {\"n\":<int>}", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	job, err := s.insert(ctx, args)
	if err != nil {
		s.fail(w, "insert", err)
		return
	}
	writeJSON(w, riverJob{ID: job.ID, State: string(job.State)})
}

// insert inserts one job in a transaction and commits it.
func (s *riverService) insert(ctx context.Context, args noopArgs) (*rivertype.JobRow, error) {
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	res, err := s.client.InsertTx(ctx, tx, args, nil)
	if err != nil {
		return nil, fmt.Errorf("InsertTx: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, fmt.Errorf("commit: %w", err)
	}
	return res.Job, nil
}

// get reads the job with JobGet and answers its state and arguments.
func (s *riverService) get(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id < 1 {
		http.Error(w, "bad job ID", http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	job, err := s.client.JobGet(ctx, id)
	switch {
	case errors.Is(err, river.ErrNotFound):
		http.Error(w, "no such job", http.StatusNotFound)
		return
	case err != nil:
		s.fail(w, "JobGet", err)
		return
	}
	writeJSON(w, riverJob{ID: job.ID, State: string(job.State), Args: job.EncodedArgs})
}

// fail logs a database error (which names no job) and answers 500.
func (s *riverService) fail(w http.ResponseWriter, what string, err error) {
	s.log.Warn("river-e2e-serve: request failed", "op", what, "err", err)
	http.Error(w, what+" failed", http.StatusInternalServerError)
}

// writeJSON answers v as JSON with status 200.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, "encoding the answer failed", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// runRiverE2EServe implements "durablebench river-e2e-serve": the
// river-e2e service and a River client working its jobs with a no-op
// worker, in one process, on one pgx pool, until standard input reaches EOF
// or -max-lifetime passes. It creates and migrates the schema; the caller
// drops it afterwards.
func runRiverE2EServe(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("durablebench river-e2e-serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	pgURL := fs.String("pg-url", "", "PostgreSQL URL (loopback only)")
	schema := fs.String("schema", "", "PostgreSQL schema, created if missing")
	pgConns := fs.Int("pg-conns", 16, "pgx pool size, shared by the HTTP handlers and the River client")
	maxWorkers := fs.Int("max-workers", 1000, "River QueueConfig.MaxWorkers")
	fetchCooldown := fs.Duration("fetch-cooldown", 5*time.Millisecond, "River Config.FetchCooldown")
	fetchPoll := fs.Duration("fetch-poll", 20*time.Millisecond, "River Config.FetchPollInterval")
	addr := fs.String("addr", "127.0.0.1:0", "loopback address to listen on")
	maxLifetime := fs.Duration("max-lifetime", 5*time.Minute, "stop after this long in any case")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of this process here")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *schema == "" || *pgConns < 1 {
		return usageError{"river-e2e-serve: -schema is required and -pg-conns must be positive"}
	}
	if err := checkLoopbackURL(*pgURL); err != nil {
		return err
	}
	ctx, cancel := serveContext(ctx, *maxLifetime)
	defer cancel()

	poolCfg, err := pgxpool.ParseConfig(*pgURL)
	if err != nil {
		return fmt.Errorf("river-e2e-serve: -pg-url: %w", err)
	}
	poolCfg.MaxConns = int32(*pgConns)
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return fmt.Errorf("river-e2e-serve: %w", err)
	}
	defer pool.Close()
	if err := migrateRiver(ctx, pool, *schema); err != nil {
		return err
	}
	var worked atomic.Int64
	workers := river.NewWorkers()
	if err := river.AddWorkerSafely(workers, &noopWorker{worked: &worked}); err != nil {
		return err
	}
	log := warnLogger()
	// LISTEN/NOTIFY stays on (PollOnly false, River's default): InsertTx
	// notifies the queue, at most once per FetchCooldown, and the
	// client fetches on the notification; FetchPollInterval is the fallback.
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema:            *schema,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: *maxWorkers}},
		Workers:           workers,
		FetchCooldown:     *fetchCooldown,
		FetchPollInterval: *fetchPoll,
		Logger:            log,
	})
	if err != nil {
		return fmt.Errorf("river-e2e-serve: river client: %w", err)
	}
	svc := &riverService{pool: pool, client: client, log: log}
	return serveLoopback(ctx, cancel, serveOptions{
		Name: "river-e2e-serve", Addr: *addr, CPUProfile: *cpuProfile, Handler: svc.handler(),
		Work: func(ctx context.Context) error { return runRiverClient(ctx, client) },
	}, stdout, stderr)
}

// runRiverClient starts the client and, once ctx ends, stops it, letting
// running jobs finish for up to 5 s.
func runRiverClient(ctx context.Context, client *river.Client[pgx.Tx]) error {
	if err := client.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("river Start: %w", err)
	}
	<-ctx.Done()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := client.Stop(sctx); err != nil {
		return fmt.Errorf("river Stop: %w", err)
	}
	return nil
}

// migrateRiver creates the schema if needed and runs River's migrations
// in it.
func migrateRiver(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	if _, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	migrator, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{Schema: schema, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("river migrate: %w", err)
	}
	return nil
}

// riverE2EClient drives the river-e2e service over HTTP.
type riverE2EClient struct {
	http *http.Client
	base string // http://host:port
}

// do sends one request and decodes the 200 answer's JSON into v.
func (c *riverE2EClient) do(ctx context.Context, method, path, body string, v *riverJob) error {
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, strings.NewReader(body))
	if err != nil {
		return err
	}
	if body != "" {
		req.Header["Content-Type"] = []string{"application/json"}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, riverJobsPath, resp.StatusCode, truncate(b, 300))
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s %s: %w: %s", method, riverJobsPath, err, truncate(b, 300))
	}
	return nil
}

// create inserts the job of {"n":n}; a job is never completed when its
// insert commits.
func (c *riverE2EClient) create(ctx context.Context, n int) (string, bool, error) {
	var j riverJob
	if err := c.do(ctx, http.MethodPost, riverJobsPath, `{"n":`+strconv.Itoa(n)+`}`, &j); err != nil {
		return "", false, err
	}
	if j.ID < 1 || j.State != string(rivertype.JobStateAvailable) {
		return "", false, fmt.Errorf("POST %s: id %d, state %q; want an available job", riverJobsPath, j.ID, j.State)
	}
	return strconv.FormatInt(j.ID, 10), false, nil
}

// get reads the job: whether it completed, and that it carries {"n":n}.
func (c *riverE2EClient) get(ctx context.Context, id string, n int) (bool, error) {
	var j riverJob
	if err := c.do(ctx, http.MethodGet, riverJobsPath+"/"+id, "", &j); err != nil {
		return false, err
	}
	var args noopArgs
	if err := json.Unmarshal(j.Args, &args); err != nil || strconv.FormatInt(j.ID, 10) != id || args.N != n {
		return false, fmt.Errorf("GET %s/{id}: job %d with args %s, want {\"n\":%d}", riverJobsPath, j.ID, truncate(j.Args, 100), n)
	}
	switch rivertype.JobState(j.State) {
	case rivertype.JobStateAvailable, rivertype.JobStateRunning:
		return false, nil
	case rivertype.JobStateCompleted:
		return true, nil
	default:
		return false, fmt.Errorf("GET %s/{id}: state %q, want available, running or completed", riverJobsPath, j.State)
	}
}

// riverE2EWhat starts the measurement of the river-e2e figure;
// printComparison finds it by this prefix.
const riverE2EWhat = "net/http + River "

// runRiverE2EPhase is river-e2e: the river-e2e service in a subprocess on
// a fresh schema, driven by the same clients and load as pg-e2e.
func runRiverE2EPhase(ctx context.Context, cfg config, out, stderr io.Writer) ([]figure, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	schema := randomName("riverbench_")
	defer func() {
		if err := dropSchema(cfg.pgURL(), schema); err != nil {
			fmt.Fprintf(out, "   !!! cleanup: %v\n", err)
		}
	}()
	args := []string{
		"-pg-url", cfg.pgURL(), "-schema", schema, "-pg-conns", strconv.Itoa(int(cfg.PGConns)),
		"-max-workers", strconv.Itoa(cfg.RiverWorkers),
		"-fetch-cooldown", cfg.RiverFetchCooldown.String(), "-fetch-poll", cfg.RiverFetchPoll.String(),
		"-max-lifetime", (cfg.PhaseTimeout + time.Minute).String(),
	}
	if cfg.ProfileDir != "" {
		if err := os.MkdirAll(cfg.ProfileDir, 0o755); err != nil {
			return nil, err
		}
		p := filepath.Join(cfg.ProfileDir, "river-e2e-server.pprof")
		args = append(args, "-cpuprofile", p)
		defer fmt.Fprintf(out, "   CPU profile of the server process: %s\n", p)
	}
	srv, err := startE2EServer(ctx, "river-e2e-serve", args, stderr)
	if err != nil {
		return nil, err
	}
	stopped := false
	defer func() {
		if !stopped {
			_ = srv.close()
		}
	}()
	fmt.Fprintf(out, "   net/http + River %s subprocess (pid %d) on http://%s%s, schema %s, one pgx pool of %d connections; "+
		"client MaxWorkers %d, FetchCooldown %s, FetchPollInterval %s, LISTEN/NOTIFY on (River's default)\n",
		riverVersion, srv.cmd.Process.Pid, srv.addr, riverJobsPath, schema, cfg.PGConns, cfg.RiverWorkers, cfg.RiverFetchCooldown, cfg.RiverFetchPoll)

	hc := newE2EHTTPClient(cfg)
	defer hc.CloseIdleConnections()
	c := &riverE2EClient{http: hc, base: "http://" + srv.addr}
	id, took, err := verifyE2E(ctx, cfg, c)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "   verified: POST %s inserted available job %s; GET %s/%s reported it completed with {\"n\":0} after %s\n",
		riverJobsPath, id, riverJobsPath, id, fmtDur(took))

	r, err := runE2ELoad(ctx, cfg, c, srv.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	stopped = true
	if err := srv.close(); err != nil {
		return nil, fmt.Errorf("stop server: %w", err)
	}
	r.report(out, "POST "+riverJobsPath, "GET "+riverJobsPath+"/{id}")
	if err := verifyRiverJobs(ctx, cfg, schema, cfg.E2ETasks+1, out); err != nil {
		return nil, err
	}
	return []figure{{
		Phase: "river-e2e", What: riverE2EWhat + riverVersion + ": HTTP create → poll completed", Rate: r.rate(), Unit: "tasks/s",
		Note: r.latencyNote(),
	}}, nil
}

// verifyRiverJobs checks in the database that the schema holds want jobs,
// all completed.
func verifyRiverJobs(ctx context.Context, cfg config, schema string, want int, out io.Writer) error {
	conn, err := pgx.Connect(ctx, cfg.pgURL())
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var done, total int
	if err := conn.QueryRow(ctx, "SELECT count(*) FILTER (WHERE state = 'completed'), count(*) FROM "+
		pgx.Identifier{schema}.Sanitize()+".river_job").Scan(&done, &total); err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	fmt.Fprintf(out, "   verified in the database: %d of %d jobs completed (the verification job included)\n", done, total)
	if done != want || total != want {
		return fmt.Errorf("verify: %d of %d River jobs completed, want %d", done, total, want)
	}
	return nil
}
