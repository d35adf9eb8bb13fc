package memory

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"slices"

	"github.com/taskwire/taskwire/store/internal/listcursor"
	"github.com/taskwire/taskwire/task"
)

var _ task.Lister = (*Manager)(nil)

// newCursors returns the codec of a manager's list cursors, under a random
// key of its own: cursors are valid for the manager's lifetime, like its
// tasks.
func newCursors() (*listcursor.Codec, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("memory: cursor key: %w", err)
	}
	return listcursor.New(key)
}

// ListTasks implements task.Lister. It lists the unexpired tasks FindTask
// would return for q.Request (same endpoint and tenant), newest first and,
// among tasks created at the same time, by descending ID. A page holds at
// most q.Limit tasks, clamped to [1, 100]. Cursors are bound to the caller's
// endpoint, tenant and principal; any other cursor gets task.ErrBadCursor.
// A listing costs O(n log n) in the tasks held (at most Capacity).
func (m *Manager) ListTasks(_ context.Context, q task.ListQuery) (task.ListPage, error) {
	var after *listcursor.Position
	if q.Cursor != "" {
		p, err := m.cursors.Decode(q.Request, q.Cursor)
		if err != nil {
			return task.ListPage{}, err
		}
		after = &p
	}
	limit := listcursor.Limit(q.Limit)
	m.mu.Lock()
	now := m.now()
	var tasks []task.Task
	for _, e := range m.tasks {
		if e.endpoint != q.Request.Endpoint || e.tenant != q.Request.Tenant || e.expired(now) {
			continue
		}
		if after != nil && compareTasks(e.snap, after.At, after.ID) <= 0 { // not after the cursor
			continue
		}
		tasks = append(tasks, e.snap)
	}
	m.mu.Unlock()
	slices.SortFunc(tasks, func(a, b task.Task) int { return compareTasks(a, b.CreatedAt().UnixNano(), b.ID()) })
	var page task.ListPage
	if len(tasks) > limit {
		last := tasks[limit-1]
		cur, err := m.cursors.Encode(q.Request, listcursor.Position{At: last.CreatedAt().UnixNano(), ID: last.ID()})
		if err != nil {
			return task.ListPage{}, fmt.Errorf("memory: %w", err)
		}
		tasks, page.NextCursor = tasks[:limit], cur
	}
	page.Tasks = tasks
	return page, nil
}

// compareTasks compares a with the task created at (nanoseconds) with ID id
// in listing order: negative when a comes first (it is newer, or as new
// with a greater ID), positive when it comes after.
func compareTasks(a task.Task, at int64, id string) int {
	return cmp.Or(cmp.Compare(at, a.CreatedAt().UnixNano()), cmp.Compare(id, a.ID()))
}
