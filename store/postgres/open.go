package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/listcursor"
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/task"
)

// Defaults of Options.
const (
	DefaultSchema       = "taskwire"
	DefaultTTL          = storerules.DefaultTTL
	DefaultPollInterval = storerules.DefaultPollInterval
	DefaultMaxAttempts  = backend.DefaultMaxAttempts
	DefaultTimeout      = 5 * time.Second
)

// maxSchemaLen keeps the notification channel, the schema name plus
// channelSuffix, within PostgreSQL's 63-byte identifier limit.
const maxSchemaLen = 63 - len(channelSuffix)

const channelSuffix = "_task_events"

var schemaName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Options configure Open. Zero values mean the defaults.
type Options struct {
	// URL is the connection string (postgres://user@host:port/db?...). It
	// must reach the server directly, not through a transaction-pooling
	// proxy: the store holds one session for LISTEN.
	URL string
	// Schema holds every table of the store. Default "taskwire". It must
	// be a plain identifier (letters, digits, underscores) of at most 51
	// bytes; the notification channel is Schema + "_task_events".
	Schema string
	// NoMigrate makes Open refuse a schema older than the code
	// (ErrSchemaOutdated) instead of migrating it.
	NoMigrate bool
	// Now is the clock of every stored time. Default: the database
	// server's clock (now()), which all nodes share; tests inject their
	// own.
	Now func() time.Time
	// Logger receives migration and listener messages. Default
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
	// MaxConns bounds the connection pool (the LISTEN session comes on
	// top). Default: pgxpool's, the larger of 4 and the number of CPUs.
	MaxConns int32
	// Timeout bounds every call of the store: waiting for a connection,
	// connecting (unless the URL sets connect_timeout), each statement on
	// the server (statement_timeout, unless the URL sets it) and the call
	// as a whole on the client, so a database that stops answering fails
	// calls with an error after Timeout instead of holding them. A
	// transaction's statements share one deadline; the rollback of a
	// failed one has its own. Migrations are bounded by MigrateTimeout
	// instead. Default 5 s; it must be whole milliseconds.
	Timeout time.Duration
	// ConnectTimeout bounds each connection attempt (TCP, TLS and the
	// start-up exchange), unless the URL sets connect_timeout. Default
	// Timeout; it must be whole milliseconds.
	ConnectTimeout time.Duration
	// MigrateTimeout bounds a migration as a whole, on the client and as
	// the migration transaction's statement_timeout, so that a server that
	// accepts connections but never answers fails Open and Migrate instead
	// of holding them. Zero: no bound (migrations of large tables may take
	// long); it must be whole milliseconds.
	MigrateTimeout time.Duration
}

// Store is a durable task store in one PostgreSQL schema. It implements
// backend.Store (its job side is Jobs) and is safe for concurrent use by
// any number of nodes sharing the schema. Close it when done.
type Store struct {
	opts Options
	pool *boundedPool // every call bounded by opts.Timeout; pool.Pool for migrations
	log  *slog.Logger
	q    queries
	node string // random ID of this Store in notification payloads

	cursors *listcursor.Codec // the schema's tasks/list cursors

	listenCfg *pgx.ConnConfig
	channel   string
	bc        *task.Broadcaster
	pub       *publisher

	// answers is the channel of forwarded answers (relay.go), and relay
	// the AnswerRelay of the store, if one was made; the listener hands it
	// that channel's notifications.
	answers string
	relay   atomic.Pointer[AnswerRelay]

	stop      context.CancelFunc
	wg        sync.WaitGroup
	closeOnce sync.Once

	claimStats claimStats

	// completions counts completing statements; it picks their slot of
	// the chart's counter row (activitySlot).
	completions atomic.Uint32

	hooks testHooks
}

// testHooks let tests watch and steer the listener; nil fields do nothing.
type testHooks struct {
	// connected runs with the backend PID of each new LISTEN session.
	connected func(pid uint32)
	// beforeReconnect runs before each reconnection attempt.
	beforeReconnect func()
}

var (
	_ backend.Store = (*Store)(nil)

	_ backend.JobStore         = jobStore{}
	_ backend.BatchCompleter   = jobStore{}
	_ backend.ProgressReporter = jobStore{}
	_ backend.Pruner           = jobStore{}
	_ backend.LivenessRescuer  = jobStore{}
)

// Open connects to opts.URL, applies pending migrations to opts.Schema
// unless opts.NoMigrate, starts listening for the task events of other
// nodes, and returns the store. It fails with ErrSchemaTooNew when the
// schema was migrated by newer code, and with ErrSchemaOutdated when it
// needs migrations and opts.NoMigrate is set.
func Open(ctx context.Context, opts Options) (*Store, error) {
	return open(ctx, opts, testHooks{})
}

// open is Open with hooks for tests.
func open(ctx context.Context, opts Options, hooks testHooks) (*Store, error) {
	if err := opts.setDefaults(); err != nil {
		return nil, err
	}
	poolCfg, err := pgxpool.ParseConfig(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse URL: %w", err)
	}
	if opts.MaxConns > 0 {
		poolCfg.MaxConns = opts.MaxConns
	}
	applyTimeout(poolCfg.ConnConfig, opts.ConnectTimeout, opts.Timeout)
	var node [8]byte
	if _, err := rand.Read(node[:]); err != nil {
		return nil, fmt.Errorf("postgres: node ID: %w", err)
	}
	s := &Store{
		opts:      opts,
		log:       opts.Logger,
		q:         newQueries(opts.Schema),
		node:      hex.EncodeToString(node[:]),
		listenCfg: poolCfg.ConnConfig.Copy(),
		channel:   opts.Schema + channelSuffix,
		answers:   opts.Schema + answersSuffix,
		bc:        task.NewBroadcaster(),
		hooks:     hooks,
	}
	s.pub = newPublisher(s)
	pool, err := pgxpool.NewWithConfig(ctx, poolCfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: connect: %w", err)
	}
	s.pool = &boundedPool{Pool: pool, timeout: opts.Timeout}
	if err := s.checkSchema(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	if err := s.loadCursors(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	l, err := s.newListener(ctx)
	if err != nil {
		s.pool.Close()
		return nil, err
	}
	runCtx, stop := context.WithCancel(context.Background())
	s.stop = stop
	s.wg.Go(func() { l.run(runCtx) })
	s.wg.Go(func() { s.pub.run(runCtx) })
	return s, nil
}

func (o *Options) setDefaults() error {
	if o.URL == "" {
		return errors.New("postgres: Options.URL is required")
	}
	if o.Schema == "" {
		o.Schema = DefaultSchema
	}
	if !schemaName.MatchString(o.Schema) || len(o.Schema) > maxSchemaLen {
		return fmt.Errorf("postgres: Schema must be letters, digits and underscores, at most %d bytes, not %q", maxSchemaLen, o.Schema)
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	d := storerules.EnqueueDefaults{TTL: o.DefaultTTL, PollInterval: o.DefaultPollInterval, MaxAttempts: o.DefaultMaxAttempts}
	if err := d.Resolve(); err != nil {
		return fmt.Errorf("postgres: %w", err)
	}
	o.DefaultTTL, o.DefaultPollInterval, o.DefaultMaxAttempts = d.TTL, d.PollInterval, d.MaxAttempts
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = o.Timeout
	}
	switch {
	case o.MaxConns < 0:
		return errors.New("postgres: MaxConns must not be negative")
	case o.Timeout < time.Millisecond || o.Timeout%time.Millisecond != 0:
		return errors.New("postgres: Timeout must be positive whole milliseconds")
	case o.ConnectTimeout < time.Millisecond || o.ConnectTimeout%time.Millisecond != 0:
		return errors.New("postgres: ConnectTimeout must be positive whole milliseconds")
	case o.MigrateTimeout < 0 || o.MigrateTimeout%time.Millisecond != 0:
		return errors.New("postgres: MigrateTimeout must be zero or positive whole milliseconds")
	}
	return nil
}

// applyTimeout bounds connection attempts of the sessions cfg opens by
// connect, and their statements by timeout, unless the connection string
// bounds them itself.
func applyTimeout(cfg *pgx.ConnConfig, connect, timeout time.Duration) {
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = connect
	}
	if _, set := cfg.RuntimeParams["statement_timeout"]; !set {
		cfg.RuntimeParams["statement_timeout"] = strconv.FormatInt(timeout.Milliseconds(), 10)
	}
}

// Close stops the listener and the publisher and closes the connections.
// The store must not be used afterwards.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.stop()
		s.wg.Wait()
		s.pool.Close()
	})
	return nil
}

// EventPublisher implements task.Manager. It returns the same publisher for
// the store's lifetime: Subscribe registers with the store's in-process
// broadcaster, which carries this store's own committed changes (published
// after commit) and those of every other node sharing the schema (through
// LISTEN); Publish reaches local subscribers at once and other nodes through
// NOTIFY.
func (s *Store) EventPublisher() task.EventPublisher { return s.pub }

// now returns the timestamp argument of a statement: the injected clock's
// time in whole milliseconds, or nil for the database's clock, which every
// statement reads as coalesce($n, date_trunc('milliseconds', now())).
func (s *Store) now() any {
	if s.opts.Now == nil {
		return nil
	}
	return s.opts.Now().Truncate(time.Millisecond)
}

// clock is the store's clock in Go: the injected one, or the machine's.
func (s *Store) clock() time.Time {
	if s.opts.Now == nil {
		return time.Now()
	}
	return s.opts.Now()
}

// at returns t as a statement's time argument, or the store's clock when t
// is zero.
func (s *Store) at(t time.Time) any {
	if t.IsZero() {
		return s.now()
	}
	return t.Truncate(time.Millisecond)
}

// wrapErr prefixes a storage error with what the store was doing; nil stays
// nil.
func wrapErr(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("postgres: %s: %w", what, err)
}

// quoteLiteral quotes s as an SQL string literal.
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
