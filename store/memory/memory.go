// Package memory is a complete in-memory backend: a bounded, in-process
// backend.Store for tests, development, simulation and deliberately
// ephemeral single-process servers.
//
// A *Manager is everything a durable store is to the runtime: the
// task.Manager, task.Lister and task.ActiveCounter the server serves tasks
// from, the backend.Enqueuer and backend.BatchEnqueuer of task creation
// handlers, a session.Store (session/memory) for 2025-era sessions, and,
// through Jobs, the backend.JobStore the worker runtime claims jobs from,
// with the same leases, fencing, retries, rescue of expired leases and
// expiry as store/sqlite and store/postgres, and the optional
// backend.BatchCompleter and backend.ProgressReporter. It passes the shared
// behavioural suite of the durable stores (store/storetest).
//
// It is NOT durable. A restart loses every task and session, and nodes
// cannot share it: use a durable store (see store/) for anything users rely
// on. It has no outbox, so it is not a backend.Pruner: a finished task's
// job is freed with the task.
//
// Bounds: it holds at most Options.Capacity tasks, expired ones included
// until they are deleted, and never evicts a live one: a creation that finds
// it full first deletes the expired tasks and then, if it is still full,
// fails with ErrFull. The worker runtime's cleanup (JobStore.DeleteExpired)
// deletes expired tasks too. Sessions are bounded by Options.MaxSessions,
// and a task's input requests and responses by what workers and clients
// may send (the server and the runtime bound both). A call costs at most
// O(n log n) in the tasks held, under one mutex.
//
// Tasks come two ways. Enqueue (and EnqueueBatch) creates a task with a
// job, for the worker runtime: the job's lease drives it. Create makes a
// task without a job, which the application's own goroutines drive through
// the trusted methods (MarkWorking, RequestInput, Complete, ...); those
// methods refuse enqueued tasks (ErrEnqueued).
//
// The manager starts no goroutine and performs no work by itself. It reads
// time only from Options.Now.
package memory

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/session"
	sessionmemory "github.com/taskwire/taskwire/session/memory"
	"github.com/taskwire/taskwire/store/internal/listcursor"
	"github.com/taskwire/taskwire/task"
)

// Defaults of Options.
const (
	DefaultCapacity     = 1024
	DefaultTTL          = time.Hour
	DefaultPollInterval = time.Second
)

// Errors of the manager.
var (
	// ErrFull: Create or Enqueue found the manager at capacity with no
	// expired task to delete.
	ErrFull = errors.New("memory: task manager is full")
	// ErrTerminal: the task already reached a terminal state.
	ErrTerminal = errors.New("memory: task is already terminal")
	// ErrPendingResponses: RequestInput while accepted responses have not
	// been taken.
	ErrPendingResponses = errors.New("memory: accepted input responses have not been taken")
	// ErrKeyReused: an input request key was used earlier in the task's
	// life. It is backend.ErrKeyReused, which the JobStore returns too.
	ErrKeyReused = backend.ErrKeyReused
	// ErrEnqueued: a trusted method was called for a task Enqueue made,
	// which only its job's lease may change (see Jobs).
	ErrEnqueued = errors.New("memory: the task is driven by its job")
)

// Options configure New. Zero values mean the defaults.
type Options struct {
	// Capacity bounds the tasks held, expired ones included until they
	// are deleted. Default 1,024.
	Capacity int
	// TTL is how long a task is kept after creation: the TTL of every
	// Create, and of an Enqueue whose options set none. Default one hour.
	TTL time.Duration
	// PollInterval is the interval suggested to clients, unless an
	// Enqueue's options set one. Default 1 s.
	PollInterval time.Duration
	// MaxSessions bounds the records of the session store Sessions
	// returns (see session/memory). Default 10,000.
	MaxSessions int
	// Now is the clock. Default time.Now; tests inject their own.
	Now func() time.Time
}

// Manager is the in-memory backend. It is safe for concurrent use.
type Manager struct {
	opts      Options
	publisher *task.Broadcaster
	cursors   *listcursor.Codec
	sessions  *sessionmemory.Store

	mu    sync.Mutex
	tasks map[string]*entry
	keys  map[idemKey]string // idempotency key → task ID
	holds map[string]bool    // instances held (backend.LivenessRescuer)
}

// entry is one task, with its job when Enqueue made it.
type entry struct {
	snap            task.Task
	endpoint        string
	tenant          string
	principal       string
	expires         time.Time // zero: never
	key             idemKey   // zero: none
	outstanding     mcp.InputRequests
	used            map[string]bool
	responses       mcp.InputResponses // with a job: every response accepted; else those not yet taken
	cancelRequested bool
	// queue and priority are the job's, kept with the task for an
	// operator's retry after the job row is pruned.
	queue    string
	priority int
	job      *job
	events   []backend.TaskEvent // history, oldest first, at most backend.MaxTaskEvents
}

// expired reports whether the task's TTL has passed at now.
func (e *entry) expired(now time.Time) bool { return !e.expires.IsZero() && !now.Before(e.expires) }

var (
	_ backend.Store      = (*Manager)(nil)
	_ task.ActiveCounter = (*Manager)(nil)
)

// New returns an empty manager. It fails when an option is negative or a
// duration is not whole milliseconds.
func New(opts Options) (*Manager, error) {
	if opts.Capacity == 0 {
		opts.Capacity = DefaultCapacity
	}
	if opts.TTL == 0 {
		opts.TTL = DefaultTTL
	}
	if opts.PollInterval == 0 {
		opts.PollInterval = DefaultPollInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Capacity < 0 || opts.TTL < time.Millisecond || opts.PollInterval < time.Millisecond ||
		opts.TTL%time.Millisecond != 0 || opts.PollInterval%time.Millisecond != 0 {
		return nil, errors.New("memory: capacity must be positive and durations whole milliseconds")
	}
	sessions, err := sessionmemory.New(sessionmemory.Options{MaxSessions: opts.MaxSessions})
	if err != nil {
		return nil, err
	}
	cursors, err := newCursors()
	if err != nil {
		return nil, err
	}
	return &Manager{opts: opts, publisher: task.NewBroadcaster(), cursors: cursors, sessions: sessions,
		tasks: map[string]*entry{}, keys: map[idemKey]string{}}, nil
}

// EventPublisher implements task.Manager. The publisher is the manager's own
// in-process broadcaster, the same for its lifetime; every change is
// published after it is readable.
func (m *Manager) EventPublisher() task.EventPublisher { return m.publisher }

// Sessions implements backend.Store: the manager's own session/memory
// store, bounded by Options.MaxSessions.
func (m *Manager) Sessions() session.Store { return m.sessions }

// Migrate implements backend.Store. There is no schema: it does nothing.
func (m *Manager) Migrate(context.Context) error { return nil }

// Close implements backend.Store. The manager holds no connection and no
// goroutine, so there is nothing to release: Close returns nil and the
// memory is freed once the manager is no longer referenced.
func (m *Manager) Close() error { return nil }

// Create creates a working task without a job for a creation context and
// returns its snapshot; the application drives it through the trusted
// methods. The task is bound to the context's endpoint and tenant and
// expires Options.TTL after creation. It fails with ErrFull at capacity.
func (m *Manager) Create(cc *task.CreationContext) (task.Task, error) {
	if cc == nil || cc.Origin.IsZero() || cc.Request.Endpoint == "" {
		return task.Task{}, errors.New("memory: a creation context with an origin and endpoint is required")
	}
	id, err := newID()
	if err != nil {
		return task.Task{}, err
	}
	m.mu.Lock()
	now := m.now()
	snap, err := task.New(task.Params{
		ID: id, Origin: cc.Origin, Status: task.Working,
		CreatedAt: now, LastUpdatedAt: now,
		TTL: m.opts.TTL, PollInterval: m.opts.PollInterval,
	})
	if err == nil {
		err = m.makeRoomLocked(now, 1)
	}
	if err != nil {
		m.mu.Unlock()
		return task.Task{}, err
	}
	m.tasks[id] = &entry{
		snap: snap, endpoint: cc.Request.Endpoint, tenant: cc.Request.Tenant, principal: cc.Request.Principal,
		expires: now.Add(m.opts.TTL), used: map[string]bool{},
		events: []backend.TaskEvent{{At: now.UTC(), Kind: backend.EventCreated}},
	}
	m.mu.Unlock()
	m.publisher.Publish(id)
	return snap, nil
}

// newID returns a random (version 4) UUID.
func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("memory: task ID: %w", err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16]), nil
}

func (m *Manager) now() time.Time { return m.opts.Now() }

// makeRoomLocked makes room for n more tasks: when they would exceed the
// capacity it deletes every expired task first, and fails with ErrFull if
// that was not enough.
func (m *Manager) makeRoomLocked(now time.Time, n int) error {
	if len(m.tasks)+n <= m.opts.Capacity {
		return nil
	}
	for id, e := range m.tasks {
		if e.expired(now) {
			m.deleteLocked(id)
		}
	}
	if len(m.tasks)+n > m.opts.Capacity {
		return ErrFull
	}
	return nil
}

// deleteLocked forgets a task, its job and its idempotency key.
func (m *Manager) deleteLocked(id string) {
	if e := m.tasks[id]; e != nil && e.key != (idemKey{}) {
		delete(m.keys, e.key)
	}
	delete(m.tasks, id)
}

// liveLocked returns the unexpired entry for id, or nil.
func (m *Manager) liveLocked(id string) *entry {
	e := m.tasks[id]
	if e == nil || e.expired(m.now()) {
		return nil
	}
	return e
}

// authorizedLocked returns the entry rc may see, or nil.
func (m *Manager) authorizedLocked(rc task.RequestContext) *entry {
	e := m.liveLocked(rc.TaskID)
	if e == nil || e.endpoint != rc.Endpoint || e.tenant != rc.Tenant {
		return nil
	}
	return e
}

// FindTask implements task.Manager.
func (m *Manager) FindTask(_ context.Context, rc task.RequestContext) (task.Task, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.authorizedLocked(rc); e != nil {
		return e.snap, true, nil
	}
	return task.Task{}, false, nil
}

// UpdateTask implements task.Manager: each response that answers an
// outstanding request is accepted once, byte for byte, and others are
// ignored (task.AcceptResponses). When no request remains
// outstanding the task returns to working without a status message, and
// its job, if it was waiting for the answers, is available again in its
// place in the queue.
func (m *Manager) UpdateTask(_ context.Context, uc task.UpdateContext) error {
	changed, err := m.update(uc)
	if err != nil {
		return err
	}
	if changed {
		m.publisher.Publish(uc.TaskID)
	}
	return nil
}

func (m *Manager) update(uc task.UpdateContext) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.authorizedLocked(uc.RequestContext)
	if e == nil {
		return false, task.ErrNotFound
	}
	b := e.mark()
	defer func() { e.observe(b, m.now()) }()
	outstanding, accepted := maps.Clone(e.outstanding), mcp.InputResponses{}
	if task.AcceptResponses(outstanding, accepted, uc.Responses) == 0 {
		return false, nil
	}
	p := e.snap.Params()
	p.LastUpdatedAt = m.later(p.LastUpdatedAt)
	if len(outstanding) == 0 {
		p.Status, p.StatusMessage, p.InputRequests = task.Working, "", nil
	} else {
		p.InputRequests = outstanding
	}
	snap, err := task.New(p)
	if err != nil {
		return false, fmt.Errorf("memory: update: %w", err)
	}
	e.snap, e.outstanding = snap, outstanding
	if e.responses == nil {
		e.responses = mcp.InputResponses{}
	}
	maps.Copy(e.responses, accepted)
	if len(outstanding) == 0 && e.job != nil && e.job.state == jobAwaiting {
		e.job.state = jobAvailable // its run-at time is kept
	}
	return true, nil
}

// RequestCancel implements task.Manager: it records intent, and a job
// waiting for input becomes claimable so that a worker sees it. Terminal
// tasks are left as they are.
func (m *Manager) RequestCancel(_ context.Context, rc task.RequestContext) error {
	m.mu.Lock()
	e := m.authorizedLocked(rc)
	if e == nil {
		m.mu.Unlock()
		return task.ErrNotFound
	}
	publish := !e.cancelRequested && !e.snap.Status().Terminal()
	if publish {
		b := e.mark()
		e.cancelRequested = true
		if e.job != nil && e.job.state == jobAwaiting {
			e.job.state = jobAvailable
		}
		e.observe(b, m.now())
	}
	m.mu.Unlock()
	if publish {
		m.publisher.Publish(rc.TaskID)
	}
	return nil
}

// later returns the current time, but never before prev, so that
// lastUpdatedAt never goes backwards.
func (m *Manager) later(prev time.Time) time.Time {
	if now := m.now(); now.After(prev) {
		return now
	}
	return prev
}
