package nodecmd

import (
	"flag"
	"strconv"
	"strings"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/worker"
)

// workerFlags are the flags of every command that runs workers: serve
// (and serve --stdio), worker, and gateway's two, which are these.
type workerFlags struct {
	workers        *int
	queues         *string
	lease          *time.Duration
	noFastRecovery *bool
}

// addWorkerFlags defines --workers (with the help text workersHelp),
// --queues, --lease and --no-fast-recovery on fs, with the library's
// defaults.
func addWorkerFlags(fs *flag.FlagSet, workersHelp string) workerFlags {
	return workerFlags{
		workers: fs.Int("workers", 4, workersHelp),
		queues: fs.String("queues", "", "the `queues` to serve, comma-separated name=workers pairs, each with the jobs of it run at once "+
			"(mail=4,reports=1); default: every queue of the durable tools, sharing --workers"),
		lease: fs.Duration("lease", node.DefaultLease, "how long a worker's claim on a job lasts without a heartbeat (at least "+node.MinLease.String()+")"),
		noFastRecovery: fs.Bool("no-fast-recovery", false, "do not take back the jobs of a dead worker before their leases expire "+
			"(for PostgreSQL behind a transaction-mode pooler such as PgBouncer, where the worker's session lock cannot be held)"),
	}
}

// apply parses --queues and sets the worker fields of cfg from the flags
// (fs parsed): --workers, or the sum of the queues' workers when --queues
// is given without it. --queues with --workers 0 is a usage error; the
// node validates the rest.
func (w workerFlags) apply(fs *flag.FlagSet, cfg *node.Config) error {
	queues, err := parseQueues(*w.queues)
	if err != nil {
		return err
	}
	if queues != nil && flagGiven(fs, "workers") && *w.workers == 0 {
		return usageErrorf("--queues needs workers; --workers 0 runs none")
	}
	cfg.Workers, cfg.Queues = queueWorkers(fs, *w.workers, queues), queues
	cfg.Lease, cfg.DisableFastRecovery = *w.lease, *w.noFastRecovery
	return nil
}

// parseQueues reads --queues: comma-separated name=N pairs, each a queue
// the workers serve and the jobs of it they run at once. "" means none
// given (nil). Problems are usage errors.
func parseQueues(s string) (map[string]worker.QueueConfig, error) {
	if s == "" {
		return nil, nil
	}
	qs := map[string]worker.QueueConfig{}
	for _, item := range strings.Split(s, ",") {
		name, n, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok {
			return nil, usageErrorf("--queues: %q is not name=workers", item)
		}
		if err := backend.CheckQueue(name); err != nil {
			return nil, usageErrorf("--queues: %q: %v", name, err)
		}
		if _, dup := qs[name]; dup {
			return nil, usageErrorf("--queues: %q is given twice", name)
		}
		w, err := strconv.Atoi(n)
		if err != nil || w < 1 || w > node.MaxWorkers {
			return nil, usageErrorf("--queues: %q: the workers must be a number between 1 and %d", name, node.MaxWorkers)
		}
		qs[name] = worker.QueueConfig{MaxWorkers: w}
		if len(qs) > worker.MaxQueues {
			return nil, usageErrorf("--queues: at most %d queues", worker.MaxQueues)
		}
	}
	return qs, nil
}

// queueWorkers returns the --workers of a node serving qs: the flag's
// value when it was given, else the sum of the queues' workers (bounded
// by node.MaxWorkers), so that each queue can run all its workers.
func queueWorkers(fs *flag.FlagSet, workers int, qs map[string]worker.QueueConfig) int {
	if qs == nil || flagGiven(fs, "workers") {
		return workers
	}
	sum := 0
	for _, q := range qs {
		sum += q.MaxWorkers
	}
	return min(sum, node.MaxWorkers)
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}
