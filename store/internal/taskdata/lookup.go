package taskdata

import (
	"github.com/taskwire/taskwire/store/internal/storerules"
	"github.com/taskwire/taskwire/task"
)

// Countable reports whether owner's tenant and principal are text a store
// keeps. No stored task belongs to an owner that is not countable, so a
// store counts none without asking the database.
func Countable(owner task.Owner) bool {
	return storerules.Storable(owner.Tenant) && storerules.Storable(owner.Principal)
}

// Findable reports whether rc can name a stored task: its task ID,
// endpoint and tenant are text a store keeps. A store answers a lookup
// that is not findable as it answers one for an unknown task, without
// asking the database.
func Findable(rc task.RequestContext) bool {
	return storerules.Storable(rc.TaskID) && storerules.Storable(rc.Endpoint) && storerules.Storable(rc.Tenant)
}

// Listable reports whether rc can own stored tasks: its endpoint and
// tenant are text a store keeps (its task ID does not matter). A store
// answers a listing that is not listable with an empty page, without
// asking the database.
func Listable(rc task.RequestContext) bool {
	return storerules.Storable(rc.Endpoint) && storerules.Storable(rc.Tenant)
}
