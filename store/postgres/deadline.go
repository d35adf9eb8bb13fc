package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Deadlines of store calls.
//
// A database that stops answering (a network partition, a frozen server)
// must not hold a caller for longer than Options.Timeout. Three bounds
// apply, each set once in Open: the pool's connection attempts are bounded
// by ConnectTimeout; every session's statement_timeout makes the server
// cancel a statement that runs too long (on a healthy connection); and
// boundedPool, the only handle the store's methods use, gives every call
// on the pool its own client-side deadline, which pgx enforces by setting
// the socket's deadline, so a call on a connection that no longer carries
// bytes fails when it passes. A transaction shares one deadline from Begin
// to Commit. Migrations use the pool without these bounds.

// boundedPool is the store's connection pool with a deadline on every
// call: Exec, Query and QueryRow each get Options.Timeout (a query's
// deadline lasts until its rows are closed or its row is scanned), and a
// transaction begun with Begin or BeginTx gets one deadline for all its
// statements and its Commit. Its other methods are pgxpool's.
type boundedPool struct {
	*pgxpool.Pool
	timeout time.Duration
}

// bound returns ctx with the store's per-call deadline.
func (p *boundedPool) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.timeout)
}

// Exec is pgxpool.Pool.Exec under the per-call deadline.
func (p *boundedPool) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel := p.bound(ctx)
	defer cancel()
	return p.Pool.Exec(ctx, sql, args...)
}

// Query is pgxpool.Pool.Query under the per-call deadline, which lasts
// until the rows are closed or read to the end.
func (p *boundedPool) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, cancel := p.bound(ctx)
	rows, err := p.Pool.Query(ctx, sql, args...)
	if err != nil {
		cancel()
		return nil, err
	}
	return &boundedRows{Rows: rows, cancel: cancel}, nil
}

// QueryRow is pgxpool.Pool.QueryRow under the per-call deadline, which
// lasts until the row is scanned.
func (p *boundedPool) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, cancel := p.bound(ctx)
	return boundedRow{row: p.Pool.QueryRow(ctx, sql, args...), cancel: cancel}
}

// Begin starts a transaction whose statements, Commit included, share one
// per-call deadline.
func (p *boundedPool) Begin(ctx context.Context) (pgx.Tx, error) {
	return p.BeginTx(ctx, pgx.TxOptions{})
}

// BeginTx is Begin with transaction options.
func (p *boundedPool) BeginTx(ctx context.Context, opts pgx.TxOptions) (pgx.Tx, error) {
	deadline := time.Now().Add(p.timeout)
	bctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	tx, err := p.Pool.BeginTx(bctx, opts)
	if err != nil {
		return nil, err
	}
	return &boundedTx{Tx: tx, deadline: deadline, timeout: p.timeout}, nil
}

// boundedRows releases the deadline of a query when its rows end.
type boundedRows struct {
	pgx.Rows
	cancel context.CancelFunc
}

func (r *boundedRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.cancel()
	return false
}

func (r *boundedRows) Close() {
	r.Rows.Close()
	r.cancel()
}

// boundedRow releases the deadline of a one-row query once it is scanned.
type boundedRow struct {
	row    pgx.Row
	cancel context.CancelFunc
}

func (r boundedRow) Scan(dest ...any) error {
	defer r.cancel()
	return r.row.Scan(dest...)
}

// boundedTx runs every statement of a transaction, and its Commit, under
// the deadline set when it began. Rollback gets a deadline of its own, so
// that a transaction that ran out of time still ends cleanly when the
// database answers.
type boundedTx struct {
	pgx.Tx
	deadline time.Time
	timeout  time.Duration
}

func (t *boundedTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	ctx, cancel := context.WithDeadline(ctx, t.deadline)
	defer cancel()
	return t.Tx.Exec(ctx, sql, args...)
}

func (t *boundedTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	ctx, cancel := context.WithDeadline(ctx, t.deadline)
	rows, err := t.Tx.Query(ctx, sql, args...)
	if err != nil {
		cancel()
		return nil, err
	}
	return &boundedRows{Rows: rows, cancel: cancel}, nil
}

func (t *boundedTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	ctx, cancel := context.WithDeadline(ctx, t.deadline)
	return boundedRow{row: t.Tx.QueryRow(ctx, sql, args...), cancel: cancel}
}

func (t *boundedTx) Commit(ctx context.Context) error {
	ctx, cancel := context.WithDeadline(ctx, t.deadline)
	defer cancel()
	return t.Tx.Commit(ctx)
}

func (t *boundedTx) Rollback(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), t.timeout)
	defer cancel()
	return t.Tx.Rollback(ctx)
}
