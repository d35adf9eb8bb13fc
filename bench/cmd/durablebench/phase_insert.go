package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/task"
)

// rateResult is the outcome of one timed run of an operation.
type rateResult struct {
	Ops      int
	Elapsed  time.Duration
	P50, P99 time.Duration
}

// Rate returns operations per second.
func (r rateResult) Rate() float64 { return float64(r.Ops) / r.Elapsed.Seconds() }

// measureRate runs op in a loop on each of the given goroutines for about
// d, and returns how many calls succeeded, how long it took until every
// goroutine stopped, and the latency percentiles of the calls.
func measureRate(ctx context.Context, goroutines int, d time.Duration, op func(ctx context.Context) error) (rateResult, error) {
	var wg sync.WaitGroup
	lat := make([][]time.Duration, goroutines)
	errs := make([]error, goroutines)
	start := time.Now()
	deadline := start.Add(d)
	for g := range goroutines {
		wg.Go(func() {
			for {
				t0 := time.Now()
				if !t0.Before(deadline) {
					return
				}
				if err := op(ctx); err != nil {
					errs[g] = err
					return
				}
				lat[g] = append(lat[g], time.Since(t0))
			}
		})
	}
	wg.Wait()
	res := rateResult{Elapsed: time.Since(start)}
	for _, err := range errs {
		if err != nil {
			return res, err
		}
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	res.Ops = len(all)
	if len(all) > 0 {
		res.P50 = all[len(all)/2]
		res.P99 = all[len(all)*99/100]
	}
	return res, nil
}

// taskIDString returns a string of the shape of taskwire's task IDs: the
// time in milliseconds as 12 hex digits, a dash, 128 random bits in hex.
func taskIDString() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%012x-%x", time.Now().UnixMilli(), b[:])
}

// rawPayloadSize is the size of the raw insert's payload: the variable
// data of a task row (ID, binding, kind, status, origin) plus its five
// timestamps and integers, so that the raw row is about as large as the
// task row alone (the job and outbox rows Enqueue also writes are not
// counted).
func rawPayloadSize(cc *task.CreationContext) int {
	r := cc.Request
	return 36 + len(r.Endpoint) + len(r.Tenant) + len(r.Principal) + len(cc.Origin.Tool()) + len("working") +
		len(cc.Origin.Persisted()) + 5*8
}

// runInsertPhase is pg-insert or sqlite-insert: store.Enqueue (one task per
// transaction) against a raw single-row INSERT of a row of about the task
// row's size, from the same number of goroutines, in interleaved rounds.
func runInsertPhase(ctx context.Context, cfg config, kind string, out io.Writer) ([]figure, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.PhaseTimeout)
	defer cancel()
	tgt, err := openStore(ctx, cfg, kind)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := tgt.close(); err != nil {
			fmt.Fprintf(out, "   !!! cleanup: %v\n", err)
		}
	}()
	cc, err := creationContext(1)
	if err != nil {
		return nil, err
	}
	payload := make([]byte, rawPayloadSize(cc))
	_, _ = rand.Read(payload)

	var rawInsert, rawNotify func(ctx context.Context) error
	var rawDesc string
	var describeSizes func(ctx context.Context) string
	switch kind {
	case "postgres":
		poolCfg, err := pgxpool.ParseConfig(cfg.pgURL())
		if err != nil {
			return nil, err
		}
		poolCfg.MaxConns = cfg.PGConns
		pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
		if err != nil {
			return nil, err
		}
		defer pool.Close()
		table := pgx.Identifier{tgt.Where, "raw_insert"}.Sanitize()
		if _, err := pool.Exec(ctx, "CREATE TABLE "+table+
			" (id text PRIMARY KEY, payload bytea NOT NULL, created_at timestamptz NOT NULL DEFAULT now())"); err != nil {
			return nil, err
		}
		ins := "INSERT INTO " + table + " (id, payload) VALUES ($1, $2)"
		rawInsert = func(ctx context.Context) error {
			_, err := pool.Exec(ctx, ins, taskIDString(), payload)
			return err
		}
		// The same insert with a NOTIFY in its transaction, as every
		// store write sends one: shows what the notification costs.
		insNotify := "WITH i AS (INSERT INTO " + table + " (id, payload) VALUES ($1, $2) RETURNING id) " +
			"SELECT pg_notify(" + quoteLiteral(tgt.Where+"_rawbench") + ", id) FROM i"
		rawNotify = func(ctx context.Context) error {
			_, err := pool.Exec(ctx, insNotify, taskIDString(), payload)
			return err
		}
		rawDesc = fmt.Sprintf("pgx pool of %d, INSERT INTO scratch table (id text PRIMARY KEY, payload bytea, created_at timestamptz DEFAULT now()), autocommit", cfg.PGConns)
		describeSizes = func(ctx context.Context) string {
			var task, job, outbox, raw float64
			q := fmt.Sprintf(`SELECT (SELECT coalesce(avg(pg_column_size(t.*)), 0) FROM %[1]s.tasks t),
				(SELECT coalesce(avg(pg_column_size(j.*)), 0) FROM %[1]s.jobs j),
				(SELECT coalesce(avg(pg_column_size(o.*)), 0) FROM %[1]s.outbox o),
				(SELECT coalesce(avg(pg_column_size(r.*)), 0) FROM %[2]s r)`, pgx.Identifier{tgt.Where}.Sanitize(), table)
			if err := pool.QueryRow(ctx, q).Scan(&task, &job, &outbox, &raw); err != nil {
				return "row sizes unknown: " + err.Error()
			}
			return fmt.Sprintf("average row sizes (pg_column_size): task %.0f B + job %.0f B + outbox %.0f B per Enqueue; raw row %.0f B",
				task, job, outbox, raw)
		}
	case "sqlite":
		path := filepath.Join(filepath.Dir(tgt.Where), "raw.db")
		q := url.Values{}
		q.Add("_pragma", "busy_timeout(5000)")
		q.Add("_pragma", "foreign_keys(1)")
		q.Add("_pragma", "synchronous(NORMAL)")
		q.Add("_pragma", "journal_mode(WAL)")
		q.Set("_txlock", "immediate")
		db, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		defer db.Close()
		if _, err := db.ExecContext(ctx, `CREATE TABLE raw_insert (id TEXT PRIMARY KEY, payload BLOB NOT NULL, created_at INTEGER NOT NULL) STRICT`); err != nil {
			return nil, err
		}
		stmt, err := db.PrepareContext(ctx, `INSERT INTO raw_insert (id, payload, created_at) VALUES (?, ?, ?)`)
		if err != nil {
			return nil, err
		}
		defer stmt.Close()
		rawInsert = func(ctx context.Context) error {
			_, err := stmt.ExecContext(ctx, taskIDString(), payload, time.Now().UnixMilli())
			return err
		}
		rawDesc = "modernc.org/sqlite (the store's driver), its own file in the same directory, one connection, WAL, synchronous=NORMAL, prepared INSERT, autocommit"
		describeSizes = func(context.Context) string {
			return fmt.Sprintf("raw payload %d B (the task row's data; Enqueue also writes a job and an outbox row)", len(payload))
		}
	}

	enqueue := func(ctx context.Context) error {
		_, err := tgt.Store.Enqueue(ctx, cc, backend.EnqueueOptions{})
		return err
	}
	fmt.Fprintf(out, "   %d goroutines, %s per measurement, %d interleaved rounds; raw: %s\n",
		cfg.InsertGoroutines, cfg.InsertDuration, cfg.InsertRounds, rawDesc)
	var enq, raw, notified []rateResult
	// In the first round on PostgreSQL, sample what the backends wait for.
	measure := func(round int, what string, op func(context.Context) error) (rateResult, error) {
		var sampler *waitSampler
		if kind == "postgres" && cfg.Waits && round == 1 {
			var err error
			if sampler, err = startWaitSampler(ctx, cfg.pgURL(), 20*time.Millisecond); err != nil {
				return rateResult{}, err
			}
		}
		res, err := measureRate(ctx, cfg.InsertGoroutines, cfg.InsertDuration, op)
		if sampler != nil {
			fmt.Fprintf(out, "   %s, %s\n", what, sampler.finish())
		}
		return res, err
	}
	for round := 1; round <= cfg.InsertRounds; round++ {
		e, err := measure(round, "store.Enqueue", enqueue)
		if err != nil {
			return nil, fmt.Errorf("store.Enqueue: %w", err)
		}
		r, err := measure(round, "raw INSERT", rawInsert)
		if err != nil {
			return nil, fmt.Errorf("raw insert: %w", err)
		}
		enq, raw = append(enq, e), append(raw, r)
		fmt.Fprintf(out, "   round %d: store.Enqueue %.0f tasks/s (p50 %s, p99 %s); raw INSERT %.0f rows/s (p50 %s, p99 %s); ratio %.2f\n",
			round, e.Rate(), fmtDur(e.P50), fmtDur(e.P99), r.Rate(), fmtDur(r.P50), fmtDur(r.P99), e.Rate()/r.Rate())
		if rawNotify != nil {
			n, err := measure(round, "raw INSERT + pg_notify", rawNotify)
			if err != nil {
				return nil, fmt.Errorf("raw insert with notify: %w", err)
			}
			notified = append(notified, n)
			fmt.Fprintf(out, "   round %d: raw INSERT + pg_notify in the same transaction %.0f rows/s (p50 %s, p99 %s)\n",
				round, n.Rate(), fmtDur(n.P50), fmtDur(n.P99))
		}
	}
	fmt.Fprintf(out, "   %s\n", describeSizes(ctx))
	e, r := medianRate(enq), medianRate(raw)
	name := "taskwire " + kind
	var extra []figure
	if len(notified) > 0 {
		nr := medianRate(notified)
		extra = append(extra, figure{Phase: phaseName(kind, "insert"), What: kind + ": raw single-row INSERT + pg_notify, 1 row/tx", Rate: nr.Rate(), Unit: "rows/s",
			Note: fmt.Sprintf("%d goroutines, p50 %s, p99 %s", cfg.InsertGoroutines, fmtDur(nr.P50), fmtDur(nr.P99))})
	}
	return append([]figure{
		{Phase: phaseName(kind, "insert"), What: name + ": store.Enqueue, 1 task/tx", Rate: e.Rate(), Unit: "tasks/s",
			Note: fmt.Sprintf("%d goroutines, p50 %s, p99 %s", cfg.InsertGoroutines, fmtDur(e.P50), fmtDur(e.P99))},
		{Phase: phaseName(kind, "insert"), What: kind + ": raw single-row INSERT, 1 row/tx", Rate: r.Rate(), Unit: "rows/s",
			Note: fmt.Sprintf("%d goroutines, p50 %s, p99 %s; Enqueue/raw %.0f%%", cfg.InsertGoroutines, fmtDur(r.P50), fmtDur(r.P99), 100*e.Rate()/r.Rate())},
	}, extra...), nil
}

// medianRate returns the result with the median rate (the lower middle one
// for an even count).
func medianRate(rs []rateResult) rateResult {
	s := slices.Clone(rs)
	slices.SortFunc(s, func(a, b rateResult) int {
		switch {
		case a.Rate() < b.Rate():
			return -1
		case a.Rate() > b.Rate():
			return 1
		}
		return 0
	})
	return s[(len(s)-1)/2]
}

// fmtDur formats a latency.
func fmtDur(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
	default:
		return fmt.Sprintf("%dus", d/time.Microsecond)
	}
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
