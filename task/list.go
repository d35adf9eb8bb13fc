package task

import (
	"context"
	"errors"
)

// ListQuery asks for one page of the caller's tasks.
type ListQuery struct {
	// Request is the listing request. Its TaskID is empty; a manager lists
	// exactly the tasks FindTask would return for Request with their IDs
	// (same endpoint and tenant, and principal where the binding has one).
	Request RequestContext
	// Cursor is the NextCursor of the previous page, or "" for the first.
	// It is opaque to callers; a manager returns ErrBadCursor for one it did
	// not issue, or one issued for another caller.
	Cursor string
	// Limit bounds the page; it is at least 1. A manager may return fewer.
	Limit int
}

// ListPage is one page of a listing.
type ListPage struct {
	// Tasks are in a stable order: newest first, ties broken by ID.
	Tasks []Task
	// NextCursor continues the listing; "" on the last page.
	NextCursor string
}

// Lister is implemented by managers that can list a caller's tasks, which
// the 2025-11-25 tasks/list method needs. Expired tasks are never listed.
type Lister interface {
	ListTasks(ctx context.Context, q ListQuery) (ListPage, error)
}

// ErrBadCursor is returned by Lister.ListTasks for a cursor it cannot use.
var ErrBadCursor = errors.New("task: invalid list cursor")
