// Package memory is a bounded, in-process task.Manager for development,
// tests, simulation and deliberately ephemeral single-process servers.
//
// It is NOT a production backend. It keeps everything in memory: a restart
// loses every task, nodes cannot share tasks, and it has no durable queue,
// transaction, outbox, lease, fencing, retry, failover or crash recovery.
// Use a durable store (see store/) for anything users rely on.
//
// The manager starts no goroutine and performs no work by itself: the
// application's own goroutines call its worker-side methods (Complete,
// RequestInput, ...). It holds at most Capacity tasks, never evicts a live
// one (Create fails when full), and forgets tasks TTL after creation, lazily
// on later calls.
package memory

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/taskwire/taskwire/internal/listcursor"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// Defaults of Options.
const (
	DefaultCapacity     = 1024
	DefaultTTL          = time.Hour
	DefaultPollInterval = time.Second
)

// Errors of the worker-side methods.
var (
	// ErrFull: Create found the manager at capacity.
	ErrFull = errors.New("memory: task manager is full")
	// ErrTerminal: the task already reached a terminal state.
	ErrTerminal = errors.New("memory: task is already terminal")
	// ErrPendingResponses: RequestInput while accepted responses have not
	// been taken.
	ErrPendingResponses = errors.New("memory: accepted input responses have not been taken")
	// ErrKeyReused: RequestInput with a key used earlier in the task's life.
	ErrKeyReused = errors.New("memory: input request key was used before")
)

// Options configure New. Zero values mean the defaults.
type Options struct {
	// Capacity bounds the live tasks. Default 1,024.
	Capacity int
	// TTL is how long a task is kept after creation. Default one hour.
	TTL time.Duration
	// PollInterval is the interval suggested to clients. Default 1 s.
	PollInterval time.Duration
	// Now is the clock. Default time.Now; tests inject their own.
	Now func() time.Time
}

// Manager is the development task manager. It is safe for concurrent use.
type Manager struct {
	opts      Options
	publisher *task.Broadcaster
	cursors   *listcursor.Codec

	mu    sync.Mutex
	tasks map[string]*entry
	order []string // IDs in creation order, for expiry
}

type entry struct {
	snap            task.Task
	endpoint        string
	tenant          string
	principal       string
	expires         time.Time
	outstanding     mcp.InputRequests
	used            map[string]bool
	responses       mcp.InputResponses
	cancelRequested bool
}

var _ task.Manager = (*Manager)(nil)

// New returns an empty manager. It fails when an option is negative or not
// whole milliseconds.
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
	cursors, err := newCursors()
	if err != nil {
		return nil, err
	}
	return &Manager{opts: opts, publisher: task.NewBroadcaster(), cursors: cursors, tasks: map[string]*entry{}}, nil
}

// EventPublisher implements task.Manager. The publisher is the manager's own
// in-process broadcaster, the same for its lifetime.
func (m *Manager) EventPublisher() task.EventPublisher { return m.publisher }

// Create creates a working task for a creation context and returns its
// snapshot. The task is bound to the context's endpoint and tenant. It fails
// with ErrFull at capacity.
func (m *Manager) Create(cc *task.CreationContext) (task.Task, error) {
	if cc == nil || cc.Origin.IsZero() || cc.Request.Endpoint == "" {
		return task.Task{}, errors.New("memory: a creation context with an origin and endpoint is required")
	}
	id, err := newID()
	if err != nil {
		return task.Task{}, err
	}
	now := m.now()
	snap, err := task.New(task.Params{
		ID: id, Origin: cc.Origin, Status: task.Working,
		CreatedAt: now, LastUpdatedAt: now,
		TTL: m.opts.TTL, PollInterval: m.opts.PollInterval,
	})
	if err != nil {
		return task.Task{}, err
	}
	m.mu.Lock()
	m.expireLocked(now)
	if len(m.tasks) >= m.opts.Capacity {
		m.mu.Unlock()
		return task.Task{}, ErrFull
	}
	m.tasks[id] = &entry{
		snap: snap, endpoint: cc.Request.Endpoint, tenant: cc.Request.Tenant, principal: cc.Request.Principal,
		expires: now.Add(m.opts.TTL), used: map[string]bool{},
	}
	m.order = append(m.order, id)
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

// expireLocked forgets tasks past their TTL, oldest first.
func (m *Manager) expireLocked(now time.Time) {
	i := 0
	for ; i < len(m.order); i++ {
		e, ok := m.tasks[m.order[i]]
		if ok && now.Before(e.expires) {
			break
		}
		delete(m.tasks, m.order[i])
	}
	if i > 0 {
		m.order = append(m.order[:0], m.order[i:]...)
	}
}

// liveLocked returns the unexpired entry for id, or nil. It checks the
// entry's own expiry too, because the creation-order sweep stops at the first
// live entry and a clock that stepped back can leave later entries expired.
func (m *Manager) liveLocked(id string) *entry {
	now := m.now()
	m.expireLocked(now)
	e, ok := m.tasks[id]
	if !ok {
		return nil
	}
	if !now.Before(e.expires) {
		delete(m.tasks, id)
		if i := slices.Index(m.order, id); i >= 0 {
			m.order = slices.Delete(m.order, i, i+1)
		}
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
// outstanding request of the same kind is accepted once; others are ignored.
// When no request remains outstanding the task returns to working.
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
	changed := false
	for key, raw := range uc.Responses {
		req, ok := e.outstanding[key]
		if !ok || !task.AnswerMatches(req, raw) {
			continue
		}
		if e.responses == nil {
			e.responses = mcp.InputResponses{}
		}
		e.responses[key] = append(json.RawMessage(nil), raw...)
		delete(e.outstanding, key)
		changed = true
	}
	if !changed {
		return false, nil
	}
	p := e.snap.Params()
	p.LastUpdatedAt = m.later(p.LastUpdatedAt)
	if len(e.outstanding) == 0 {
		p.Status, p.StatusMessage, p.InputRequests = task.Working, "", nil
	} else {
		p.InputRequests = maps.Clone(e.outstanding)
	}
	snap, err := task.New(p)
	if err != nil {
		return false, fmt.Errorf("memory: update: %w", err)
	}
	e.snap = snap
	return true, nil
}

// RequestCancel implements task.Manager: it records intent; terminal tasks
// are left as they are.
func (m *Manager) RequestCancel(_ context.Context, rc task.RequestContext) error {
	m.mu.Lock()
	e := m.authorizedLocked(rc)
	if e == nil {
		m.mu.Unlock()
		return task.ErrNotFound
	}
	publish := !e.cancelRequested && !e.snap.Status().Terminal()
	e.cancelRequested = true
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
