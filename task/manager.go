package task

import (
	"context"
	"errors"
	"sync"

	"github.com/taskwire/taskwire/mcp"
)

// RequestContext describes the freshly admitted request a Manager call
// serves. Possession of a task ID is never authorization: a manager must
// compare the task's stored binding (endpoint and tenant, and principal where
// the application wants it) with these fields atomically with the lookup or
// mutation, and answer ErrNotFound for both unknown and unauthorized tasks.
type RequestContext struct {
	// TaskID is the task the request names.
	TaskID string
	// Endpoint is the configured name of the endpoint serving the request.
	Endpoint string
	// Principal and Tenant are the admitted identity.
	Principal string
	Tenant    string
	// ProtocolVersion is the request's protocol revision.
	ProtocolVersion string
	// Capabilities are the client capabilities the request declared.
	Capabilities *mcp.ClientCapabilities
}

// UpdateContext is a tasks/update request: the request context and the
// client's (possibly partial) responses to outstanding input requests.
type UpdateContext struct {
	RequestContext
	Responses mcp.InputResponses
}

// CreationContext is offered to a task-capable tool handler when, and only
// when, the endpoint serves Tasks, the server has a manager and this request
// declared the Tasks extension. Request describes the creating request (its
// TaskID is empty); Origin must be stored with the task, unchanged.
type CreationContext struct {
	Request RequestContext
	Origin  Origin
	// Trace is the trace context of the creating request's span (zero
	// when the server traces nothing). A durable store keeps its Encode
	// form with the task, beside Origin, and hands it to every run of the
	// task's job (backend.JobRow.Trace); it is never part of Origin.
	Trace TraceContext
}

// Handle is what a task-capable tool returns instead of a result: the ID of
// a task that is already durably readable. The server verifies it with
// Manager.FindTask before sending it.
type Handle struct {
	ID string
}

// Manager is the storage SPI behind tasks/get, tasks/update and tasks/cancel.
// Implementations must be safe for concurrent use.
//
// An error that wraps ErrUnavailable, context.DeadlineExceeded (while the
// request's own deadline has not passed) or a net.Error means the store
// could not be reached in time: the client gets HTTP 503 with Retry-After
// and the fixed -32603 "Internal error". Any other error is a storage
// failure answered with the fixed internal error under HTTP 200.
type Manager interface {
	// FindTask returns the latest snapshot of the task named by rc, after
	// authorizing rc against the task's binding. It returns found false
	// (and no error) for unknown, expired and unauthorized tasks alike. An
	// error is a storage failure; the client sees the fixed internal error.
	FindTask(ctx context.Context, rc RequestContext) (t Task, found bool, err error)

	// UpdateTask authorizes uc and accepts the responses that answer
	// outstanding input requests, exactly once per key. It ignores
	// responses whose key is unknown, already answered, duplicated or
	// superseded, and responses that do not match the request's kind
	// (for example a sampling result for an elicitation);
	// AcceptResponses applies this rule. It returns ErrNotFound for
	// unknown and unauthorized tasks.
	UpdateTask(ctx context.Context, uc UpdateContext) error

	// RequestCancel authorizes rc and records durable, cooperative
	// cancellation intent. It succeeds on terminal tasks without changing
	// them; completion may legitimately win the race. It returns
	// ErrNotFound for unknown and unauthorized tasks.
	RequestCancel(ctx context.Context, rc RequestContext) error

	// EventPublisher returns the publisher of task-change hints, or nil
	// when the manager publishes none. It must return the same value for
	// the manager's lifetime.
	EventPublisher() EventPublisher
}

// EventPublisher carries task-change hints: task IDs only, published after
// the change is committed and readable, with broadcast semantics (every
// subscriber sees every hint). Hints may be duplicated, delayed or lost;
// tasks/get stays authoritative.
type EventPublisher interface {
	// Subscribe registers fn for every later hint and returns a function
	// that removes it. fn must not block.
	Subscribe(fn func(taskID string)) (unsubscribe func())
	// Publish sends a hint to every subscriber.
	Publish(taskID string)
}

// Broadcaster is an in-process EventPublisher; its zero value is ready to
// use. Publish calls every
// subscriber synchronously in the publishing goroutine; subscribers must hand
// the hint off without blocking. A panicking subscriber is isolated.
type Broadcaster struct {
	mu   sync.RWMutex
	next int
	subs map[int]func(string)
}

// NewBroadcaster returns an empty broadcaster.
func NewBroadcaster() *Broadcaster { return &Broadcaster{subs: map[int]func(string){}} }

// Subscribe implements EventPublisher.
func (b *Broadcaster) Subscribe(fn func(taskID string)) func() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.subs == nil {
		b.subs = map[int]func(string){}
	}
	id := b.next
	b.next++
	b.subs[id] = fn
	return func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		delete(b.subs, id)
	}
}

// Publish implements EventPublisher.
func (b *Broadcaster) Publish(taskID string) {
	b.mu.RLock()
	fns := make([]func(string), 0, len(b.subs))
	for _, fn := range b.subs {
		fns = append(fns, fn)
	}
	b.mu.RUnlock()
	for _, fn := range fns {
		func() {
			defer func() { recover() }() // a failing subscriber must not break publishing
			fn(taskID)
		}()
	}
}

// errInvalid is wrapped by validation failures of worker-side checks.
var errInvalid = errors.New("task: invalid value for the origin")
