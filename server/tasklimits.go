package server

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// Defaults of TaskLimits.
const (
	// DefaultTaskCreateRate is the sustained rate, per second and rate key,
	// of calls that may create a task: well under what one node drains (a
	// few hundred jobs per second), so that one caller alone cannot grow
	// the backlog faster than workers shrink it.
	DefaultTaskCreateRate = 20
	// DefaultTaskCreateBurst is how many such calls a rate key may make at
	// once: room for a client that submits a batch.
	DefaultTaskCreateBurst = 100
	// DefaultMaxActiveTasks bounds the working and input_required tasks of
	// one tenant and principal: a few seconds of a node's drain.
	DefaultMaxActiveTasks = 1000
	// DefaultMaxAnswerBytes bounds one encoded answer of tasks/update.
	DefaultMaxAnswerBytes = 64 << 10
)

// NoLimit turns off the TaskLimits field it is assigned to.
const NoLimit = -1

// activeRetryAfter is the Retry-After of a refusal for too many active
// tasks: when tasks finish is unknown, and a retry costs a count.
const activeRetryAfter = 5 * time.Second

// creationKeys bounds the rate keys the creation limiter tracks at once; a
// bucket that refilled is forgotten first (see TokenBucketOptions.MaxKeys).
const creationKeys = 1 << 16

// TaskLimits bound what one caller may put into the task store. A
// tools/call that may create a task (the tool is task-capable, the
// endpoint serves Tasks for the request, the request declared the Tasks
// extension and its arguments are valid) is charged before its handler
// runs, whether or not the handler then creates a task: first a token of
// the creation rate, keyed by the identity's rate key, then, when the task
// manager implements task.ActiveCounter, a bounded count of the caller's
// active tasks. Either refusal is HTTP 429 with Retry-After and JSON-RPC
// code CodeRateLimited, and the handler does not run.
//
// The zero value means the defaults. NoLimit is accepted by CreateRate and
// MaxActive only; New fails for every other negative value, and for a
// CreateRate that is not a finite number.
type TaskLimits struct {
	// CreateRate is the sustained rate of calls that may create a task, per
	// second and rate key. Zero means DefaultTaskCreateRate; NoLimit turns
	// the rate limit off.
	CreateRate float64
	// CreateBurst is how many such calls a rate key may make at once.
	// Zero means DefaultTaskCreateBurst.
	CreateBurst int
	// MaxActive bounds the unexpired working and input_required tasks of
	// one tenant and principal, on every endpoint of the manager. A call is
	// refused when the caller's tasks, together with the calls of that
	// caller this server is still running (each may create one), would
	// reach MaxActive, so that concurrent calls on one server never take
	// the caller over it; a call may be refused a little early while
	// calls that just created their task are counted twice. Across
	// servers sharing a store the bound is soft: calls on other nodes are
	// seen only once committed, and while a caller is under half of the
	// bound a count is reused for a second, so other nodes' creations of
	// that second are not seen. Zero means DefaultMaxActiveTasks; NoLimit
	// turns the bound off. Managers without task.ActiveCounter are not
	// bounded.
	MaxActive int
	// MaxAnswerBytes bounds each encoded answer of a tasks/update request;
	// a larger one fails the request with -32602 and nothing is stored.
	// Zero means DefaultMaxAnswerBytes.
	MaxAnswerBytes int
}

// taskLimits are resolved TaskLimits.
type taskLimits struct {
	rate        *TokenBucket // nil: no rate limit
	maxActive   int          // 0: no bound
	counter     task.ActiveCounter
	active      *activeCache
	answerBytes int
}

// validate reports every problem of the limits as given (zero means the
// default) to c, each naming its field, so that New reports them joined
// with the other options' problems.
func (l *TaskLimits) validate(c *optionChecker) {
	if math.IsNaN(l.CreateRate) || math.IsInf(l.CreateRate, 0) || (l.CreateRate < 0 && l.CreateRate != NoLimit) {
		c.bad("TaskLimits.CreateRate %v must be positive or NoLimit", l.CreateRate)
	}
	if l.MaxActive < 0 && l.MaxActive != NoLimit {
		c.bad("TaskLimits.MaxActive %d must be positive or NoLimit", l.MaxActive)
	}
	c.counts("TaskLimits",
		named{"CreateBurst", int64(l.CreateBurst)},
		named{"MaxAnswerBytes", int64(l.MaxAnswerBytes)})
}

// newTaskLimits applies the defaults to l, which Options.validate has
// checked. m is the server's task manager, possibly nil.
func newTaskLimits(l TaskLimits, m task.Manager) (*taskLimits, error) {
	if l.CreateRate == 0 {
		l.CreateRate = DefaultTaskCreateRate
	}
	if l.CreateBurst == 0 {
		l.CreateBurst = DefaultTaskCreateBurst
	}
	if l.MaxActive == 0 {
		l.MaxActive = DefaultMaxActiveTasks
	}
	if l.MaxAnswerBytes == 0 {
		l.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	tl := &taskLimits{answerBytes: l.MaxAnswerBytes}
	if l.CreateRate > 0 {
		rate, err := NewTokenBucket(TokenBucketOptions{Rate: l.CreateRate, Burst: float64(l.CreateBurst), MaxKeys: creationKeys})
		if err != nil {
			return nil, fmt.Errorf("server: TaskLimits: %w", err)
		}
		tl.rate = rate
	}
	if ac, ok := m.(task.ActiveCounter); ok && l.MaxActive > 0 {
		tl.counter, tl.maxActive = ac, l.MaxActive
		tl.active = newActiveCache(l.MaxActive)
	}
	return tl, nil
}

// errTooManyActive refuses a creation while the caller has the maximum of
// active tasks.
var errTooManyActive = func() *protocolError {
	h := http.Header{}
	h.Set("Retry-After", strconv.Itoa(int(activeRetryAfter/time.Second)))
	return &protocolError{
		status: http.StatusTooManyRequests,
		err:    mcp.NewError(CodeRateLimited, "Too many active tasks"),
		header: h,
	}
}()

// chargeTaskCreation charges the creation rate of TaskLimits to a call
// that may create a task. It costs no store call, so it runs before the
// call waits for a handler slot.
func (c *call) chargeTaskCreation() *protocolError {
	if rate := c.srv.taskLimits.rate; rate != nil {
		if ok, wait := rate.Allow(c.id.rateKey()); !ok {
			return rateLimited(wait)
		}
	}
	return nil
}

// checkActiveTasks applies TaskLimits.MaxActive to a call that may create
// a task. It may count the caller's tasks in the store, so it runs inside
// the task operations' share of handler slots, under the request's
// deadline: a store that stops answering holds no more calls than that
// share, and the others are refused for a full queue at once. An admitted
// call counts as in flight until it calls done, after its handler has
// returned.
func (c *call) checkActiveTasks(ctx context.Context) (done func(), perr *protocolError) {
	tl := c.srv.taskLimits
	if tl.counter == nil {
		return func() {}, nil
	}
	owner := task.Owner{Tenant: c.id.Tenant, Principal: c.id.Principal}
	done = func() { tl.active.end(owner) }
	now := c.srv.opts.now()
	if tl.active.allow(owner, now) {
		return done, nil
	}
	since := tl.active.begin(owner)
	n, err := tl.counter.CountActive(ctx, owner, tl.maxActive)
	switch {
	case err == nil && tl.active.admit(owner, n, since, now):
		return done, nil
	case err == nil:
		return nil, errTooManyActive
	}
	tl.active.abandon(owner)
	if ctx.Err() != nil {
		return nil, errDeadline
	}
	c.srv.logger.Error("active tasks could not be counted", "endpoint", c.ep.opts.Name, "err", c.redactErr(err))
	return nil, storeFailure(err)
}

// Counting a caller's active tasks costs a store query that may read many
// rows (see docs/production.md), so the server remembers a count for a
// moment: while a caller's last count, with the calls it admitted since,
// was well under the limit (under half of it) and is younger than
// activeCacheTTL, a call is allowed without a query and counted locally.
// Near the limit every call counts again. A caller may therefore overshoot
// the limit by what other nodes admit within activeCacheTTL.
//
// Concurrent calls on this node cannot overshoot it: every admitted call
// is in flight until its handler returns (by then its task, if any, is
// committed), and a count admits a call only when the count, the calls in
// flight now and the calls that finished since the count began stay under
// the limit. A call that was in flight when the count began, and whose
// task the count already saw, is counted twice: the error is a refusal a
// little early, never an admission too many.
const (
	activeCacheTTL  = time.Second
	activeCacheKeys = 4096
)

// activeCache holds recent active-task counts per owner. Its size is
// bounded: when full, stale entries are dropped (by one sweep per
// activeCacheTTL at most, so that a full cache of fresh entries costs no
// scan per call), and if none is stale the new count is not remembered.
type activeCache struct {
	max       int // MaxActive
	threshold int // counts below it may be reused
	mu        sync.Mutex
	entries   map[task.Owner]activeCount
	swept     time.Time // the last sweep of a full cache
	// flights holds the owners with calls in flight or counts running;
	// an owner is dropped when it has neither, so its size is bounded by
	// the calls the handler pool admits at once.
	flights map[task.Owner]*activeFlight
}

// activeCount is a remembered count: n tasks at the count, plus the
// admitted calls that finished since.
type activeCount struct {
	n  int
	at time.Time
}

// activeFlight is an owner's admitted calls still running, the ones that
// finished (a running total), and the counts running.
type activeFlight struct {
	inflight, counting int
	finished           uint64
}

func newActiveCache(maxActive int) *activeCache {
	return &activeCache{
		max: maxActive, threshold: maxActive / 2,
		entries: map[task.Owner]activeCount{}, flights: map[task.Owner]*activeFlight{},
	}
}

// flight returns owner's flight, adding it. Callers hold a.mu.
func (a *activeCache) flight(owner task.Owner) *activeFlight {
	f := a.flights[owner]
	if f == nil {
		f = &activeFlight{}
		a.flights[owner] = f
	}
	return f
}

// tidy drops owner's flight when nothing refers to it. Callers hold a.mu.
func (a *activeCache) tidy(owner task.Owner, f *activeFlight) {
	if f.inflight == 0 && f.counting == 0 {
		delete(a.flights, owner)
	}
}

// allow reports whether owner's remembered count, with its calls in
// flight, lets a call through without a query, and puts the call in
// flight if so.
func (a *activeCache) allow(owner task.Owner, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.entries[owner]
	if !ok || now.Sub(e.at) >= activeCacheTTL || now.Before(e.at) {
		return false
	}
	f := a.flight(owner)
	if e.n+f.inflight >= a.threshold {
		a.tidy(owner, f)
		return false
	}
	f.inflight++
	return true
}

// begin starts a count of owner's tasks and returns what admit needs to
// see the calls that finish while it runs. Every begin is followed by one
// admit or abandon.
func (a *activeCache) begin(owner task.Owner) (since uint64) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.flight(owner)
	f.counting++
	return f.finished
}

// admit ends a count of n that began at since: it admits a call (in
// flight, and remembers the count) when n, the calls in flight and the
// calls that finished since stay under max, and otherwise forgets owner's
// count and reports false.
func (a *activeCache) admit(owner task.Owner, n int, since uint64, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.flight(owner)
	f.counting--
	seen := n + int(f.finished-since)
	if seen+f.inflight >= a.max {
		delete(a.entries, owner)
		a.tidy(owner, f)
		return false
	}
	f.inflight++
	a.recordLocked(owner, seen, now)
	return true
}

// abandon ends a count that failed.
func (a *activeCache) abandon(owner task.Owner) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.flight(owner)
	f.counting--
	a.tidy(owner, f)
}

// end takes an admitted call out of flight: it may have created a task,
// so a remembered count counts it.
func (a *activeCache) end(owner task.Owner) {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.flight(owner)
	f.inflight--
	f.finished++
	a.tidy(owner, f)
	if e, ok := a.entries[owner]; ok {
		e.n++
		a.entries[owner] = e
	}
}

// record remembers a fresh count.
func (a *activeCache) record(owner task.Owner, n int, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recordLocked(owner, n, now)
}

// recordLocked is record for a caller that holds a.mu.
func (a *activeCache) recordLocked(owner task.Owner, n int, now time.Time) {
	if _, ok := a.entries[owner]; !ok && len(a.entries) >= activeCacheKeys {
		if now.Sub(a.swept) < activeCacheTTL && !now.Before(a.swept) {
			return // swept within the TTL: nothing has gone stale since
		}
		a.swept = now
		for k, e := range a.entries {
			if now.Sub(e.at) >= activeCacheTTL || now.Before(e.at) {
				delete(a.entries, k)
			}
		}
		if len(a.entries) >= activeCacheKeys {
			return
		}
	}
	a.entries[owner] = activeCount{n: n, at: now}
}
