// Command taskwire runs taskwire MCP servers with durable tasks.
//
// Usage:
//
//	taskwire serve   [--addr 127.0.0.1:8080] [--store SPEC] [--schema NAME] [--store-timeout 5s]
//	                 [--connect-timeout 10s] [--workers 4] [--lease 30s] [--no-migrate]
//	                 [--reports-dir DIR] [--log-level info] [--shutdown-grace 10s] [--max-conns N]
//	                 [--max-conns-per-addr N] [--body-timeout 10s] [--idle-timeout 30s] [--insecure-dev-auth]
//	                 [--allowed-hosts HOSTS] [--task-rate 20] [--task-burst 100] [--max-active-tasks 1000]
//	                 [--session-idle 30m] [--session-lifetime 24h] [--sessions-per-caller 100]
//	                 [--sessions-max 100000] [--auth-issuer URL --auth-audience URI]
//	                 [--auth-jwks-url URL] [--auth-tenant-claim NAME] [--auth-scopes NAME=SCOPE,...]
//	                 [--admin-addr ADDR] [--admin-allowed-hosts HOSTS] [--admin-token-file FILE]
//	                 [--console-show-arguments] [--console-scope taskwire:operator]
//	taskwire serve --stdio [--principal local] [--drain-timeout 10s] [--store SPEC] [--workers 4] [...]
//	taskwire worker  [--store SPEC] [--schema NAME] [--store-timeout 5s] [--connect-timeout 10s]
//	                 [--workers 4] [--lease 30s] [--no-migrate] [--reports-dir DIR] [--log-level info]
//	                 [--shutdown-grace 10s] [--admin-addr ADDR] [--admin-allowed-hosts HOSTS]
//	taskwire migrate [--store SPEC] [--schema NAME] [--store-timeout 5s] [--connect-timeout 10s]
//	                 [--log-level info]
//	taskwire version
//	taskwire help    [COMMAND]
//	taskwire tools   [--url URL] [--token TOKEN] [--token-dir DIR] [--header K:V]... [--protocol REV]
//	                 [--timeout D] [--json]
//	taskwire call    [tools' flags] [--detach] TOOL [key=value | key:=JSON]...
//	taskwire task    get|wait|cancel [tools' flags] ID
//	taskwire task    answer [tools' flags] ID KEY=JSON...
//	taskwire login   URL [--client-id ID] [--client-metadata-url URL] [--client-secret SECRET]
//	                 [--scopes SCOPES] [--no-browser] [--timeout 5m] [--token-dir DIR]
//	taskwire logout  URL [--token-dir DIR]
//
// Every command prints its flags with -h (or taskwire help COMMAND). A
// mistake on the command line (an unknown command or flag, a flag value
// or argument that does not parse or is refused) prints one line saying
// what is wrong and where the usage is, and exits 2; other failures of
// serve, worker, migrate, login and logout exit 1.
//
// tools, call and task are a client for any MCP server over HTTP (see
// docs/client.md): the URL defaults to $TASKWIRE_URL, then
// http://127.0.0.1:8080/mcp; --token (default $TASKWIRE_TOKEN) is sent as a
// Bearer token. call types key=value by the tool's input schema, waits for
// a task with a progress line on stderr, asks its forms when stdin is a
// terminal, and detaches on Ctrl-C. They exit 0 on success, 1 on a tool
// error, 2 on a usage error, 3 when authentication is required or refused,
// 4 when the server is unreachable or has no MCP endpoint at the URL (HTTP
// 404: a wrong path), 5 when the task failed, 6 when it was
// cancelled, 7 when it needs input and the command is not interactive, 124
// when --timeout passed and 130 when interrupted.
//
// SPEC is sqlite:PATH (or a path ending in .db) or a postgres:// URL. It
// defaults to $TASKWIRE_STORE, then to sqlite:taskwire.db in the working
// directory, so that tasks survive a restart without any set-up. --schema
// names the PostgreSQL schema holding the tables (default taskwire), so that
// several deployments can share one database. --store-timeout (default 5s)
// bounds every store call, so that a database that stops answering fails
// task operations after that long instead of holding them;
// --connect-timeout (default 10s) bounds connecting to PostgreSQL. Every
// command checks the store before it says it is ready (see store.Open: a
// SQLite file must take a write, a PostgreSQL server must answer) and prints
// what it resolved to: the file, or host, port, database and schema, never
// a password. A postgres:// URL must name its database.
//
// serve starts the demo endpoint at http://ADDR/mcp: inline tools, and the
// durable task tools reports.generate and approvals.request, whose jobs run
// on --workers in-process workers (0 for an API-only node). worker runs only
// the workers, for a fleet sharing one PostgreSQL store. --lease is how long
// a worker's claim on a job lasts without a heartbeat: a job of a crashed
// process runs again elsewhere after about one lease. Both apply pending
// schema migrations unless --no-migrate is given; migrate only migrates.
// serve and worker shut down gracefully on SIGINT or SIGTERM: running jobs
// are given --shutdown-grace to finish, then released to run again later.
//
// serve --stdio serves the same endpoint to one client over standard input
// and output instead of HTTP, as MCP hosts start local servers (see
// docs/stdio.md): nothing but protocol messages is written to stdout, logs
// go to stderr, and every request acts for --principal. Its store defaults
// to taskwire/taskwire.db in the user's data directory ($XDG_DATA_HOME,
// else ~/.local/share; ~/Library/Application Support on macOS;
// %LocalAppData% on Windows). At the end of stdin or the first SIGINT or
// SIGTERM it releases the running jobs at once (the next process on the
// store runs them), lets requests still running drain and exits.
//
// serve bounds what a slow or hostile network can hold: at most --max-conns
// connections are open at once (the default is the descriptor limit less
// 128, between 64 and 10000; at the cap the keep-alive connection idle
// longest, once idle for a second, is closed to admit a new client, and
// with none idle that long new clients wait in the kernel's accept queue), at most --max-conns-per-addr of them
// from one client address (default an eighth of --max-conns, at least 16;
// -1 turns it off, as behind a reverse proxy, where every connection comes
// from the proxy), a request's headers must arrive within 10 s and
// its body within --body-timeout, and a keep-alive connection is closed
// after --idle-timeout without a request. With --auth-issuer and
// --auth-audience, serve is an OAuth 2.1 resource server: every request
// needs a valid access token from that issuer for that resource (see
// docs/authorization.md). Without the auth flags it admits callers with
// development identities (a Bearer token is taken as the caller's name),
// says so, and refuses an --addr that is not loopback unless
// --insecure-dev-auth is given. Requests must carry a loopback name in
// Host, or the host of --auth-audience, or a name of --allowed-hosts (the
// name a proxy forwards). Each caller may start --task-rate task-creating calls a second
// (bursts of --task-burst) and have --max-active-tasks tasks working or
// waiting for input; beyond either, calls get HTTP 429 with Retry-After.
//
// The endpoint serves clients of protocol revision 2026-07-28 statelessly
// and clients of 2025-06-18 and 2025-11-25 in sessions opened by
// initialize. Sessions are kept in the store, so they survive a restart and
// work on every node of a fleet (on PostgreSQL, a client's answer to an
// elicitation that reaches another node is forwarded to the node holding
// the call). A session ends after --session-idle without a request (a
// minute after initialize when no request follows it), or
// --session-lifetime after it opened; each caller may hold
// --sessions-per-caller sessions at once, and the store (every caller and
// node together, anonymous callers included) --sessions-max. With the
// development identities, each client address (an IPv4 address or an IPv6
// /64) is also one caller, whatever Bearer names or none it sends: it may
// hold --sessions-per-caller sessions and 32 listen streams.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/store/postgres"
)

// version is the taskwire release, set at build time with -ldflags.
var version = "0.1.0-dev"

func main() {
	os.Exit(runMain(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// commonFlags are the flags every store-using command shares.
type commonFlags struct {
	store    *string
	schema   *string
	logLevel *string
	timeout  *time.Duration
	connect  *time.Duration
}

// addCommonFlags defines --store and --log-level on fs.
func addCommonFlags(fs *flag.FlagSet) commonFlags {
	return commonFlags{
		store: fs.String("store", "", "task store `spec`: sqlite:PATH, PATH.db or postgres://USER@HOST/DB "+
			"(default $"+storeEnv+", else "+defaultStore+")"),
		schema: fs.String("schema", "", "PostgreSQL `schema` holding the store's tables (default "+postgres.DefaultSchema+"); "+
			"not for SQLite"),
		logLevel: fs.String("log-level", "info", "log `level`: debug, info, warn or error"),
		timeout: fs.Duration("store-timeout", postgres.DefaultTimeout, "bound of every store call, connecting and "+
			"waiting for a connection included: a database that stops answering fails calls after this `duration`"),
		connect: fs.Duration("connect-timeout", store.DefaultConnectTimeout, "how long connecting to PostgreSQL may take "+
			"before the command fails"),
	}
}

// resolve returns the store spec and a logger writing to stderr. A flag
// value it refuses is a *usageError.
func (c commonFlags) resolve(getenv func(string) string, stderr io.Writer) (storeSpec, *slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*c.logLevel)); err != nil {
		return storeSpec{}, nil, usageErrorf("--log-level: %v", err)
	}
	parsed, err := store.ParseSpec(resolveStore(*c.store, getenv))
	if err != nil {
		return storeSpec{}, nil, &usageError{msg: err.Error()}
	}
	spec := storeSpec{Spec: parsed}
	if err := spec.withSchema(*c.schema); err != nil {
		return storeSpec{}, nil, &usageError{msg: err.Error()}
	}
	if spec.Timeout = *c.timeout; spec.Timeout <= 0 {
		return storeSpec{}, nil, usageErrorf("--store-timeout must be positive")
	}
	if spec.ConnectTimeout = *c.connect; spec.ConnectTimeout <= 0 {
		return storeSpec{}, nil, usageErrorf("--connect-timeout must be positive")
	}
	return spec, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}

// serveCmd runs `taskwire serve`: the demo endpoint over HTTP and, unless
// --workers is 0, the workers, over one store.
func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("serve", "usage: taskwire serve [flags]\n       taskwire serve --stdio [flags]\n\n"+
		"Serves the demo MCP endpoint at http://ADDR/mcp, or to one client over stdin and stdout\n"+
		"with --stdio, and runs --workers in-process workers on the store.")
	common := addCommonFlags(fs)
	addr := fs.String("addr", "127.0.0.1:8080", "`address` to listen on")
	workers := fs.Int("workers", 4, "jobs run at once by in-process workers; 0 for an API-only node")
	lease := fs.Duration("lease", defaultLease, "how long a worker's claim on a job lasts without a heartbeat (at least "+minLease.String()+")")
	noMigrate := fs.Bool("no-migrate", false, "refuse an outdated schema instead of migrating it")
	reportsDir := fs.String("reports-dir", "", "`directory` for reports.generate's files (default reports/ beside a SQLite file, else in the working directory)")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "how long in-flight requests, and then running jobs, may take to finish on shutdown")
	maxConns := fs.Int("max-conns", 0, "HTTP connections open at once; at the cap the longest idle keep-alive connection, once idle 1s, is closed to admit a new client, else new clients wait (default: the descriptor limit less 128, between 64 and 10000)")
	maxConnsPerAddr := fs.Int("max-conns-per-addr", 0, "HTTP connections open at once from one client address (IPv4 address or IPv6 /64); beyond them a connection is closed at once "+
		"(default: an eighth of --max-conns, at least 16); -1 for no limit, behind a reverse proxy")
	bodyTimeout := fs.Duration("body-timeout", 10*time.Second, "how long a request body may take to arrive")
	idleTimeout := fs.Duration("idle-timeout", defaultIdleTimeout, "how long a keep-alive connection may wait for its next request")
	insecureDevAuth := fs.Bool("insecure-dev-auth", false, "allow a non-loopback --addr without --auth-issuer, although every caller is then admitted with a development identity")
	auth := addAuthFlags(fs)
	hostList := fs.String("allowed-hosts", "", "more `hosts` whose name a request's Host header may carry, comma-separated, without port "+
		"(a proxy's public name; * for any, only behind a proxy that checks Host); the loopback names and, with "+
		"--auth-audience, the audience's host are always accepted")
	taskRate := fs.Float64("task-rate", server.DefaultTaskCreateRate, "task-creating calls per second one caller may make; -1 for no limit")
	taskBurst := fs.Int("task-burst", server.DefaultTaskCreateBurst, "task-creating calls one caller may make at once")
	maxActive := fs.Int("max-active-tasks", server.DefaultMaxActiveTasks, "working and input_required tasks one caller may have; -1 for no limit")
	sessionIdle := fs.Duration("session-idle", 30*time.Minute, "how long a 2025-era session lives without a request")
	sessionLifetime := fs.Duration("session-lifetime", 24*time.Hour, "how long a 2025-era session lives at most")
	sessionsPerCaller := fs.Int("sessions-per-caller", 100, "2025-era sessions one caller may hold at once")
	sessionsMax := fs.Int("sessions-max", 100_000, "2025-era sessions the store may hold at once, all callers and nodes together; initialize beyond it gets 503")
	stdio := addStdioFlags(fs)
	adminAddr := addAdminFlag(fs)
	consoleOpts := addConsoleFlags(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if *stdio.on && adminAddr.addr != "" {
		return usageErrorf("serve: --admin-addr does not apply to --stdio")
	}
	if err := adminAddr.check(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if *stdio.on && auth.given() {
		return usageErrorf("serve: the --auth-* flags do not apply to --stdio, whose caller is --principal")
	}
	if *stdio.on && *hostList != "" {
		return usageErrorf("serve: --allowed-hosts does not apply to --stdio")
	}
	hosts, err := allowedHosts(*hostList, *auth.audience)
	if err != nil {
		return usageErrorf("serve: %v", err)
	}
	limits, err := taskLimitFlags(*taskRate, *taskBurst, *maxActive)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	sessions, err := sessionFlags(*sessionIdle, *sessionLifetime, *sessionsPerCaller, *sessionsMax)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if *stdio.on {
		if err := stdio.defaultStore(common, getenv); err != nil {
			return fmt.Errorf("serve --stdio: %w", err)
		}
	}
	spec, logger, err := common.resolve(getenv, stderr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if *stdio.on {
		cfg := nodeConfig{
			Store: spec, NoMigrate: *noMigrate, Workers: *workers, Lease: *lease,
			ReportsDir: *reportsDir, ShutdownGrace: *grace, Logger: logger,
			TaskLimits: limits, Sessions: sessions,
		}
		if err := checkFlags(cfg, false); err != nil {
			return fmt.Errorf("serve --stdio: %w", err)
		}
		return runStdio(ctx, stdio.config(cfg), os.Stdin, stdout)
	}
	if *addr == "" {
		return usageErrorf("serve: --addr must not be empty")
	}
	cfg := nodeConfig{
		AllowedHosts: hosts,
		Addr:         *addr, Store: spec, NoMigrate: *noMigrate, Workers: *workers, Lease: *lease,
		ReportsDir: *reportsDir, ShutdownGrace: *grace, Logger: logger,
		MaxConns: *maxConns, MaxConnsPerAddr: *maxConnsPerAddr, BodyTimeout: *bodyTimeout, IdleTimeout: *idleTimeout, InsecureDevAuth: *insecureDevAuth,
		TaskLimits: limits, Sessions: sessions, AdminAddr: adminAddr.addr, AdminAllowedHosts: adminAddr.hosts,
	}
	// The non-loopback --addr check needs the resource server: with
	// --auth-issuer it runs when the node starts.
	if err := checkFlags(cfg, auth.given()); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	rs, err := auth.resolve(ctx, logger)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	if rs != nil {
		defer rs.Close() // after the node has stopped admitting
	}
	cons, err := consoleOpts.config(getenv, adminAddr.addr, rs)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	cfg.Console, cfg.Auth = cons, rs
	return runNode(ctx, cfg, "serve", stdout)
}

// checkFlags refuses, as a usage error, the flag values that the node
// would refuse when it starts (see nodeConfig.validate), so that they are
// reported before anything is opened; for serve --stdio, whose node has
// no address, the flags it shares with serve. authGiven: the --auth-*
// flags are set, so the node will verify tokens and may listen beyond
// loopback.
func checkFlags(cfg nodeConfig, authGiven bool) error {
	if authGiven {
		cfg.InsecureDevAuth = true // the node checks again with its resource server
	}
	if cfg.Addr == "" && cfg.Workers == 0 {
		cfg.Workers = 1 // serve --stdio without workers, which needs no address
	}
	if err := cfg.validate(); err != nil { // a copy: the defaults it fills are dropped
		return &usageError{msg: err.Error()}
	}
	return nil
}

// sessionFlags turns --session-idle, --session-lifetime,
// --sessions-per-caller and --sessions-max into server.SessionOptions
// (without a store, which the node adds). Values out of range are a
// *usageError.
func sessionFlags(idle, lifetime time.Duration, perCaller, stored int) (server.SessionOptions, error) {
	switch {
	case idle <= 0 || lifetime <= 0:
		return server.SessionOptions{}, usageErrorf("--session-idle and --session-lifetime must be positive")
	case idle > lifetime:
		return server.SessionOptions{}, usageErrorf("--session-idle must not exceed --session-lifetime")
	case perCaller < 1:
		return server.SessionOptions{}, usageErrorf("--sessions-per-caller must be at least 1")
	case stored < perCaller:
		return server.SessionOptions{}, usageErrorf("--sessions-max must be at least --sessions-per-caller")
	}
	return server.SessionOptions{IdleTimeout: idle, MaxLifetime: lifetime, MaxPerPrincipal: perCaller, MaxStored: stored}, nil
}

// taskLimitFlags turns --task-rate, --task-burst and --max-active-tasks
// into server.TaskLimits: -1 is no limit, 0 and other negative values are
// refused (a flag's default is the library's default, so 0 would only be
// a typo for "none"), as a *usageError.
func taskLimitFlags(rate float64, burst, maxActive int) (server.TaskLimits, error) {
	switch {
	case rate != server.NoLimit && rate <= 0:
		return server.TaskLimits{}, usageErrorf("--task-rate must be positive, or -1 for no limit")
	case burst < 1:
		return server.TaskLimits{}, usageErrorf("--task-burst must be at least 1")
	case maxActive != server.NoLimit && maxActive < 1:
		return server.TaskLimits{}, usageErrorf("--max-active-tasks must be positive, or -1 for no limit")
	}
	return server.TaskLimits{CreateRate: rate, CreateBurst: burst, MaxActive: maxActive}, nil
}

// workerCmd runs `taskwire worker`: workers only, with no HTTP server.
func workerCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("worker", "usage: taskwire worker [flags]\n\n"+
		"Runs --workers workers on the store, without an MCP endpoint: a fleet's workers share\n"+
		"one PostgreSQL store with its serve nodes.")
	common := addCommonFlags(fs)
	workers := fs.Int("workers", 4, "jobs run at once")
	lease := fs.Duration("lease", defaultLease, "how long a worker's claim on a job lasts without a heartbeat (at least "+minLease.String()+")")
	noMigrate := fs.Bool("no-migrate", false, "refuse an outdated schema instead of migrating it")
	reportsDir := fs.String("reports-dir", "", "`directory` for reports.generate's files (default reports/ beside a SQLite file, else in the working directory)")
	grace := fs.Duration("shutdown-grace", 10*time.Second, "how long running jobs may take to finish on shutdown before they are released")
	adminAddr := addAdminFlag(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := adminAddr.check(); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	spec, logger, err := common.resolve(getenv, stderr)
	if err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	if *workers < 1 {
		return usageErrorf("worker: --workers must be at least 1")
	}
	cfg := nodeConfig{
		Store: spec, NoMigrate: *noMigrate, Workers: *workers, Lease: *lease,
		ReportsDir: *reportsDir, ShutdownGrace: *grace, Logger: logger, AdminAddr: adminAddr.addr,
		AdminAllowedHosts: adminAddr.hosts,
	}
	if err := checkFlags(cfg, false); err != nil {
		return fmt.Errorf("worker: %w", err)
	}
	return runNode(ctx, cfg, "worker", stdout)
}

// perAddrText is how the start-up line names --max-conns-per-addr.
func perAddrText(n int) string {
	if n == server.NoLimit {
		return "any number"
	}
	return strconv.Itoa(n)
}

// runNode starts a node, reports where it runs, and stops it on SIGINT,
// SIGTERM or the end of ctx: the first signal drains (in-flight requests
// and running jobs get --shutdown-grace, which is printed), a second one
// stops at once (running jobs are cancelled and released to run again).
func runNode(ctx context.Context, cfg nodeConfig, cmd string, stdout io.Writer) error {
	signals := cfg.signals
	if signals == nil {
		ch := make(chan os.Signal, 2)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(ch)
		signals = ch
	}
	// A signal during start-up abandons it.
	startCtx, cancelStart := context.WithCancel(ctx)
	started := make(chan struct{})
	var startWG sync.WaitGroup
	startWG.Go(func() {
		select {
		case <-signals:
			cancelStart()
		case <-started:
		}
	})
	n, err := startNode(startCtx, cfg)
	close(started)
	startWG.Wait()
	cancelStart()
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if n.URL() != "" {
		fmt.Fprintln(stdout, "taskwire: serving MCP at", n.URL())
		fmt.Fprintf(stdout, "taskwire: at most %d connections at once (--max-conns), %s from one address (--max-conns-per-addr)\n",
			n.cfg.MaxConns, perAddrText(n.cfg.MaxConnsPerAddr))
		printAuth(stdout, n.cfg)
	}
	fmt.Fprintf(stdout, "taskwire: store %s (%s)\n", n.cfg.Store, n.cfg.Store.describe())
	if a := n.admin.listenAddr(); a != "" {
		fmt.Fprintf(stdout, "taskwire: admin endpoints at http://%s (/metrics, /healthz, /readyz)\n", a)
		printConsole(stdout, a, n.cfg.Console.Token != nil)
	}
	if n.cfg.Workers > 0 {
		plural := "s"
		if n.cfg.Workers == 1 {
			plural = ""
		}
		fmt.Fprintf(stdout, "taskwire: %d worker%s; reports are written to %s\n", n.cfg.Workers, plural, n.cfg.ReportsDir)
	} else {
		fmt.Fprintln(stdout, "taskwire: no workers (API only): tasks wait for `taskwire worker` on the same store")
	}
	n.cfg.Logger.Info("started", "command", cmd, "workers", n.cfg.Workers)

	var runErr error
	select {
	case <-ctx.Done():
	case <-signals:
	case runErr = <-n.Failed():
		n.cfg.Logger.Error("stopping after a failure", "err", runErr)
	}
	what := "in-flight requests and running jobs have"
	switch {
	case n.hs == nil:
		what = "running jobs have"
	case n.rt == nil:
		what = "in-flight requests have"
	}
	fmt.Fprintf(stdout, "taskwire: draining: %s up to %v each to finish (--shutdown-grace); "+
		"press Ctrl-C again to stop at once\n", what, n.cfg.ShutdownGrace)
	n.cfg.Logger.Info("shutting down")
	done := make(chan error, 1)
	go func() { done <- n.Shutdown() }()
	var shutErr error
	select {
	case shutErr = <-done:
	case <-signals:
		fmt.Fprintln(stdout, "taskwire: stopping at once: running jobs are cancelled and will run again later")
		n.StopNow()
		shutErr = <-done
	}
	if shutErr != nil {
		runErr = errors.Join(runErr, shutErr)
	}
	if runErr != nil {
		return fmt.Errorf("%s: %w", cmd, runErr)
	}
	n.cfg.Logger.Info("stopped")
	return nil
}

// migrateCmd runs `taskwire migrate`: apply pending migrations and exit.
func migrateCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := newFlagSet("migrate", "usage: taskwire migrate [flags]\n\n"+
		"Applies the store's pending schema migrations, prints the schema version and exits.")
	common := addCommonFlags(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	spec, logger, err := common.resolve(getenv, stderr)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Open applies the pending migrations; Migrate again is a no-op that
	// makes the intent explicit.
	st, err := openStore(ctx, spec, false, logger)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	err = st.Migrate(ctx)
	if cerr := st.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("migrate: store %s: %w", spec, err)
	}
	fmt.Fprintf(stdout, "taskwire: store %s (%s) is at schema version %d\n", spec, spec.describe(), schemaVersion(spec))
	return nil
}
