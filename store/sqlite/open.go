package sqlite

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/listcursor"
	"github.com/taskwire/taskwire/store/internal/storerules"

	"github.com/taskwire/taskwire/task"
)

// Defaults of Options.
const (
	DefaultBusyTimeout  = 5 * time.Second
	DefaultTTL          = storerules.DefaultTTL
	DefaultPollInterval = storerules.DefaultPollInterval
	DefaultMaxAttempts  = backend.DefaultMaxAttempts
	DefaultTimeout      = 5 * time.Second
	// DefaultReadConns is the size of the read-only connection pool.
	DefaultReadConns = 4
)

// MemoryPath is the Path of a private in-memory database, for tests. It
// lives as long as the Store, uses one connection for reads and writes, and
// has no WAL.
const MemoryPath = ":memory:"

// Options configure Open. Zero values mean the defaults.
type Options struct {
	// Path is the database file, created when missing, or MemoryPath.
	Path string
	// Synchronous is the synchronous pragma: "NORMAL" (default), "FULL"
	// or "EXTRA".
	Synchronous string
	// BusyTimeout bounds how long a statement waits for a lock held by
	// another process. Default 5 s.
	BusyTimeout time.Duration
	// Timeout bounds every call of the store as a whole, waiting for the
	// one writer connection included, so that a stalled disk or a long
	// queue of writers fails calls with an error after Timeout instead of
	// holding them. A write committed in a group with others (see Store)
	// is bounded by Timeout until its group starts, and then by the
	// group's Timeout, counted from the group's start. Migrations are not
	// bounded. Default 5 s.
	Timeout time.Duration
	// NoMigrate makes Open refuse a database whose schema is older than
	// the code, instead of migrating it.
	NoMigrate bool
	// ReadConns bounds the read-only pool. Default 4.
	ReadConns int
	// Now is the clock. Default time.Now; tests inject their own.
	Now func() time.Time
	// Logger receives migration and maintenance messages. Default
	// slog.Default().
	Logger *slog.Logger
	// DefaultTTL is the TTL of tasks enqueued without one. Default 24 h;
	// negative means unlimited.
	DefaultTTL time.Duration
	// DefaultPollInterval is suggested to clients of tasks enqueued
	// without one. Default 1 s.
	DefaultPollInterval time.Duration
	// DefaultMaxAttempts bounds the attempts of jobs enqueued without a
	// bound. Default backend.DefaultMaxAttempts; at most
	// backend.MaxMaxAttempts.
	DefaultMaxAttempts int
	// EventPoll is how often the store reads the outbox for changes that
	// other processes committed to the same file, to publish them on its
	// EventPublisher. Default DefaultEventPoll; negative disables it (one
	// process per file). MemoryPath databases never poll.
	EventPoll time.Duration
}

// Store is a durable task store over one SQLite database. It implements
// backend.Store (its job side is Jobs) and is safe for concurrent use.
// Close it when done.
//
// Writes are committed in groups: calls that write while another write's
// transaction runs wait, and the next transaction runs them together, up to
// 64, in arrival order (except that a worker's batch of more than 64
// completions or checkpoints runs first, one to a group), each but the
// first between a savepoint and its release. A call sees the writes of the
// calls before it in its group, as it would after their commits, and its
// failure (a lost lease, an idempotency conflict, a task not found) is
// rolled back to its savepoint, or with the transaction when it ran
// first (the others then run in a transaction of their own), undoing
// nothing of the others'. A call succeeds, and its change is published,
// only once its group has committed; when the transaction itself fails
// (BEGIN, COMMIT) every call of the group fails with that error. A call
// whose context ends while it waits returns the context's error and writes
// nothing; once its writes have started it waits for its group's outcome.
// A write that finds no other waiting runs alone, as a plain transaction.
type Store struct {
	opts Options
	w    *sql.DB // the one writer connection; every write is BEGIN IMMEDIATE
	r    *sql.DB // read-only pool; equal to w for MemoryPath
	ws   *stmtCache
	rs   *stmtCache
	pub  *task.Broadcaster
	log  *slog.Logger

	writer  string            // random ID of this Store in the outbox rows it writes
	cursors *listcursor.Codec // the database's tasks/list cursors
	stop    context.CancelFunc
	polls   sync.WaitGroup // the outbox poller
	group   writeGroup     // writes waiting for the writer connection
}

var (
	_ backend.Store = (*Store)(nil)

	_ backend.JobStore         = jobStore{}
	_ backend.BatchCompleter   = jobStore{}
	_ backend.ProgressReporter = jobStore{}
	_ backend.Pruner           = jobStore{}
	_ backend.LivenessRescuer  = jobStore{}
)

// Open opens (creating when missing) the database at opts.Path, applies
// pending migrations unless opts.NoMigrate, and returns the store. It fails
// with ErrSchemaTooNew when the database was migrated by newer code, and
// with ErrSchemaOutdated when it needs migrations and opts.NoMigrate is set.
func Open(ctx context.Context, opts Options) (*Store, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	var writer [8]byte
	if _, err := rand.Read(writer[:]); err != nil {
		return nil, fmt.Errorf("sqlite: store ID: %w", err)
	}
	s := &Store{opts: opts, pub: task.NewBroadcaster(), log: opts.Logger, writer: hex.EncodeToString(writer[:]),
		stop: func() {}}
	var err error
	if opts.Path == MemoryPath {
		s.w, err = sql.Open("sqlite", "file::memory:?"+s.params(false))
		if err != nil {
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxLifetime(0)
		s.w.SetConnMaxIdleTime(0)
		s.r = s.w
	} else {
		if err := createPrivate(opts.Path); err != nil {
			return nil, err
		}
		s.w, err = sql.Open("sqlite", fileURI(opts.Path)+"?"+s.params(false))
		if err != nil {
			return nil, fmt.Errorf("sqlite: open: %w", err)
		}
		s.w.SetMaxOpenConns(1)
		s.w.SetMaxIdleConns(1)
		s.w.SetConnMaxIdleTime(0)
	}
	s.ws = newStmtCache(s.w)
	if err := s.w.PingContext(ctx); err != nil {
		s.w.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", opts.Path, err)
	}
	if err := s.checkSchema(ctx); err != nil {
		s.w.Close()
		return nil, err
	}
	if err := s.loadCursors(ctx); err != nil {
		s.w.Close()
		return nil, err
	}
	if s.r == nil {
		// Open the readers only once the writer has put the file in WAL
		// mode and migrated it: read-only connections cannot do either.
		s.r, err = sql.Open("sqlite", fileURI(opts.Path)+"?mode=ro&"+s.params(true))
		if err == nil {
			s.r.SetMaxOpenConns(opts.ReadConns)
			s.r.SetMaxIdleConns(opts.ReadConns)
			err = s.r.PingContext(ctx)
		}
		if err != nil {
			s.w.Close()
			if s.r != nil {
				s.r.Close()
			}
			return nil, fmt.Errorf("sqlite: open read pool: %w", err)
		}
	}
	s.rs = s.ws
	if s.r != s.w {
		s.rs = newStmtCache(s.r)
	}
	if opts.Path != MemoryPath && opts.EventPoll > 0 {
		p, err := s.newOutboxPoller(ctx)
		if err != nil {
			s.r.Close()
			s.w.Close()
			return nil, err
		}
		runCtx, stop := context.WithCancel(context.Background())
		s.stop = stop
		s.polls.Go(func() { p.run(runCtx, opts.EventPoll) })
	}
	return s, nil
}

func (o *Options) setDefaults() error {
	if o.Path == "" {
		return errors.New("sqlite: Options.Path is required")
	}
	switch strings.ToUpper(o.Synchronous) {
	case "":
		o.Synchronous = "NORMAL"
	case "NORMAL", "FULL", "EXTRA":
		o.Synchronous = strings.ToUpper(o.Synchronous)
	default:
		return fmt.Errorf("sqlite: Synchronous must be NORMAL, FULL or EXTRA, not %q", o.Synchronous)
	}
	if o.BusyTimeout == 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ReadConns == 0 {
		o.ReadConns = DefaultReadConns
	}
	if o.EventPoll == 0 {
		o.EventPoll = DefaultEventPoll
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	d := storerules.EnqueueDefaults{TTL: o.DefaultTTL, PollInterval: o.DefaultPollInterval, MaxAttempts: o.DefaultMaxAttempts}
	if err := d.Resolve(); err != nil {
		return fmt.Errorf("sqlite: %w", err)
	}
	o.DefaultTTL, o.DefaultPollInterval, o.DefaultMaxAttempts = d.TTL, d.PollInterval, d.MaxAttempts
	switch {
	case o.BusyTimeout < 0 || o.ReadConns < 0:
		return errors.New("sqlite: BusyTimeout and ReadConns must not be negative")
	case o.Timeout < 0:
		return errors.New("sqlite: Timeout must be positive")
	}
	return nil
}

// params returns the DSN parameters of a connection.
func (s *Store) params(readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", s.opts.BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous("+s.opts.Synchronous+")")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
		return q.Encode()
	}
	if s.opts.Path != MemoryPath {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	// The group commit's savepoints (group.go) keep the pages they may
	// roll back in a sub-journal, a temporary file by default: in memory
	// it costs no write system call per page. The writer's other
	// temporary structures are bounded by its statements' limits.
	q.Add("_pragma", "temp_store(MEMORY)")
	q.Set("_txlock", "immediate")
	return q.Encode()
}

// createPrivate creates the database file, when missing, readable and
// writable by its owner only (0600). SQLite gives the WAL and shared-memory
// files it creates beside it the database file's permissions, so they are
// private too. An existing file keeps its permissions.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	return f.Close()
}

// fileURI turns a file path into a SQLite file: URI, escaping what a URI
// would otherwise read as a query or fragment.
func fileURI(path string) string {
	u := url.URL{Path: path}
	p := u.EscapedPath()
	if strings.HasPrefix(p, "//") {
		p = "/" + strings.TrimLeft(p, "/")
	}
	return "file:" + p
}

// Close closes the database connections, after letting SQLite refresh its
// query planner statistics (PRAGMA optimize). The store must not be used
// afterwards.
func (s *Store) Close() error {
	s.stop()
	s.polls.Wait()
	s.w.Exec(`PRAGMA optimize`) // best effort
	s.ws.close()
	s.rs.close()
	// Readers first, so that the writer, closing last, checkpoints the
	// WAL into the database file and removes it.
	var err error
	if s.r != s.w {
		err = s.r.Close()
	}
	return errors.Join(err, s.w.Close())
}

// EventPublisher implements task.Manager. It is the store's in-process
// broadcaster, the same for the store's lifetime; every committed change a
// client can observe is published on it after commit.
func (s *Store) EventPublisher() task.EventPublisher { return s.pub }

func (s *Store) now() time.Time { return s.opts.Now() }

// bound returns ctx with the per-call deadline of Options.Timeout.
func (s *Store) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, s.opts.Timeout)
}

// write runs fn in a BEGIN IMMEDIATE transaction on the writer connection
// and, after commit, publishes the task IDs fn returns. It returns fn's
// error (nothing of fn's is then written), or the transaction's, marked by
// markLocked.
//
// Concurrent calls are committed together (group commit, group.go): fn may
// share its transaction with the fns of other calls, run in arrival order
// (a group's batch write, writeBatch, first), each but the first between a
// SAVEPOINT and its RELEASE. fn sees the writes of the members before it,
// as it would have after their commits; its own error is rolled back to
// its savepoint, or with the transaction when it ran first, undoing
// nothing of theirs. fn must therefore neither begin nor end
// transactions, and it must not keep state outside the database that
// outlives a failure of the group: a call succeeds only once the
// transaction has committed.
//
// Its statements run under the transaction's context whatever ctx they are
// given (see wtx). The caller's ctx, bounded by Options.Timeout, bounds the
// wait for the writer: a call whose ctx ends before fn started returns
// ctx's error and fn never runs. Once fn has started in a group of several,
// the call waits for the group's outcome, bounded by Options.Timeout from
// the group's start.
func (s *Store) write(ctx context.Context, fn func(tx *wtx) (publish []string, err error)) error {
	return s.queueWrite(ctx, fn, false)
}

// batchWriteRows is the number of rows above which writeBatch runs a
// write as a batch write. Below it, a write's savepoint costs little, and
// sharing its group's commit with another batch saves a transaction (the
// small claims and completions of a lightly loaded node).
const batchWriteRows = 64

// writeBatch is write for a write of about rows rows, each a few
// statements (a batch of completions or checkpoints). Above batchWriteRows it is
// a batch write: its group holds no other batch write and runs it first,
// outside any savepoint (see group.go).
func (s *Store) writeBatch(ctx context.Context, rows int, fn func(tx *wtx) (publish []string, err error)) error {
	return s.queueWrite(ctx, fn, rows > batchWriteRows)
}

// queueWrite queues fn on the writer, as write or writeBatch.
func (s *Store) queueWrite(ctx context.Context, fn func(tx *wtx) (publish []string, err error), batch bool) error {
	ctx, cancel := s.bound(ctx)
	defer cancel()
	r := &writeReq{ctx: ctx, fn: fn, batch: batch, lead: make(chan struct{}), done: make(chan struct{})}
	leader := s.group.enqueue(r)
	if !leader {
		leader = s.group.wait(r)
	}
	if leader {
		s.lead()
	}
	switch {
	case r.state.Load() == reqAbandoned:
		return fmt.Errorf("sqlite: waiting for the writer: %w", ctx.Err())
	case r.panicked != nil:
		panic(r.panicked)
	}
	return markLocked(r.err)
}

// writeUnbounded is write without the per-call deadline, for migrations.
func (s *Store) writeUnbounded(ctx context.Context, fn func(tx *wtx) (publish []string, err error)) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: begin: %w", err)
	}
	defer s.ws.prepareWanted(ctx)
	ids, err := fn(&wtx{ctx: ctx, tx: tx, cache: s.ws, writer: s.writer})
	if err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: commit: %w", err)
	}
	for _, id := range ids {
		s.pub.Publish(id)
	}
	return nil
}

// markLocked marks an error of a statement that gave up waiting for a lock
// another connection or process holds (SQLITE_BUSY or SQLITE_LOCKED after
// BusyTimeout) with task.ErrUnavailable: the database is out of reach for
// now, and the server answers 503 with Retry-After. Other errors, and nil,
// are returned as they are.
func markLocked(err error) error {
	var se *sqlite.Error
	if !errors.As(err, &se) || errors.Is(err, task.ErrUnavailable) {
		return err
	}
	switch se.Code() & 0xff { // the primary result code of an extended one
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return fmt.Errorf("%w (%w)", err, task.ErrUnavailable)
	}
	return err
}
