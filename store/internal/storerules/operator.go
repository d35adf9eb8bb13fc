package storerules

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/store/internal/listcursor"
	"github.com/taskwire/taskwire/task"
)

// CheckOperatorQuery checks an OperatorQuery before a store reads
// anything: a known status (or none), filter text of at most
// backend.MaxFilterText bytes that is storable, and a created-between
// range that does not end before it starts. Failures wrap
// backend.ErrBadOperatorQuery and name the field.
func CheckOperatorQuery(q backend.OperatorQuery) error {
	switch q.Status {
	case "", task.Working, task.InputRequired, task.Completed, task.Failed, task.Cancelled:
	default:
		return fmt.Errorf("%w: unknown status", backend.ErrBadOperatorQuery)
	}
	for _, f := range []struct{ name, v string }{{"tool", q.Tool}, {"tenant", q.Tenant}} {
		if len(f.v) > backend.MaxFilterText || !Storable(f.v) {
			return fmt.Errorf("%w: %s filter out of range", backend.ErrBadOperatorQuery, f.name)
		}
	}
	if !q.CreatedFrom.IsZero() && !q.CreatedBefore.IsZero() && q.CreatedBefore.Before(q.CreatedFrom) {
		return fmt.Errorf("%w: created range ends before it starts", backend.ErrBadOperatorQuery)
	}
	return nil
}

// OperatorCursorScope is the caller a listcursor.Codec binds the cursors
// of an operator listing to: the listing's filters, so that a cursor
// issued for one query never continues another. The endpoint holds a NUL
// byte, which no stored endpoint does, so that it never equals a
// client's scope.
func OperatorCursorScope(q backend.OperatorQuery) task.RequestContext {
	filters := string(q.Status) + "\x00" + q.Tool + "\x00" + q.Tenant + "\x00" +
		strconv.FormatInt(q.CreatedFrom.UnixMicro(), 10) + "\x00" + strconv.FormatInt(q.CreatedBefore.UnixMicro(), 10)
	return task.RequestContext{Endpoint: "\x00operator", Principal: filters}
}

// OperatorLimit is the page size an operator listing serves for a
// requested limit.
func OperatorLimit(n int) int { return min(max(n, 1), backend.MaxOperatorPage) }

// ActivitySince clamps the start of an OperatorActivity window to at most
// backend.MaxActivityWindow before now, on a whole minute.
func ActivitySince(now, since time.Time) time.Time {
	if earliest := now.Add(-backend.MaxActivityWindow); since.Before(earliest) {
		since = earliest
	}
	return since.Truncate(time.Minute)
}

// Activity accumulates the per-minute counts of OperatorActivity.
type Activity struct {
	buckets []backend.ActivityBucket
	index   map[int64]int
}

// Add counts n tasks that ended as kind in the minute starting at start.
// Kinds other than the terminal ones are ignored.
func (a *Activity) Add(start time.Time, kind backend.TaskEventKind, n int64) {
	if a.index == nil {
		a.index = map[int64]int{}
	}
	start = start.UTC().Truncate(time.Minute)
	i, ok := a.index[start.Unix()]
	if !ok {
		i = len(a.buckets)
		a.index[start.Unix()] = i
		a.buckets = append(a.buckets, backend.ActivityBucket{Start: start})
	}
	switch kind {
	case backend.EventCompleted:
		a.buckets[i].Completed += n
	case backend.EventFailed:
		a.buckets[i].Failed += n
	case backend.EventCancelled:
		a.buckets[i].Cancelled += n
	}
}

// Buckets returns the counts, oldest minute first.
func (a *Activity) Buckets() []backend.ActivityBucket {
	slices.SortFunc(a.buckets, func(x, y backend.ActivityBucket) int { return x.Start.Compare(y.Start) })
	return a.buckets
}

// RetryOptions are the EnqueueOptions of an operator's retry of a task
// kept for ttl with the suggested poll interval (ttl 0: unlimited), in
// queue with priority: the same TTL, interval, queue and priority, and
// the store's default attempt budget.
func RetryOptions(ttl, poll time.Duration, queue string, priority int) backend.EnqueueOptions {
	if ttl == 0 {
		ttl = -1 // unlimited
	}
	return backend.EnqueueOptions{TTL: ttl, PollInterval: poll, Queue: queue, Priority: priority}
}

// OperatorPage is the page of an operator listing that read up to limit+1
// tasks in listing order: the first limit and, when there were more, the
// cursor after the last of them, bound to q's filters; at gives a task's
// position in the backend's own unit of creation time.
func OperatorPage(c *listcursor.Codec, q backend.OperatorQuery, tasks []backend.TaskSummary, limit int,
	at func(time.Time) int64) (backend.OperatorPage, error) {
	if len(tasks) <= limit {
		return backend.OperatorPage{Tasks: tasks}, nil
	}
	last := tasks[limit-1]
	cur, err := c.Encode(OperatorCursorScope(q), listcursor.Position{At: at(last.CreatedAt), ID: last.ID})
	if err != nil {
		return backend.OperatorPage{}, err
	}
	return backend.OperatorPage{Tasks: tasks[:limit], NextCursor: cur}, nil
}
