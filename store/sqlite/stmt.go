package sqlite

import (
	"context"
	"database/sql"
	"sync"
)

// Parsing SQL costs more than running most of the store's statements, so
// statements are prepared once per pool and reused; database/sql prepares
// them once per connection.
//
// The writer pool has a single connection, which a transaction holds until
// it ends, so a statement cannot be prepared on that pool from inside a
// transaction: a statement first seen in a transaction runs unprepared
// there, and is prepared after the transaction ends, for the next ones.

// stmtCache holds the prepared statements of one pool.
type stmtCache struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
	// wanted are statements seen in a transaction and not yet prepared.
	wanted map[string]bool
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}, wanted: map[string]bool{}}
}

// lookup returns the prepared form of query, or records that it is wanted.
func (c *stmtCache) lookup(query string) (*sql.Stmt, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st, ok := c.m[query]
	if !ok {
		c.wanted[query] = true
	}
	return st, ok
}

// prepareWanted prepares the statements lookup missed. Call it while
// holding no connection of the pool. Failures are left for the next try.
func (c *stmtCache) prepareWanted(ctx context.Context) {
	c.mu.Lock()
	var queries []string
	for q := range c.wanted {
		queries = append(queries, q)
	}
	clear(c.wanted)
	c.mu.Unlock()
	for _, q := range queries {
		st, err := c.db.PrepareContext(ctx, q)
		if err != nil {
			continue
		}
		c.mu.Lock()
		if _, dup := c.m[q]; dup {
			st.Close()
		} else {
			c.m[q] = st
		}
		c.mu.Unlock()
	}
}

// close closes every prepared statement.
func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for q, st := range c.m {
		st.Close()
		delete(c.m, q)
	}
}

// QueryRowContext runs a one-row query on the pool, holding no connection
// in between; it prepares the statement first when it is new.
func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, ok := c.lookup(query)
	if !ok {
		c.prepareWanted(ctx)
		if st, ok = c.lookup(query); !ok {
			return c.db.QueryRowContext(ctx, query, args...) // its error surfaces from Scan
		}
	}
	return st.QueryRowContext(ctx, args...)
}

// QueryContext runs a query on the pool, preparing the statement first
// when it is new.
func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, ok := c.lookup(query)
	if !ok {
		c.prepareWanted(ctx)
		if st, ok = c.lookup(query); !ok {
			return c.db.QueryContext(ctx, query, args...)
		}
	}
	return st.QueryContext(ctx, args...)
}

// wtx is a write transaction whose statements reuse the writer's prepared
// statements. It has the methods of sql.Tx the store uses, but its
// statements run under ctx, the transaction's context, whatever context
// they are given: the transaction may be shared by several callers of
// write (group commit), and one caller's cancellation must not interrupt
// the statements of the others' transaction.
type wtx struct {
	ctx    context.Context
	tx     *sql.Tx
	cache  *stmtCache
	writer string // the Store's ID for outbox rows
}

// ExecContext runs a single statement in the transaction, under t.ctx.
func (t *wtx) ExecContext(_ context.Context, query string, args ...any) (sql.Result, error) {
	if st, ok := t.cache.lookup(query); ok {
		return t.tx.StmtContext(t.ctx, st).ExecContext(t.ctx, args...)
	}
	return t.tx.ExecContext(t.ctx, query, args...)
}

// QueryContext runs a query in the transaction, under t.ctx.
func (t *wtx) QueryContext(_ context.Context, query string, args ...any) (*sql.Rows, error) {
	if st, ok := t.cache.lookup(query); ok {
		return t.tx.StmtContext(t.ctx, st).QueryContext(t.ctx, args...)
	}
	return t.tx.QueryContext(t.ctx, query, args...)
}

// QueryRowContext runs a one-row query in the transaction, under t.ctx.
func (t *wtx) QueryRowContext(_ context.Context, query string, args ...any) *sql.Row {
	if st, ok := t.cache.lookup(query); ok {
		return t.tx.StmtContext(t.ctx, st).QueryRowContext(t.ctx, args...)
	}
	return t.tx.QueryRowContext(t.ctx, query, args...)
}
