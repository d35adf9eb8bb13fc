package task

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"strings"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Status is the state of a task, spelt as on the wire.
type Status = mcp.TaskStatus

// Task states. Working and InputRequired may alternate; Completed, Failed
// and Cancelled are terminal and never change again.
const (
	Working       = mcp.TaskWorking
	InputRequired = mcp.TaskInputRequired
	Completed     = mcp.TaskCompleted
	Failed        = mcp.TaskFailed
	Cancelled     = mcp.TaskCancelled
)

// MaxIDLength bounds task IDs, which travel in the Mcp-Name header.
const MaxIDLength = 128

// Task is an immutable snapshot of a task as a Manager returns it. Build one
// with New; the zero Task is invalid.
type Task struct {
	p *Params // behind a pointer so that fmt's reflection cannot print it
}

// Params are the members of a task snapshot.
type Params struct {
	// ID is the task's high-entropy, header-safe identifier.
	ID string
	// Origin is the opaque origin the server supplied at creation,
	// returned unchanged in every snapshot.
	Origin Origin
	// Status is the current state.
	Status Status
	// StatusMessage is optional human-readable text; it is sent to the
	// client, so it must not carry secrets.
	StatusMessage string
	// CreatedAt and LastUpdatedAt are whole milliseconds or finer;
	// LastUpdatedAt must not be before CreatedAt.
	CreatedAt     time.Time
	LastUpdatedAt time.Time
	// TTL is how long the task is kept from CreatedAt, in whole
	// milliseconds. Zero means unlimited (ttlMs null on the wire).
	TTL time.Duration
	// PollInterval is the suggested polling interval, in whole
	// milliseconds. Zero means none is suggested.
	PollInterval time.Duration
	// InputRequests are the outstanding input requests; required, and
	// only allowed, with status InputRequired.
	InputRequests mcp.InputRequests
	// Result is the complete tool result; required, and only allowed, with
	// status Completed. A tool error (isError true) is still Completed.
	Result *mcp.CallToolResult
	// Error is the client-safe JSON-RPC error; required, and only allowed,
	// with status Failed.
	Error *mcp.Error
	// Meta is the task's own _meta. Keys reserved by the protocol are
	// rejected.
	Meta mcp.Meta
	// Progress is the last progress count a worker reported, or nil. It
	// is not part of the 2026 wire task (whose carrier of progress is
	// StatusMessage); the 2025-era inline wait sends it as the numbers of
	// notifications/progress.
	Progress *Progress
}

// Progress is a worker's progress count: Current units of work done out of
// Total, with Total zero when the total is unknown. Both are finite and not
// negative.
type Progress struct {
	Current float64
	Total   float64
}

// Valid reports whether p's numbers are finite and not negative.
func (p Progress) Valid() bool {
	return !math.IsNaN(p.Current) && !math.IsInf(p.Current, 0) && p.Current >= 0 &&
		!math.IsNaN(p.Total) && !math.IsInf(p.Total, 0) && p.Total >= 0
}

// New validates p and returns the snapshot. It fails when the ID is empty,
// too long or not a visible-ASCII header value, when the origin is zero, when
// the status is unknown or carries another status's payload (input_required
// needs at least one input request, completed exactly one result, failed one
// error, working and cancelled none), when LastUpdatedAt is before CreatedAt,
// when TTL or PollInterval is negative or not whole milliseconds, or when
// Meta uses a reserved key.
func New(p Params) (Task, error) {
	if err := ValidID(p.ID); err != nil {
		return Task{}, err
	}
	if p.Origin.IsZero() {
		return Task{}, errors.New("task: origin is required")
	}
	switch p.Status {
	case Working, Cancelled:
		if len(p.InputRequests) > 0 || p.Result != nil || p.Error != nil {
			return Task{}, fmt.Errorf("task: status %s carries no payload", p.Status)
		}
	case InputRequired:
		if len(p.InputRequests) == 0 || p.Result != nil || p.Error != nil {
			return Task{}, errors.New("task: status input_required needs input requests and nothing else")
		}
		for k, r := range p.InputRequests {
			if k == "" || r == nil || r.Method == "" {
				return Task{}, errors.New("task: input requests need a key and a method")
			}
		}
	case Completed:
		if p.Result == nil || len(p.InputRequests) > 0 || p.Error != nil {
			return Task{}, errors.New("task: status completed needs a result and nothing else")
		}
	case Failed:
		if p.Error == nil || len(p.InputRequests) > 0 || p.Result != nil {
			return Task{}, errors.New("task: status failed needs an error and nothing else")
		}
	default:
		return Task{}, fmt.Errorf("task: unknown status %q", p.Status)
	}
	switch {
	case p.CreatedAt.IsZero() || p.LastUpdatedAt.IsZero():
		return Task{}, errors.New("task: creation and update times are required")
	case p.LastUpdatedAt.Before(p.CreatedAt):
		return Task{}, errors.New("task: last update is before creation")
	case !wholeMillis(p.TTL) || !wholeMillis(p.PollInterval):
		return Task{}, errors.New("task: TTL and poll interval must be positive whole milliseconds or zero")
	}
	for k := range p.Meta {
		if reservedMetaKey(k) {
			return Task{}, fmt.Errorf("task: _meta key %q is reserved", k)
		}
	}
	if p.Progress != nil {
		if !p.Progress.Valid() {
			return Task{}, errors.New("task: progress numbers must be finite and not negative")
		}
		c := *p.Progress
		p.Progress = &c
	}
	p.InputRequests = maps.Clone(p.InputRequests)
	p.Meta = maps.Clone(p.Meta)
	return Task{p: &p}, nil
}

func wholeMillis(d time.Duration) bool { return d >= 0 && d%time.Millisecond == 0 }

// reservedMetaKey reports whether k has a reserved prefix: one whose second
// label is modelcontextprotocol or mcp.
func reservedMetaKey(k string) bool {
	prefix, _, ok := strings.Cut(k, "/")
	if !ok {
		return false
	}
	labels := strings.Split(prefix, ".")
	return len(labels) >= 2 && (labels[1] == "modelcontextprotocol" || labels[1] == "mcp")
}

// ValidID reports whether id can name a task: 1 to MaxIDLength visible ASCII
// characters that do not begin with the =?base64? sentinel, so that it
// travels unchanged in the Mcp-Name header ([mcp.EncodeHeaderValue] returns
// it as is) and never even looks encoded.
func ValidID(id string) error {
	if id == "" || len(id) > MaxIDLength {
		return errors.New("task: ID must have 1 to 128 characters")
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= ' ' || c > '~' {
			return errors.New("task: ID must be visible ASCII")
		}
	}
	if strings.HasPrefix(id, "=?base64?") {
		return errors.New("task: ID must not look like an encoded header value")
	}
	return nil
}

// ps returns the members; the zero Task has zero members.
func (t Task) ps() *Params {
	if t.p == nil {
		return &Params{}
	}
	return t.p
}

// ID returns the task ID.
func (t Task) ID() string { return t.ps().ID }

// Origin returns the origin the task was created with.
func (t Task) Origin() Origin { return t.ps().Origin }

// Status returns the current state.
func (t Task) Status() Status { return t.ps().Status }

// StatusMessage returns the optional status message.
func (t Task) StatusMessage() string { return t.ps().StatusMessage }

// CreatedAt returns the creation time.
func (t Task) CreatedAt() time.Time { return t.ps().CreatedAt }

// LastUpdatedAt returns the time of the last change.
func (t Task) LastUpdatedAt() time.Time { return t.ps().LastUpdatedAt }

// TTL returns the retention from creation; zero means unlimited.
func (t Task) TTL() time.Duration { return t.ps().TTL }

// PollInterval returns the suggested polling interval; zero means none.
func (t Task) PollInterval() time.Duration { return t.ps().PollInterval }

// InputRequests returns a copy of the outstanding input requests.
func (t Task) InputRequests() mcp.InputRequests { return maps.Clone(t.ps().InputRequests) }

// Result returns the complete result of a completed task. Callers must not
// modify it.
func (t Task) Result() *mcp.CallToolResult { return t.ps().Result }

// Error returns the error of a failed task.
func (t Task) Error() *mcp.Error { return t.ps().Error }

// Meta returns a copy of the task's _meta.
func (t Task) Meta() mcp.Meta { return maps.Clone(t.ps().Meta) }

// Progress returns the last progress count a worker reported; ok is false
// when there is none.
func (t Task) Progress() (p Progress, ok bool) {
	if q := t.ps().Progress; q != nil {
		return *q, true
	}
	return Progress{}, false
}

// Params returns a copy of the snapshot's members, to derive a new snapshot.
func (t Task) Params() Params {
	p := *t.ps()
	p.InputRequests = maps.Clone(p.InputRequests)
	p.Meta = maps.Clone(p.Meta)
	if p.Progress != nil {
		c := *p.Progress
		p.Progress = &c
	}
	return p
}

// IsZero reports whether t is the zero (invalid) Task.
func (t Task) IsZero() bool { return t.p == nil }

// String redacts the task: it prints the status only, never the ID,
// message, payload or origin.
func (t Task) String() string {
	if t.p == nil {
		return "task.Task(zero)"
	}
	return "task.Task(status=" + string(t.p.Status) + ")"
}

// Format redacts the task for every verb.
func (t Task) Format(f fmt.State, _ rune) { io.WriteString(f, t.String()) }

// GoString redacts the task in %#v output too.
func (t Task) GoString() string { return t.String() }

// Info renders the base wire object of the snapshot.
func (t Task) Info() mcp.TaskInfo {
	info := mcp.TaskInfo{
		TaskID:        t.ps().ID,
		Status:        t.ps().Status,
		StatusMessage: t.ps().StatusMessage,
		CreatedAt:     formatTime(t.ps().CreatedAt),
		LastUpdatedAt: formatTime(t.ps().LastUpdatedAt),
		Meta:          maps.Clone(t.ps().Meta),
	}
	if t.ps().TTL > 0 {
		ms := t.ps().TTL.Milliseconds()
		info.TTLMs = &ms
	}
	if t.ps().PollInterval > 0 {
		ms := t.ps().PollInterval.Milliseconds()
		info.PollIntervalMs = &ms
	}
	return info
}

// formatTime renders a time as RFC 3339 UTC with milliseconds.
func formatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// ErrNotFound means the task is unknown, expired, or not visible to the
// request: the three are indistinguishable by design.
var ErrNotFound = errors.New("task: not found")

// ErrUnavailable marks a Manager error caused by the store being out of
// reach rather than by the request: a store call that did not finish
// within the store's own deadline, a connection that was refused, a lock
// held elsewhere past the store's wait. A manager wraps it (errors.Is
// finds it) so that the server answers HTTP 503 with Retry-After, telling
// the client to retry later, instead of the fixed internal error. Errors
// that wrap context.DeadlineExceeded or a net.Error are read the same way
// without it.
var ErrUnavailable = errors.New("task: store unavailable")
