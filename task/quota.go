package task

import "context"

// Owner names the caller whose tasks a quota counts: the tenant and the
// principal a task was created for, as its creation context recorded them.
type Owner struct {
	Tenant    string
	Principal string
}

// ActiveCounter is an optional interface of a Manager that can count a
// caller's non-terminal tasks, so that the server can bound them (see
// server.TaskLimits). Managers that do not implement it are not bounded.
type ActiveCounter interface {
	// CountActive returns the number of unexpired tasks of owner that are
	// working or input_required, on any endpoint, counting no further than
	// limit: the result is min(count, limit), and limit <= 0 returns 0
	// without reading anything. It must be safe for concurrent use and
	// honour ctx; an error is a storage failure. The count is a snapshot:
	// tasks created concurrently may be missed.
	CountActive(ctx context.Context, owner Owner, limit int) (int, error)
}
