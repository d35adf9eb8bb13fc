package nodecmd

import (
	"flag"
	"strconv"
	"strings"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/node"
	"github.com/taskwire/taskwire/worker"
)

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
