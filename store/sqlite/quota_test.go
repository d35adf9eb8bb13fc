package sqlite

import "github.com/taskwire/taskwire/task"

// The store bounds a caller's active tasks (its behaviour is pinned by the
// storetest case CountActive, which skips stores without it).
var _ task.ActiveCounter = (*Store)(nil)
