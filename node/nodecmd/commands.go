package nodecmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/taskwire/taskwire/internal/cliflags"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/store"
	"github.com/taskwire/taskwire/store/postgres"
)

// commonFlags are the flags every store-using command shares.
type commonFlags struct {
	store    *string
	schema   *string
	logLevel *string
	timeout  *time.Duration
	connect  *time.Duration
}

// addCommonFlags defines --store and --log-level on fs.
func (p *Program) addCommonFlags(fs *flag.FlagSet) commonFlags {
	return commonFlags{
		store: fs.String("store", "", "task store `spec`: sqlite:PATH, PATH.db, postgres://USER@HOST/DB or memory: "+
			"(default $"+storeEnv+", else "+defaultStore(p.Name)+")"),
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
// value it refuses is a *UsageError.
func (c commonFlags) resolve(name string, getenv func(string) string, stderr io.Writer) (node.StoreSpec, *slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(*c.logLevel)); err != nil {
		return node.StoreSpec{}, nil, usageErrorf("--log-level: %v", err)
	}
	parsed, err := store.ParseSpec(resolveStore(name, *c.store, getenv))
	if err != nil {
		return node.StoreSpec{}, nil, &UsageError{msg: err.Error()}
	}
	spec := node.StoreSpec{Spec: parsed}
	if err := withSchema(&spec, *c.schema); err != nil {
		return node.StoreSpec{}, nil, &UsageError{msg: err.Error()}
	}
	if spec.Timeout = *c.timeout; spec.Timeout <= 0 {
		return node.StoreSpec{}, nil, usageErrorf("--store-timeout must be positive")
	}
	if spec.ConnectTimeout = *c.connect; spec.ConnectTimeout <= 0 {
		return node.StoreSpec{}, nil, usageErrorf("--connect-timeout must be positive")
	}
	return spec, slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})), nil
}

// serveFlags are the flags of `NAME serve`.
type serveFlags struct {
	cmd                             string // the command's name (Program.ServeName), for messages
	common                          commonFlags
	addr, hostList, schedules       *string
	work                            workerFlags
	maxConns, maxConnsPerAddr       *int
	taskBurst, maxActive            *int
	sessionsPerCaller, sessionsMax  *int
	taskRate                        *float64
	grace, bodyTimeout, idleTimeout *time.Duration
	sessionIdle, sessionLifetime    *time.Duration
	noMigrate, insecureDevAuth      *bool
	configure                       func(*node.Config) error
	auth                            authFlags
	stdio                           stdioFlags
	admin                           *adminAddrFlag
	console                         consoleFlags
}

// addServeFlags defines the flags of `NAME serve` on fs, the program's own
// included. Their defaults are the library's.
func (p *Program) addServeFlags(fs *flag.FlagSet) *serveFlags {
	f := &serveFlags{common: p.addCommonFlags(fs)}
	f.addr = fs.String("addr", "127.0.0.1:8080", "`address` to listen on")
	f.schedules = fs.String("schedules", "", "JSON `file` of schedules that create tasks of the node's task tools on a timetable "+
		"(see go doc github.com/taskwire/taskwire/schedule.Decode); every node of a fleet may run the same file")
	f.work = addWorkerFlags(fs, "jobs run at once by in-process workers, of every queue; 0 for an API-only node; "+
		"with --queues and no --workers, the sum of the queues' workers")
	f.noMigrate = fs.Bool("no-migrate", false, "refuse an outdated schema instead of migrating it")
	f.configure = p.flags("serve", fs)
	f.grace = fs.Duration("shutdown-grace", node.DefaultShutdownGrace, "how long in-flight requests, and then running jobs, may take to finish on shutdown")
	f.maxConns = fs.Int("max-conns", 0, "HTTP connections open at once; at the cap the longest idle keep-alive connection, once idle 1s, is closed to admit a new client, else new clients wait (default: the descriptor limit less 128, between 64 and 10000)")
	f.maxConnsPerAddr = fs.Int("max-conns-per-addr", 0, "HTTP connections open at once from one client address (IPv4 address or IPv6 /64); beyond them a connection is closed at once "+
		"(default: an eighth of --max-conns, at least 16); -1 for no limit, behind a reverse proxy")
	f.bodyTimeout = fs.Duration("body-timeout", server.DefaultBodyReadTimeout, "how long a request body may take to arrive")
	f.idleTimeout = fs.Duration("idle-timeout", node.DefaultIdleTimeout, "how long a keep-alive connection may wait for its next request")
	f.insecureDevAuth = fs.Bool("insecure-dev-auth", false, "allow a non-loopback --addr without --auth-issuer, although every caller is then admitted with a development identity")
	f.auth = addAuthFlags(fs)
	f.hostList = fs.String("allowed-hosts", "", "more `hosts` whose name a request's Host header may carry, comma-separated, without port "+
		"(a proxy's public name; * for any, only behind a proxy that checks Host); the loopback names and, with "+
		"--auth-audience, the audience's host are always accepted")
	f.taskRate = fs.Float64("task-rate", server.DefaultTaskCreateRate, "task-creating calls per second one caller may make; -1 for no limit")
	f.taskBurst = fs.Int("task-burst", server.DefaultTaskCreateBurst, "task-creating calls one caller may make at once")
	f.maxActive = fs.Int("max-active-tasks", server.DefaultMaxActiveTasks, "working and input_required tasks one caller may have; -1 for no limit")
	f.sessionIdle = fs.Duration("session-idle", server.DefaultSessionIdleTimeout, "how long a 2025-era session lives without a request")
	f.sessionLifetime = fs.Duration("session-lifetime", server.DefaultSessionLifetime, "how long a 2025-era session lives at most")
	f.sessionsPerCaller = fs.Int("sessions-per-caller", server.DefaultSessionsPerPrincipal, "2025-era sessions one caller may hold at once")
	f.sessionsMax = fs.Int("sessions-max", server.DefaultMaxStoredSessions, "2025-era sessions the store may hold at once, all callers and nodes together; initialize beyond it gets 503")
	f.stdio = addStdioFlags(fs, p.Name)
	f.admin = addAdminFlag(fs)
	f.console = addConsoleFlags(fs)
	return f
}

// checkTransport refuses, as usage errors, the HTTP-only flags given with
// --stdio and a malformed --admin-addr.
func (f *serveFlags) checkTransport() error {
	if *f.stdio.on && f.admin.addr != "" {
		return usageErrorf("%s: --admin-addr does not apply to --stdio", f.cmd)
	}
	if err := f.admin.check(); err != nil {
		return fmt.Errorf("%s: %w", f.cmd, err)
	}
	if *f.stdio.on && f.auth.given() {
		return usageErrorf("%s: the --auth-* flags do not apply to --stdio, whose caller is --principal", f.cmd)
	}
	if *f.stdio.on && *f.hostList != "" {
		return usageErrorf("%s: --allowed-hosts does not apply to --stdio", f.cmd)
	}
	if *f.stdio.on && *f.schedules != "" {
		return usageErrorf("%s: --schedules does not apply to --stdio", f.cmd)
	}
	return nil
}

// serve runs `NAME serve`: the endpoint over HTTP and, unless --workers is
// 0, the workers, over one store.
func (p *Program) serve(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cmd := p.serveName()
	fs := cliflags.New(cmd, "usage: "+p.Name+" "+cmd+" [flags]\n       "+p.Name+" "+cmd+" --stdio [flags]\n\n"+
		"Serves "+p.what()+" at http://ADDR"+p.path()+", or to one client over stdin and stdout\n"+
		"with --stdio, and runs --workers in-process workers on the store.")
	f := p.addServeFlags(fs)
	f.cmd = cmd
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := f.checkTransport(); err != nil {
		return err
	}
	hosts, err := allowedHosts(*f.hostList, *f.auth.audience)
	if err != nil {
		return usageErrorf("%s: %v", cmd, err)
	}
	limits, err := taskLimitFlags(*f.taskRate, *f.taskBurst, *f.maxActive)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	sessions, err := sessionFlags(*f.sessionIdle, *f.sessionLifetime, *f.sessionsPerCaller, *f.sessionsMax)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if *f.stdio.on {
		if err := f.stdio.defaultStore(p.Name, f.common, getenv); err != nil {
			return fmt.Errorf("%s --stdio: %w", f.cmd, err)
		}
	}
	spec, logger, err := f.common.resolve(p.Name, getenv, stderr)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	base := node.Config{
		StoreSpec: spec, NoMigrate: *f.noMigrate,
		ShutdownGrace: *f.grace, Logger: logger, TaskLimits: limits, Sessions: sessions,
	}
	if err := f.work.apply(fs, &base); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if *f.stdio.on {
		return p.serveStdio(ctx, f, base, stdout)
	}
	base.AllowedHosts = hosts
	return p.serveHTTP(ctx, f, base, stdout, getenv)
}

// serveStdio runs `NAME serve --stdio` on the node base describes.
func (p *Program) serveStdio(ctx context.Context, f *serveFlags, base node.Config, stdout io.Writer) error {
	cfg := p.config(base)
	if err := checkFlags(cfg, *f.grace, false, f.configure); err != nil {
		return fmt.Errorf("%s --stdio: %w", f.cmd, err)
	}
	if *f.stdio.principal == "" { // the library would default it
		return fmt.Errorf("%s --stdio: --principal must be 1 to %d bytes", f.cmd, server.MaxDevPrincipalBytes)
	}
	cfg.Stdio = f.stdio.config()
	cfg.Stdio.Out = stdout
	return p.run(ctx, cfg, f.cmd+" --stdio")
}

// serveHTTP runs `NAME serve` over HTTP on the node base describes, with
// the resource server of the --auth-* flags and the console.
func (p *Program) serveHTTP(ctx context.Context, f *serveFlags, base node.Config, stdout io.Writer, getenv func(string) string) error {
	if *f.addr == "" {
		return usageErrorf("%s: --addr must not be empty", f.cmd)
	}
	base.Addr, base.Messages = *f.addr, stdout
	base.MaxConns, base.MaxConnsPerAddr = *f.maxConns, *f.maxConnsPerAddr
	base.BodyTimeout, base.IdleTimeout = *f.bodyTimeout, *f.idleTimeout
	base.InsecureDevAuth = *f.insecureDevAuth
	base.AdminAddr, base.AdminAllowedHosts = f.admin.addr, f.admin.hosts
	if *f.schedules != "" {
		s, err := readSchedules(*f.schedules)
		if err != nil {
			return fmt.Errorf("%s: --schedules: %w", f.cmd, err)
		}
		base.Schedules = s
	}
	cfg := p.config(base)
	// The non-loopback --addr check needs the resource server: with
	// --auth-issuer it runs when the node starts.
	if err := checkFlags(cfg, *f.grace, f.auth.given(), f.configure); err != nil {
		return fmt.Errorf("%s: %w", f.cmd, err)
	}
	rs, err := f.auth.resolve(ctx, endpointPath(cfg), cfg.Logger)
	if err != nil {
		return fmt.Errorf("%s: %w", f.cmd, err)
	}
	if rs != nil {
		defer rs.Close() // after the node has stopped admitting
	}
	cons, err := f.console.config(getenv, f.admin.addr, rs)
	if err != nil {
		return fmt.Errorf("%s: %w", f.cmd, err)
	}
	cfg.Console, cfg.Auth = cons, rs
	return p.run(ctx, cfg, f.cmd)
}

// checkFlags completes cfg with the program's own flags (configure), then
// refuses, as a usage error, the flag values that the node would refuse
// when it starts (see node.Config.Validate), so that they are reported
// before anything is opened; for serve --stdio, whose node has no address,
// the flags it shares with serve. grace is --shutdown-grace, which the
// library would default when zero. authGiven: the --auth-* flags are set,
// so the node will verify tokens and may listen beyond loopback.
func checkFlags(cfg *node.Config, grace time.Duration, authGiven bool, configure func(*node.Config) error) error {
	if configure != nil {
		if err := configure(cfg); err != nil {
			return err
		}
	}
	c := *cfg // the checks below change a copy
	if authGiven {
		c.InsecureDevAuth = true // the node checks again with its resource server
	}
	if c.Addr == "" && c.Workers == 0 {
		c.Workers = 1 // serve --stdio without workers, which needs no address
	}
	if grace <= 0 {
		return usageErrorf("--shutdown-grace must be positive")
	}
	if err := c.Validate(); err != nil {
		return &UsageError{msg: err.Error()}
	}
	return nil
}

// sessionFlags turns --session-idle, --session-lifetime,
// --sessions-per-caller and --sessions-max into server.SessionOptions
// (without a store, which the node adds). Values out of range are a
// *UsageError.
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
// a typo for "none"), as a *UsageError.
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

// worker runs `NAME worker`: workers only, with no HTTP server.
func (p *Program) worker(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	cmd := p.workerName()
	fs := cliflags.New(cmd, "usage: "+p.Name+" "+cmd+" [flags]\n\n"+
		"Runs --workers workers on the store, without an MCP endpoint: a fleet's workers share\n"+
		"one PostgreSQL store with its serve nodes.")
	common := p.addCommonFlags(fs)
	work := addWorkerFlags(fs, "jobs run at once, of every queue; with --queues and no --workers, the sum of the queues' workers")
	noMigrate := fs.Bool("no-migrate", false, "refuse an outdated schema instead of migrating it")
	configure := p.flags("worker", fs)
	grace := fs.Duration("shutdown-grace", node.DefaultShutdownGrace, "how long running jobs may take to finish on shutdown before they are released")
	adminAddr := addAdminFlag(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	if err := adminAddr.check(); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	spec, logger, err := common.resolve(p.Name, getenv, stderr)
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	base := node.Config{
		StoreSpec: spec, NoMigrate: *noMigrate, ShutdownGrace: *grace, Logger: logger, Messages: stdout,
		AdminAddr: adminAddr.addr, AdminAllowedHosts: adminAddr.hosts,
	}
	if err := work.apply(fs, &base); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if base.Workers < 1 {
		return usageErrorf("%s: --workers must be at least 1", cmd)
	}
	cfg := p.config(base)
	if err := checkFlags(cfg, *grace, false, configure); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	return p.run(ctx, cfg, cmd)
}

// migrate runs `NAME migrate`: apply pending migrations and exit.
func (p *Program) migrate(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := cliflags.New("migrate", "usage: "+p.Name+" migrate [flags]\n\n"+
		"Applies the store's pending schema migrations, prints the schema version and exits.")
	common := p.addCommonFlags(fs)
	if err := parseFlags(fs, args, stdout); err != nil {
		return err
	}
	spec, logger, err := common.resolve(p.Name, getenv, stderr)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	version, err := node.Migrate(ctx, spec, logger)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	fmt.Fprintf(stdout, "%s: store %s (%s) is at schema version %d\n", p.Name, spec, spec.Describe(spec.Schema), version)
	return nil
}

// readSchedules reads a --schedules file.
func readSchedules(path string) ([]schedule.Schedule, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return schedule.Decode(f)
}
