package memory

import (
	"context"

	"github.com/taskwire/taskwire/task"
)

// CountActive implements task.ActiveCounter: it counts the live tasks of
// owner that are working or input_required, up to limit. It walks every
// task held (at most Capacity) under the manager's lock.
func (m *Manager) CountActive(_ context.Context, owner task.Owner, limit int) (int, error) {
	if limit <= 0 {
		return 0, nil
	}
	now := m.now()
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, e := range m.tasks {
		if e.tenant != owner.Tenant || e.principal != owner.Principal || e.expired(now) || e.snap.Status().Terminal() {
			continue
		}
		if n++; n == limit {
			break
		}
	}
	return n, nil
}
