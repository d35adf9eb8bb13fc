package backend

import (
	"context"
	"errors"
)

// LivenessRescuer is an optional extension of JobStore: a JobStore that
// implements it can tell that the process which claimed a running job has
// died, and so hand the job out again within seconds instead of when its
// lease expires. store/memory, store/sqlite and store/postgres implement
// it; the worker runtime uses it unless worker.Options.DisableFastRecovery
// is set.
//
// A process instance takes a hold (HoldInstance) before it claims, and
// names it in every claim (ClaimParams.Instance); the store records the
// instance with each job claimed. The hold lasts as long as the process,
// by a mechanism the operating system or the database ends when the
// process dies (store/postgres: a session-level advisory lock on a
// connection of its own; store/sqlite: an flock on a lock file next to the
// database). InstanceHold.RescueDead then takes the running jobs of
// instances whose hold has ended.
//
// Fencing is as for RescueExpired: a rescued job's next claim gets a new
// attempt, so that the dead run's late writes (a process that was only
// cut off, not dead) fail with ErrLeaseLost. The failure mode of every
// doubt (a hold the store cannot probe, a lock file of another host, a
// pooler that does not keep sessions) is to take nothing: such jobs wait
// for their leases as before.
type LivenessRescuer interface {
	// HoldInstance takes a hold for a new, randomly named process
	// instance and keeps it until Close. It fails when the store cannot
	// hold one (ErrLivenessUnsupported: an in-memory SQLite database, for
	// instance); the caller then claims without an instance.
	HoldInstance(ctx context.Context) (InstanceHold, error)
}

// InstanceHold is one process instance's hold, from
// LivenessRescuer.HoldInstance. Its methods are safe for concurrent use.
type InstanceHold interface {
	// ID is the instance to name in claims (ClaimParams.Instance). It is
	// "" while the hold is not known to be held (store/postgres, between
	// losing its connection and taking the lock again): claims made then
	// record no instance and are rescued by lease expiry only.
	ID() string

	// RescueDead takes at most p.Limit running jobs claimed by instances
	// other than this one whose hold has ended, and handles each exactly
	// as RescueExpired handles an expired lease: an interrupted run is
	// counted, p.MaxInterruptedRuns applies, the task's status message
	// becomes InterruptedMessage; p.Now is the time of the writes. A store
	// may need two passes of the same hold to take an instance as dead
	// (store/postgres requires the instance to be found unheld by two
	// passes between which this hold stayed held, so that the holders
	// cut off by a database restart have time to take their locks
	// again). It returns how many jobs it handled.
	RescueDead(ctx context.Context, p RescueParams) (int, error)

	// Close releases the hold; the instance then counts as dead, and its
	// running jobs are taken by the next RescueDead of another hold.
	// Release the jobs first (JobStore.Release) on an orderly shutdown.
	Close() error
}

// ErrLivenessUnsupported: the store cannot hold an instance in this
// configuration; jobs are rescued by lease expiry only.
var ErrLivenessUnsupported = errors.New("backend: instance liveness is not supported by this store")
