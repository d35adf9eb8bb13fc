package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// checkLoopbackURL rejects a PostgreSQL URL whose host is not a loopback
// address: the benchmark never leaves the machine.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return usageError{fmt.Sprintf("-pg-url: %v", err)}
	}
	host := u.Hostname()
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError{fmt.Sprintf("-pg-url host %q is not a loopback address", host)}
	}
	return nil
}

// pgURL returns the URL every PostgreSQL connection of the run uses: the
// -pg-url with -sync-commit applied.
func (c config) pgURL() string {
	u := c.PGURL
	add := func(k, v string) {
		if strings.Contains(u, k+"=") {
			return
		}
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		u += sep + k + "=" + url.QueryEscape(v)
	}
	if c.SyncCommit != "" {
		add("synchronous_commit", c.SyncCommit)
	}
	// Every connection of the run carries this name, so that the wait
	// sampler sees only the benchmark's backends.
	add("application_name", appName)
	return u
}

// appName is the application_name of every benchmark connection.
const appName = "durablebench"

// randomName returns prefix followed by 12 random hex digits.
func randomName(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

// dropSchema drops a schema with everything in it, on a connection of its
// own, with a timeout independent of the run's context.
func dropSchema(rawURL, schema string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		return fmt.Errorf("drop schema %s: %w", schema, err)
	}
	return nil
}

// pgDescribe prints the server version and the settings that matter for
// write throughput.
func pgDescribe(ctx context.Context, rawURL string, w io.Writer) error {
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return fmt.Errorf("connect to PostgreSQL: %w", err)
	}
	defer conn.Close(ctx)
	var version string
	if err := conn.QueryRow(ctx, "SHOW server_version").Scan(&version); err != nil {
		return err
	}
	rows, err := conn.Query(ctx, `SELECT name, setting || coalesce(unit, '') FROM pg_settings
		WHERE name IN ('synchronous_commit', 'fsync', 'wal_sync_method', 'shared_buffers', 'max_connections',
			'commit_delay', 'wal_level', 'max_wal_size', 'checkpoint_timeout') ORDER BY name`)
	if err != nil {
		return err
	}
	var parts []string
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return err
		}
		parts = append(parts, name+"="+value)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	fmt.Fprintf(w, "postgres: %s on loopback; %s (as set on the server; -sync-commit overrides per connection)\n",
		version, strings.Join(parts, " "))
	return nil
}

// waitSampler samples pg_stat_activity every interval and counts, for the
// benchmark's client backends (application_name durablebench) other than
// its own, what they are doing:
// "active: CPU" (running, no wait event), "active: <type>:<event>" (waiting),
// or "idle"/"idle in transaction".
type waitSampler struct {
	stop   context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	counts map[string]int
	polls  int
	err    error
}

// startWaitSampler starts sampling on a connection of its own.
func startWaitSampler(ctx context.Context, rawURL string, interval time.Duration) (*waitSampler, error) {
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return nil, fmt.Errorf("wait sampler: %w", err)
	}
	ctx, stop := context.WithCancel(ctx)
	s := &waitSampler{stop: stop, done: make(chan struct{}), counts: map[string]int{}}
	go func() {
		defer close(s.done)
		defer conn.Close(context.Background())
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			rows, err := conn.Query(ctx, `SELECT state, coalesce(wait_event_type || ':' || wait_event, '')
				FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'client backend'
				AND pid <> pg_backend_pid() AND state IS NOT NULL AND application_name = $1`, appName)
			if err != nil {
				if ctx.Err() == nil {
					s.mu.Lock()
					s.err = err
					s.mu.Unlock()
				}
				return
			}
			local := map[string]int{}
			for rows.Next() {
				var state, wait string
				if err := rows.Scan(&state, &wait); err != nil {
					break
				}
				key := state
				if state == "active" {
					if wait == "" {
						wait = "CPU"
					}
					key = "active: " + wait
				} else if wait != "" && wait != "Client:ClientRead" {
					key += ": " + wait
				}
				local[key]++
			}
			rows.Close()
			s.mu.Lock()
			s.polls++
			for k, v := range local {
				s.counts[k] += v
			}
			s.mu.Unlock()
		}
	}()
	return s, nil
}

// samples returns the number of queries the sampler ran (each is a
// transaction of its own).
func (s *waitSampler) samples() int64 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return int64(s.polls)
}

// finish stops sampling and returns the report: the average number of the
// benchmark's backends in each state per sample, most frequent first.
func (s *waitSampler) finish() string {
	s.stop()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.polls == 0 {
		return "no samples"
	}
	type kv struct {
		k string
		v int
	}
	var all []kv
	for k, v := range s.counts {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int { return cmp.Or(cmp.Compare(b.v, a.v), cmp.Compare(a.k, b.k)) })
	var parts []string
	for i, e := range all {
		if i == 8 {
			break
		}
		parts = append(parts, fmt.Sprintf("%s %.1f", e.k, float64(e.v)/float64(s.polls)))
	}
	out := fmt.Sprintf("backends by state, average over %d samples: %s", s.polls, strings.Join(parts, ", "))
	if s.err != nil {
		out += fmt.Sprintf(" (sampling stopped early: %v)", s.err)
	}
	return out
}

// pgStats are the database-wide counters of pg_stat_database and the WAL
// position. Backends report their counters at most once a second while busy
// and when they exit, so snapshots are taken with the benchmark's pools
// closed.
type pgStats struct {
	Commits, Rollbacks         int64
	Inserted, Updated, Deleted int64
	WAL                        int64 // bytes since 0/0
}

// takePGStats snapshots pgStats on a connection of its own, after waiting
// for exited backends to have reported.
func takePGStats(ctx context.Context, rawURL string) (pgStats, error) {
	time.Sleep(300 * time.Millisecond)
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return pgStats{}, err
	}
	defer conn.Close(ctx)
	var s pgStats
	err = conn.QueryRow(ctx, `SELECT xact_commit, xact_rollback, tup_inserted, tup_updated, tup_deleted,
		(pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint FROM pg_stat_database WHERE datname = current_database()`).
		Scan(&s.Commits, &s.Rollbacks, &s.Inserted, &s.Updated, &s.Deleted, &s.WAL)
	return s, err
}

// perJob renders the difference s - s0 per job; extraTx are transactions
// of the benchmark's own instrumentation to leave out. The counters are
// database-wide: other sessions using the database add to them.
func (s pgStats) perJob(s0 pgStats, jobs int, extraTx int64) string {
	return fmt.Sprintf("per job, database-wide (pg_stat_database; other sessions on the database add to it): %.2f commits, %.0f B of WAL",
		(float64(s.Commits-s0.Commits)-float64(extraTx))/float64(jobs), float64(s.WAL-s0.WAL)/float64(jobs))
}

// tableStats are the row counters of one schema's tables.
type tableStats map[string][4]int64 // table → inserted, updated, HOT-updated, deleted

// takeTableStats reads pg_stat_user_tables for schema.
func takeTableStats(ctx context.Context, rawURL, schema string) (tableStats, error) {
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del
		FROM pg_stat_user_tables WHERE schemaname = $1`, schema)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ts := tableStats{}
	for rows.Next() {
		var name string
		var v [4]int64
		if err := rows.Scan(&name, &v[0], &v[1], &v[2], &v[3]); err != nil {
			return nil, err
		}
		ts[name] = v
	}
	return ts, rows.Err()
}

// perJob renders the difference ts - ts0 per job, by table.
func (ts tableStats) perJob(ts0 tableStats, jobs int) string {
	names := make([]string, 0, len(ts))
	for n := range ts {
		names = append(names, n)
	}
	slices.Sort(names)
	var parts []string
	for _, n := range names {
		v, v0 := ts[n], ts0[n]
		ins, upd, hot, del := v[0]-v0[0], v[1]-v0[1], v[2]-v0[2], v[3]-v0[3]
		if ins == 0 && upd == 0 && del == 0 {
			continue
		}
		p := fmt.Sprintf("%s %.2f ins, %.2f upd", n, float64(ins)/float64(jobs), float64(upd)/float64(jobs))
		if upd > 0 {
			p += fmt.Sprintf(" (%.0f%% HOT)", 100*float64(hot)/float64(upd))
		}
		if del > 0 {
			p += fmt.Sprintf(", %.2f del", float64(del)/float64(jobs))
		}
		parts = append(parts, p)
	}
	return "rows per job in the phase's schema (pg_stat_user_tables): " + strings.Join(parts, "; ")
}

// analyzeTables runs ANALYZE on the given tables of schema.
func analyzeTables(ctx context.Context, rawURL, schema string, tables ...string) error {
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	for _, t := range tables {
		if _, err := conn.Exec(ctx, "ANALYZE "+pgx.Identifier{schema, t}.Sanitize()); err != nil {
			return fmt.Errorf("analyze %s: %w", t, err)
		}
	}
	return nil
}

// benchBackendPIDs returns the PIDs of the benchmark's backends (its
// application_name) other than this query's.
func benchBackendPIDs(ctx context.Context, rawURL string) ([]int, error) {
	conn, err := pgx.Connect(ctx, rawURL)
	if err != nil {
		return nil, err
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, appName)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	pids := []int{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		pids = append(pids, pid)
	}
	return pids, rows.Err()
}
