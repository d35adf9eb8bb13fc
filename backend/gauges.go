package backend

import (
	"context"
	"time"

	"github.com/taskwire/taskwire/task"
)

// JobState classifies a job that has not finished. The set is closed.
type JobState string

// Job states of Gauges. A job whose task finished (or whose task
// expired and awaits deletion) is in none of them.
const (
	// JobAvailable: due and unclaimed, waiting for a worker.
	JobAvailable JobState = "available"
	// JobRetryWaiting: unclaimed after a failed run, and not due before
	// the retry's backoff ends.
	JobRetryWaiting JobState = "retry_waiting"
	// JobScheduled: unclaimed, never failed, and not due yet (enqueued
	// with a later first run).
	JobScheduled JobState = "scheduled"
	// JobRunning: claimed by a worker whose lease has not been given back.
	JobRunning JobState = "running"
	// JobInputWaiting: parked while its task is input_required.
	JobInputWaiting JobState = "input_waiting"
)

// JobStates lists every JobState, in a fixed order.
var JobStates = []JobState{JobAvailable, JobRetryWaiting, JobScheduled, JobRunning, JobInputWaiting}

// JobKey keys the job counts of Gauges: a job's queue (see
// EnqueueOptions.Queue; DefaultQueue for jobs created before queues
// existed), its kind as the application registered it, and a state.
type JobKey struct {
	Queue string
	Kind  string
	State JobState
}

// Gauges is what a store reports about its queue for monitoring: counts
// read at one moment. It has no dependency on a metrics library; package
// prometheus turns a GaugeSource into gauges at scrape time.
type Gauges struct {
	// Tasks counts tasks by status, terminal and expired ones included
	// until they are deleted.
	Tasks map[task.Status]int
	// Jobs counts the jobs that have not finished, by queue, kind and
	// state. A missing key is zero.
	Jobs map[JobKey]int
	// OldestAvailable is how long the longest-waiting JobAvailable job has
	// been due, by the store's clock; zero when none is.
	OldestAvailable time.Duration
	// Sessions counts the live 2025-era sessions the store holds, of every
	// node sharing it.
	Sessions int
}

// GaugeSource is a store that reports its Gauges; store/sqlite,
// store/postgres and store/memory implement it. Gauges reads one
// consistent snapshot, bounded by the store's per-call timeout and by ctx;
// it fails with the store's wrapped error when the database does not
// answer.
type GaugeSource interface {
	Gauges(ctx context.Context) (Gauges, error)
}

// QueueGaugeSource is a GaugeSource that can leave out the counts of
// tasks: QueueGauges reads what Gauges reads, with the same bounds and
// failures, except that Tasks is nil. It serves a caller that counts the
// tasks otherwise (the console's overview reads them by tool and status
// from Operator), on a store where counting them is a scan of every task.
type QueueGaugeSource interface {
	GaugeSource
	QueueGauges(ctx context.Context) (Gauges, error)
}
