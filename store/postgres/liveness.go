package postgres

import (
	"context"
	"errors"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"

	"github.com/taskwire/taskwire/backend"
)

// HoldInstance implements backend.LivenessRescuer. The hold is a
// session-level advisory lock, pg_try_advisory_lock(hi, lo) with the high
// and low 31-bit halves of a random 62-bit instance key, on a connection of
// its own (outside the pool, like the listener's): when the process dies,
// the kernel closes its socket, the server ends the session and the lock
// goes with it. A key another session holds already (another instance
// drew it) is drawn again.
//
// The lock needs a session that lasts: behind a pooler that hands a
// server connection to a client per transaction (PgBouncer in transaction
// mode), the lock stays with a server connection other clients use, and
// the instance looks alive long after it died. Its jobs then wait for
// their leases, which still bound their rescue; turn the fast path off
// (worker.Options.DisableFastRecovery) to skip its queries there. A host
// that vanishes without closing its sockets (a power loss) keeps its
// session until the server's TCP keepalive ends it (tcp_keepalives_idle);
// the lease bounds that wait too.
//
// The hold's connection is checked, and taken again when it was lost, at
// every RescueDead; ID is "" from a failed check until the lock is taken
// again.
func (j jobStore) HoldInstance(ctx context.Context) (backend.InstanceHold, error) {
	h := &instanceHold{s: j.s}
	for range 4 {
		h.key = rand.Int64N(1 << 62)
		ok, err := h.connect(ctx)
		if err != nil {
			return nil, err
		}
		if ok {
			return h, nil
		}
	}
	return nil, errors.New("postgres: hold instance: every key drawn was held")
}

// instanceHold is a postgres backend.InstanceHold.
type instanceHold struct {
	s   *Store
	key int64
	// id is ID's value: the key in decimal while the lock is held, ""
	// while it is lost. It is read without h.mu, by every claim.
	id atomic.Pointer[string]

	mu   sync.Mutex
	conn *pgx.Conn // holds the lock; nil while lost
	// gen counts the times the lock was taken, so that RescueDead knows
	// whether it was held without a break since its last pass.
	gen uint64
	// suspects are the instances the last pass found unheld, at
	// suspectGen.
	suspects   map[int64]bool
	suspectGen uint64
	closed     bool
}

// connect opens the hold's connection and tries the lock, under h.mu or
// before h is shared. It reports false when another session holds the key.
func (h *instanceHold) connect(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, h.s.opts.Timeout)
	defer cancel()
	conn, err := pgx.ConnectConfig(ctx, h.s.listenCfg)
	if err != nil {
		return false, wrapErr("hold instance: connect", err)
	}
	hi, lo := h.key>>31, h.key&(1<<31-1)
	var ok bool
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1::integer, $2::integer)`, hi, lo).Scan(&ok); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return false, wrapErr("hold instance: lock", err)
	}
	if !ok {
		_ = conn.Close(context.WithoutCancel(ctx))
		return false, nil
	}
	h.conn = conn
	h.gen++
	id := strconv.FormatInt(h.key, 10)
	h.id.Store(&id)
	return true, nil
}

// ID implements backend.InstanceHold.
func (h *instanceHold) ID() string {
	if id := h.id.Load(); id != nil {
		return *id
	}
	return ""
}

// check makes sure the hold's lock is held, taking it again on a new
// connection when the old one was lost. Under h.mu.
func (h *instanceHold) check(ctx context.Context) error {
	if h.closed {
		return errors.New("postgres: instance hold closed")
	}
	if h.conn != nil {
		cctx, cancel := context.WithTimeout(ctx, h.s.opts.Timeout)
		err := h.conn.Ping(cctx)
		cancel()
		if err == nil {
			return nil
		}
		_ = h.conn.Close(context.WithoutCancel(ctx))
		h.conn = nil
		h.id.Store(nil)
	}
	ok, err := h.connect(ctx)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("postgres: hold instance: the key is held by another session")
	}
	return nil
}

// RescueDead implements backend.InstanceHold. A pass first checks the
// hold's own lock (see HoldInstance), then lists the instances of running
// jobs whose locks no session holds. It takes the jobs of those that the
// previous pass listed too, if the hold's lock was held without a break
// since then: a database restart ends every session, and the instances
// alive take their locks again at their next pass, before a second pass
// of another instance counts them dead. A hold whose lock was lost takes
// nothing until it has it again.
func (h *instanceHold) RescueDead(ctx context.Context, p backend.RescueParams) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.check(ctx); err != nil {
		h.suspects = nil
		return 0, err
	}
	rows, err := h.s.pool.Query(ctx, h.s.q.unheldInstances, h.key)
	if err != nil {
		return 0, wrapErr("rescue dead: list", err)
	}
	unheld, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return 0, wrapErr("rescue dead: list", err)
	}
	var confirmed []int64
	if h.suspectGen == h.gen {
		for _, k := range unheld {
			if h.suspects[k] {
				confirmed = append(confirmed, k)
			}
		}
	}
	h.suspects, h.suspectGen = make(map[int64]bool, len(unheld)), h.gen
	for _, k := range unheld {
		h.suspects[k] = true
	}
	if len(confirmed) == 0 {
		return 0, nil
	}
	return h.s.rescue(ctx, h.s.q.rescueDead, p, confirmed)
}

// Close implements backend.InstanceHold: it closes the hold's connection,
// which ends the lock.
func (h *instanceHold) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	h.id.Store(nil)
	if h.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.s.opts.Timeout)
	defer cancel()
	// Unlock first: the server drops a closed session's locks only once
	// its backend has exited, after Close returns.
	_, err := h.conn.Exec(ctx, `SELECT pg_advisory_unlock($1::integer, $2::integer)`, h.key>>31, h.key&(1<<31-1))
	if cerr := h.conn.Close(ctx); err == nil {
		err = cerr
	}
	h.conn = nil
	return wrapErr("release instance", err)
}

// instanceKey is the claim parameter of a ClaimParams.Instance: nil for
// none, else the key it names.
func instanceKey(id string) (any, error) {
	if id == "" {
		return nil, nil
	}
	k, err := strconv.ParseInt(id, 10, 64)
	if err != nil || k < 0 || k >= 1<<62 {
		return nil, errors.New("postgres: Claim: the instance is not one of this store's")
	}
	return k, nil
}
