package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
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
// The zero value means the defaults. New fails for negative values other
// than NoLimit.
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
	// refused when the caller already has MaxActive; concurrent calls of
	// one caller may overshoot by their number. Zero means
	// DefaultMaxActiveTasks; NoLimit turns the bound off. Managers without
	// task.ActiveCounter are not bounded.
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

// chargeTaskCreation applies the task limits to a call that may create a
// task; see TaskLimits. The count runs under the request's deadline.
func (c *call) chargeTaskCreation(ctx context.Context) *protocolError {
	tl := c.srv.taskLimits
	if tl.rate != nil {
		if ok, wait := tl.rate.Allow(c.id.rateKey()); !ok {
			return rateLimited(wait)
		}
	}
	if tl.counter == nil {
		return nil
	}
	n, err := tl.counter.CountActive(ctx, task.Owner{Tenant: c.id.Tenant, Principal: c.id.Principal}, tl.maxActive)
	switch {
	case err == nil && n >= tl.maxActive:
		return errTooManyActive
	case err == nil:
		return nil
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		return errDeadline
	}
	c.srv.logger.Error("active tasks could not be counted", "endpoint", c.ep.opts.Name, "err", redactErr(err))
	return errInternal
}
