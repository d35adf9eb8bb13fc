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
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/taskwire/taskwire/server"
)

// stdioConfig configures `taskwire serve --stdio`: the demo endpoint over
// standard input and output for one client (the host that started the
// process), with in-process workers, over one durable store.
type stdioConfig struct {
	// Node is the store and worker part; its Addr is empty.
	Node nodeConfig
	// Principal is the identity (principal and tenant) every request acts
	// for; tasks are visible to it alone.
	Principal string
	// DrainTimeout bounds how long requests still running at EOF (or after
	// a signal) may take. Zero: server.DefaultStdioDrainTimeout. Running
	// jobs do not wait for it: they are released at once.
	DrainTimeout time.Duration
}

// dataDirName is the directory of taskwire's files under the user's data
// directory.
const dataDirName = "taskwire"

// userDataDir returns the user's data directory, following the XDG base
// directory convention: $XDG_DATA_HOME when it is an absolute path, else
// %LocalAppData% on Windows, ~/Library/Application Support on macOS and
// ~/.local/share elsewhere. Go's os.UserConfigDir and os.UserCacheDir name
// the configuration and cache directories; tasks are data (they must not
// be wiped with a cache), hence this third convention.
func userDataDir(getenv func(string) string, goos string) (string, error) {
	if d := getenv("XDG_DATA_HOME"); d != "" && filepath.IsAbs(d) {
		return d, nil
	}
	if goos == "windows" {
		if d := getenv("LocalAppData"); d != "" {
			return d, nil
		}
		return "", errors.New("%LocalAppData% is not set")
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("$HOME is not set")
	}
	if goos == "darwin" {
		return filepath.Join(home, "Library", "Application Support"), nil
	}
	return filepath.Join(home, ".local", "share"), nil
}

// stdioDefaultStore is the store of `serve --stdio` without --store or
// $TASKWIRE_STORE: a SQLite file in taskwire's data directory, created
// (mode 0700) when missing. A host starts the server in a working
// directory of its choosing, so the working directory is no place for it.
func stdioDefaultStore(getenv func(string) string) (string, error) {
	base, err := userDataDir(getenv, runtime.GOOS)
	if err != nil {
		return "", fmt.Errorf("no data directory for the default store (give --store): %w", err)
	}
	dir := filepath.Join(base, dataDirName)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating the data directory: %w", err)
	}
	return "sqlite:" + filepath.Join(dir, "taskwire.db"), nil
}

// runStdio serves the demo endpoint on stdin and stdout until stdin ends
// or SIGINT or SIGTERM arrives, then stops promptly, as a host that closes
// stdin and signals two seconds later expects: at EOF or the first signal,
// whichever comes first, the running jobs' handlers are cancelled and the
// jobs released through the store at once (the next process on the store
// claims them without waiting for their lease; --shutdown-grace does not
// apply), the worker runtime stops claiming, and calls waiting inline for a
// task end with the task still running. Other requests still running get
// DrainTimeout to send their responses (a signal ends the reading of
// stdin, not that drain), the store is closed, and runStdio returns. It
// writes nothing to stdout but protocol messages; logs go to the
// configured logger (stderr).
func runStdio(ctx context.Context, cfg stdioConfig, stdin io.Reader, stdout io.Writer) error {
	switch {
	case cfg.Principal == "" || len(cfg.Principal) > server.MaxDevPrincipalBytes:
		return fmt.Errorf("serve --stdio: --principal must be 1 to %d bytes", server.MaxDevPrincipalBytes)
	case cfg.DrainTimeout < 0:
		return errors.New("serve --stdio: --drain-timeout must not be negative")
	}
	signals := cfg.Node.signals
	if signals == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(ch)
		signals = ch
	}
	// A signal, from start-up on, ends the serving (and abandons a
	// start-up under way). The watcher ends with ctx: at the latest when
	// runStdio returns.
	ctx, cancel := context.WithCancel(ctx)
	var watchers sync.WaitGroup
	defer func() {
		cancel()
		watchers.Wait()
	}()
	signalled := make(chan struct{})
	watchers.Go(func() {
		select {
		case <-signals:
			close(signalled)
			cancel()
		case <-ctx.Done():
		}
	})
	logger := cfg.Node.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
		cfg.Node.Logger = logger
	}
	n, err := startStdioNode(ctx, cfg.Node)
	if err != nil {
		return fmt.Errorf("serve --stdio: %w", err)
	}
	ep := demoEndpoint()
	if err := n.tools.Serve(ep, n.store); err != nil {
		n.Shutdown()
		return fmt.Errorf("serve --stdio: %w", err)
	}
	sessions := cfg.Node.Sessions // in memory: a stdio session ends with its process
	srv, err := server.New(server.Options{
		Sessions:         &sessions,
		Endpoints:        []*server.Endpoint{ep},
		Logger:           logger,
		TaskManager:      n.store,
		TaskLimits:       cfg.Node.TaskLimits,
		TaskQueueTimeout: cfg.Node.Store.Timeout,
		// One local client: its listens may follow its own tasks; the
		// store still authorizes each lookup.
		Subscriptions: &server.SubscriptionOptions{Authorizer: server.AllowSubscriptions(time.Minute)},
	})
	if err != nil {
		n.Shutdown()
		return fmt.Errorf("serve --stdio: %w", err)
	}
	in := newEOFReader(stdin)
	watchers.Go(func() {
		select {
		case <-in.ended:
			logger.Info("stdin ended: releasing running jobs")
		case <-signalled:
			logger.Info("signalled: releasing running jobs")
		case <-ctx.Done():
		}
		n.StopNow()
		srv.Close()
	})
	logger.Info("serving MCP on stdio", "store", n.cfg.Store.String(), "workers", n.cfg.Workers)
	id := server.Identity{Principal: cfg.Principal, Tenant: cfg.Principal}
	serveErr := srv.ServeStdio(ctx, in, stdout, server.StdioOptions{Identity: &id, DrainTimeout: cfg.DrainTimeout})
	cancel()
	watchers.Wait() // the jobs are released and the server closed
	err = errors.Join(serveErr, n.Shutdown())
	if err != nil {
		return fmt.Errorf("serve --stdio: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// eofReader is the input of ServeStdio: it closes ended when a Read first
// fails, at EOF or on a read error, so that the jobs are released while
// the requests still running drain.
type eofReader struct {
	r     io.Reader
	ended chan struct{}
	once  sync.Once
}

func newEOFReader(r io.Reader) *eofReader { return &eofReader{r: r, ended: make(chan struct{})} }

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.ended) })
	}
	return n, err
}

// startStdioNode opens the store and, with workers, starts the worker
// runtime (startNode without HTTP); with no workers, it only opens the
// store, for an API-only process whose jobs run elsewhere.
func startStdioNode(ctx context.Context, cfg nodeConfig) (*node, error) {
	cfg.Addr = ""
	if cfg.Workers > 0 {
		return startNode(ctx, cfg)
	}
	if cfg.ShutdownGrace <= 0 {
		return nil, errors.New("--shutdown-grace must be positive")
	}
	st, err := openStore(ctx, cfg.Store, cfg.NoMigrate, cfg.Logger)
	if err != nil {
		return nil, err
	}
	return &node{cfg: cfg, store: st, tools: durableTools(cfg.ReportsDir), failed: make(chan error, 2)}, nil
}

// stdioFlags are the flags of `serve --stdio`.
type stdioFlags struct {
	on        *bool
	principal *string
	drain     *time.Duration
}

func addStdioFlags(fs *flag.FlagSet) stdioFlags {
	return stdioFlags{
		on: fs.Bool("stdio", false, "serve one client on stdin and stdout instead of HTTP (--addr and the connection flags are ignored); "+
			"the store defaults to taskwire/taskwire.db in the user's data directory"),
		principal: fs.String("principal", server.LocalPrincipal, "with --stdio: the `name` every request acts for; tasks are visible to it alone"),
		drain:     fs.Duration("drain-timeout", server.DefaultStdioDrainTimeout, "with --stdio: how long requests still running when stdin ends may take"),
	}
}

// defaultStore points --store at the data directory's file when neither
// --store nor $TASKWIRE_STORE names a store.
func (f stdioFlags) defaultStore(common commonFlags, getenv func(string) string) error {
	if *common.store != "" || getenv(storeEnv) != "" {
		return nil
	}
	spec, err := stdioDefaultStore(getenv)
	if err != nil {
		return err
	}
	*common.store = spec
	return nil
}

// config returns the configuration (runStdio validates it).
func (f stdioFlags) config(node nodeConfig) stdioConfig {
	return stdioConfig{Node: node, Principal: *f.principal, DrainTimeout: *f.drain}
}
