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
	// refused when the caller already has MaxActive. The bound is a soft
	// one: concurrent calls of one caller may overshoot it by their number,
	// and while a caller is under half of it a count is reused for a
	// second (so other nodes' creations of that second are not seen). Zero
	// means DefaultMaxActiveTasks; NoLimit turns the bound off. Managers
	// without task.ActiveCounter are not bounded.
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

// newTaskLimits applies the defaults to l and validates it. m is the
// server's task manager, possibly nil.
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
	switch {
	case math.IsNaN(l.CreateRate) || math.IsInf(l.CreateRate, 0) || (l.CreateRate < 0 && l.CreateRate != NoLimit):
		return nil, fmt.Errorf("server: TaskLimits.CreateRate %v must be positive or NoLimit", l.CreateRate)
	case l.CreateBurst < 0:
		return nil, fmt.Errorf("server: TaskLimits.CreateBurst %d must not be negative", l.CreateBurst)
	case l.MaxActive < 0 && l.MaxActive != NoLimit:
		return nil, fmt.Errorf("server: TaskLimits.MaxActive %d must be positive or NoLimit", l.MaxActive)
	case l.MaxAnswerBytes < 0:
		return nil, fmt.Errorf("server: TaskLimits.MaxAnswerBytes %d must not be negative", l.MaxAnswerBytes)
	}
	tl := &taskLimits{answerBytes: l.MaxAnswerBytes}
	if l.CreateRate > 0 {
		tl.rate = NewTokenBucket(TokenBucketOptions{Rate: l.CreateRate, Burst: float64(l.CreateBurst), MaxKeys: creationKeys})
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
// share, and the others are refused for a full queue at once.
func (c *call) checkActiveTasks(ctx context.Context) *protocolError {
	tl := c.srv.taskLimits
	if tl.counter == nil {
		return nil
	}
	owner := task.Owner{Tenant: c.id.Tenant, Principal: c.id.Principal}
	now := c.srv.opts.now()
	if tl.active.allow(owner, now) {
		return nil
	}
	n, err := tl.counter.CountActive(ctx, owner, tl.maxActive)
	switch {
	case err == nil && n >= tl.maxActive:
		tl.active.forget(owner)
		return errTooManyActive
	case err == nil:
		tl.active.record(owner, n, now)
		return nil
	case ctx.Err() != nil:
		return errDeadline
	}
	c.srv.logger.Error("active tasks could not be counted", "endpoint", c.ep.opts.Name, "err", c.redactErr(err))
	return storeFailure(err)
}

// Counting a caller's active tasks costs a store query that may read many
// rows (see docs/production.md), so the server remembers a count for a
// moment: while a caller's last count was well under the limit (at most
// half of it) and is younger than activeCacheTTL, a call is allowed without
// a query and counted locally. Near the limit every call counts again. A
// caller may therefore overshoot the limit by what other nodes admit within
// activeCacheTTL, as well as by concurrent calls.
const (
	activeCacheTTL  = time.Second
	activeCacheKeys = 4096
)

// activeCache holds recent active-task counts per owner. Its size is
// bounded: when full, stale entries are dropped (by one sweep per
// activeCacheTTL at most, so that a full cache of fresh entries costs no
// scan per call), and if none is stale the new count is not remembered.
type activeCache struct {
	threshold int // counts below it may be reused
	mu        sync.Mutex
	entries   map[task.Owner]activeCount
	swept     time.Time // the last sweep of a full cache
}

type activeCount struct {
	n  int
	at time.Time
}

func newActiveCache(maxActive int) *activeCache {
	return &activeCache{threshold: maxActive / 2, entries: map[task.Owner]activeCount{}}
}

// allow reports whether owner's remembered count lets a call through
// without a query, and counts the call if so.
func (a *activeCache) allow(owner task.Owner, now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.entries[owner]
	if !ok || now.Sub(e.at) >= activeCacheTTL || now.Before(e.at) || e.n >= a.threshold {
		return false
	}
	e.n++
	a.entries[owner] = e
	return true
}

// record remembers a fresh count (plus the call it admits).
func (a *activeCache) record(owner task.Owner, n int, now time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
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
	a.entries[owner] = activeCount{n: n + 1, at: now}
}

// forget drops owner's count.
func (a *activeCache) forget(owner task.Owner) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.entries, owner)
}
