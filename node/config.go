package node

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/durable"
	"github.com/taskwire/taskwire/oauth"
	"github.com/taskwire/taskwire/schedule"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/worker"
)

// MaxWorkers bounds Config.Workers.
const MaxWorkers = 1024

// Connection defaults of an HTTP node: descriptors kept for the store, the
// log and the listener when MaxConns is derived from the descriptor limit,
// the bounds of that derived value, and the keep-alive idle timeout.
const (
	reservedDescriptors = 128
	minDerivedConns     = 64
	maxDerivedConns     = 10000
	// DefaultIdleTimeout is Config.IdleTimeout when it is zero.
	DefaultIdleTimeout = 30 * time.Second
)

// Bounds of Config.Lease: the worker runtime's default, and a floor that
// keeps heartbeats (a third of the lease) well above a database round trip.
const (
	// DefaultLease is Config.Lease when it is zero.
	DefaultLease = 30 * time.Second
	// MinLease is the shortest Config.Lease accepted.
	MinLease = time.Second
)

// DefaultShutdownGrace is Config.ShutdownGrace when it is zero.
const DefaultShutdownGrace = 10 * time.Second

// Config configures a node: an MCP endpoint over HTTP (Addr) or over
// standard input and output (Stdio), a worker runtime (Workers), or both,
// over one durable store. The store is handed over once, as Store (open)
// or StoreSpec (opened and checked by the node); the node passes it to the
// server as task manager and session store, to the durable tools as
// enqueuer and to the runtime as job store.
//
// Flag names in the error messages are those of the command line
// (package nodecmd), where every field has a flag of its own.
type Config struct {
	// Name names the program in the start-up and shutdown lines it
	// writes to Messages ("taskwire: serving MCP at ...") and the default
	// endpoint. Empty: "taskwire".
	Name string
	// Version is the default endpoint's version, sent to clients. Empty:
	// "dev".
	Version string
	// Messages receives the start-up and shutdown lines of Run for an
	// operator: where the node serves, its limits, how callers are
	// admitted, the store, the workers, the drain. Nil: none.
	Messages io.Writer
	// Logger receives operational messages; never task IDs, arguments or
	// principals. Nil: none.
	Logger *slog.Logger

	// Store is the durable store, already open (store.Open); the node
	// owns it from New on and closes it when it stops. Exactly one of
	// Store and StoreSpec is set.
	Store backend.Store
	// StoreSpec names the store for the node to open and check when it
	// starts (see store.OpenSpec): pending migrations are applied unless
	// NoMigrate is set.
	StoreSpec StoreSpec
	// NoMigrate refuses an outdated schema instead of migrating it
	// (StoreSpec only).
	NoMigrate bool

	// Tools are the durable tools: served on Endpoint by an API node (a
	// call enqueues a job) and worked by the node's workers.
	Tools *durable.Set
	// Endpoint is the MCP endpoint of an API node, with the program's
	// inline tools. Nil: an endpoint at /mcp named after Name serving
	// Tools. The node serves Tools on it and defaults its
	// TaskProtocolVersions (server.New).
	Endpoint *server.Endpoint
	// Schedules create tasks of the endpoint's task tools on a
	// timetable (package schedule), run by the node's HTTP server: every
	// API node of a fleet may run the same ones, and each period gets one
	// task. The console's overview lists them. A node without HTTP runs
	// none; New refuses Schedules there.
	Schedules []schedule.Schedule
	// Subscriptions configure task listen streams
	// (server.Options.Subscriptions). Nil: the server's default.
	Subscriptions *server.SubscriptionOptions

	// Addr is the HTTP listen address of an API node. Empty: no HTTP
	// server (a worker node, or Stdio).
	Addr string
	// Listener, if set, is listened on instead of Addr (which then only
	// names it in messages and the loopback check); the node closes it.
	Listener net.Listener
	// Stdio, if set, serves Endpoint to one client over standard input
	// and output instead of HTTP (Addr must be empty).
	Stdio *Stdio

	// Workers is the number of jobs run at once in this process. 0: no
	// worker runtime (an API-only node).
	Workers int
	// Queues, when set, names the queues the node's workers serve, each
	// with its own bound on jobs run at once, all within Workers
	// (worker.Options.Queues): the node then claims only the jobs of the
	// durable tools of these queues. Nil: every queue of Tools. The
	// worker runtime validates it when the node starts.
	Queues map[string]worker.QueueConfig
	// DisableFastRecovery turns off the workers' rescue of a dead
	// worker's jobs before their leases expire
	// (worker.Options.DisableFastRecovery): for PostgreSQL behind a
	// pooler that hands out server connections per transaction, where a
	// worker's session lock cannot be held.
	DisableFastRecovery bool
	// Lease is how long a worker's claim on a job lasts without a
	// heartbeat. Zero: DefaultLease.
	Lease time.Duration
	// PollInterval is how often idle workers look for a job
	// (worker.Options.PollInterval). Zero: the runtime's default.
	PollInterval time.Duration
	// WorkerNote is appended to the start-up line that counts the
	// workers ("4 workers" + WorkerNote).
	WorkerNote string
	// ShutdownGrace bounds the HTTP shutdown, and separately how long
	// running jobs may take to finish before they are released. Zero:
	// DefaultShutdownGrace.
	ShutdownGrace time.Duration
	// Signals stop Run: the first drains, a second stops at once. Nil:
	// SIGINT and SIGTERM. A program that handles signals itself passes a
	// channel that never receives, and ends Run's context instead (a
	// drain that StopNow cuts short).
	Signals <-chan os.Signal

	// MaxConns bounds the HTTP connections open at once
	// (server.ConnLimits.Max). Zero: derived from the descriptor limit
	// (the limit less 128, between 64 and 10000).
	MaxConns int
	// MaxConnsPerAddr bounds those from one client address
	// (server.ConnLimits.PerAddr). Zero: server.DefaultConnsPerAddr of
	// MaxConns; server.NoLimit: none (behind a proxy).
	MaxConnsPerAddr int
	// BodyTimeout bounds the time a request body may take to arrive. Zero:
	// the server's default.
	BodyTimeout time.Duration
	// IdleTimeout bounds how long a keep-alive connection may wait for its
	// next request. Zero: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// InsecureDevAuth allows the development identities (any Bearer name
	// is taken as given) on an address other than loopback.
	InsecureDevAuth bool
	// Auth, if set, admits callers by access token instead of development
	// identities, on any address. The node does not close it.
	Auth *oauth.ResourceServer
	// AllowedHosts are the Host names the HTTP server accepts
	// (server.Options.AllowedHosts). Nil: the loopback names only.
	AllowedHosts []string
	// TaskLimits bound each caller's task creation. The zero value means
	// the server's defaults.
	TaskLimits server.TaskLimits
	// Sessions bound 2025-era sessions; an HTTP node keeps them in its
	// store (a Stdio node in memory). The zero value means the server's
	// defaults.
	Sessions server.SessionOptions

	// AdminAddr is the admin listener's address: /metrics, /healthz,
	// /readyz and, with Console.Token, the operator console. Empty: none,
	// and no metrics.
	AdminAddr string
	// AdminAllowedHosts are more Host names the admin listener accepts
	// (admin.Options.AllowedHosts).
	AdminAllowedHosts []string
	// Console configures the operator console on the admin listener.
	Console Console

	// WorkerMetrics, if set, receives the runtime's metrics instead of
	// the admin listener's collectors.
	WorkerMetrics worker.Metrics
}

// Stdio configures a node serving one client over standard input and
// output, as MCP hosts start local servers.
type Stdio struct {
	// In and Out are the protocol streams. Nil: os.Stdin and os.Stdout.
	In  io.Reader
	Out io.Writer
	// Principal is the identity (principal and tenant) every request acts
	// for; tasks are visible to it alone. Empty: server.LocalPrincipal.
	Principal string
	// DrainTimeout bounds how long requests still running at EOF (or after
	// a signal) may take. Zero: server.DefaultStdioDrainTimeout. Running
	// jobs do not wait for it: they are released at once.
	DrainTimeout time.Duration
}

// Validate reports every problem of the configuration in one error, as New
// does; it changes nothing.
func (c Config) Validate() error {
	_, err := c.withDefaults()
	return err
}

// scheduleProblems lists the problems of c.Schedules, one line each; http
// is whether the node serves HTTP.
func (c Config) scheduleProblems(http bool) []string {
	if len(c.Schedules) == 0 {
		return nil
	}
	var problems []string
	if !http {
		problems = append(problems, "schedules are run by an API node: give it an HTTP address")
	}
	if err := schedule.Check(c.Schedules); err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	return problems
}

// withDefaults checks the configuration and returns it with its defaults
// filled in. Every problem is reported, joined in one error.
func (c Config) withDefaults() (Config, error) {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.ShutdownGrace == 0 {
		c.ShutdownGrace = DefaultShutdownGrace
	}
	switch {
	case c.Store == nil && c.StoreSpec.Kind == "":
		add("a node needs a store: Store or StoreSpec")
	case c.Store != nil && c.StoreSpec.Kind != "":
		add("give Store or StoreSpec, not both")
	}
	if c.Workers < 0 || c.Workers > MaxWorkers {
		add("--workers must be between 0 and %d", MaxWorkers)
	}
	if c.ShutdownGrace < 0 {
		add("--shutdown-grace must be positive")
	}
	if c.Lease != 0 && c.Lease < MinLease {
		add("--lease must be at least %v", MinLease)
	}
	if c.Stdio != nil {
		switch {
		case c.Addr != "" || c.Listener != nil:
			add("a stdio node has no HTTP address")
		case len(c.Stdio.Principal) > server.MaxDevPrincipalBytes:
			add("--principal must be 1 to %d bytes", server.MaxDevPrincipalBytes)
		case c.Stdio.DrainTimeout < 0:
			add("--drain-timeout must not be negative")
		}
	}
	http := c.Addr != "" || c.Listener != nil
	if !http && c.Stdio == nil && c.Workers == 0 {
		add("a node needs an HTTP address or at least one worker")
	}
	errs = append(errs, c.scheduleProblems(http)...)
	if c.MaxConns < 0 {
		add("--max-conns must not be negative")
	}
	if c.MaxConnsPerAddr < server.NoLimit {
		add("--max-conns-per-addr must not be negative, except -1 for no limit")
	}
	if c.BodyTimeout < 0 || c.IdleTimeout < 0 {
		add("--body-timeout and --idle-timeout must not be negative")
	}
	if http && c.Auth == nil && !c.InsecureDevAuth && !isLoopbackAddr(c.listenAddr()) {
		add("--addr %s is not a loopback address, and this node admits every caller "+
			"with development identities (any Bearer name is taken as the caller's); "+
			"require access tokens with --auth-issuer and --auth-audience, serve on 127.0.0.1 or ::1, "+
			"or pass --insecure-dev-auth to accept that", c.listenAddr())
	}
	if c.Console.Token != nil && c.AdminAddr == "" {
		add("an operator token needs an admin address: the console is served on the admin listener")
	}
	if c.MaxConns == 0 {
		c.MaxConns = defaultMaxConns()
	}
	if c.MaxConns > 0 && c.MaxConnsPerAddr > c.MaxConns {
		add("--max-conns-per-addr must not exceed --max-conns (%d)", c.MaxConns)
	}
	if c.MaxConnsPerAddr == 0 {
		c.MaxConnsPerAddr = server.DefaultConnsPerAddr(c.MaxConns)
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Lease == 0 {
		c.Lease = DefaultLease
	}
	if c.Name == "" {
		c.Name = "taskwire"
	}
	if c.Version == "" {
		c.Version = "dev"
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Messages == nil {
		c.Messages = io.Discard
	}
	if c.Stdio != nil {
		s := *c.Stdio
		if s.Principal == "" {
			s.Principal = server.LocalPrincipal
		}
		if s.In == nil {
			s.In = os.Stdin
		}
		if s.Out == nil {
			s.Out = os.Stdout
		}
		c.Stdio = &s
	}
	if errs != nil {
		// One line, as a command line reports it.
		return c, errors.New(strings.Join(errs, "; "))
	}
	return c, nil
}

// listenAddr is the address the node's HTTP server listens on, for
// messages and the loopback check.
func (c *Config) listenAddr() string {
	if c.Addr == "" && c.Listener != nil {
		return c.Listener.Addr().String()
	}
	return c.Addr
}

// defaultMaxConns is the connection cap when MaxConns is not given: the
// process's descriptor limit less reservedDescriptors, within
// [minDerivedConns, maxDerivedConns]; 1024 where the limit is unknown.
func defaultMaxConns() int {
	limit, ok := descriptorLimit()
	if !ok {
		return 1024
	}
	if limit < reservedDescriptors+minDerivedConns {
		return minDerivedConns
	}
	return int(min(limit-reservedDescriptors, maxDerivedConns))
}

// isLoopbackAddr reports whether the host of a listen address is a
// loopback name or address. An empty host (all interfaces) is not.
func isLoopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
