// Package schedule creates tasks of task tools on a timetable: a report
// every hour, a cleanup at 02:00 each night. A Schedule names a tool, its
// arguments, the identity its tasks belong to, and a period (an interval
// or a cron expression); a Scheduler creates one task per period through
// server.Server.CreateTask, with the same validation, limits and
// authorization binding as a client's call.
//
// # Exactly once per period
//
// Every API node of a fleet may run the same schedules. Each creation
// carries the idempotency key "schedule/NAME/TIME", TIME being the
// period's start in UTC (RFC 3339), so the store's unique key lets exactly
// one of the racing nodes create the period's task and hands it to the
// others. A period in which no node runs is skipped, unless the schedule
// sets CatchUp. A period's task is created once only while the store still
// keeps its key, that is, while the task has not expired (its TTL, 24 h by
// default); keep the TTL of a scheduled tool longer than its period.
//
// Periods are computed from the wall clock: an interval's periods are the
// multiples of Every since the zero time (an hourly schedule fires on the
// hour, UTC), and a cron expression's are its fire times in UTC (or in the
// zone a CRON_TZ= prefix names). Nodes whose clocks differ by less than a
// period agree on the key.
//
// # Failures
//
// A creation that fails for a reason that may pass (the store or the
// server unavailable, a deadline, a rate limit) is tried again with a
// growing pause, until the next period begins. A tool error (the tool's
// Validate refused the arguments) or an unknown tool fails every period
// alike: it is logged, and New cannot see it, since the tools are the
// server's. The log lines name the schedule and the category of the
// failure; never its arguments, principal or task ID.
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"time"

	"github.com/robfig/cron/v3"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
)

// Schedule is one timetable of a task tool.
type Schedule struct {
	// Name identifies the schedule in keys, logs and the console: 1 to
	// MaxNameBytes bytes of letters, digits, '.', '_' and '-', unique in a
	// Scheduler. Renaming a schedule starts its periods afresh.
	Name string
	// Endpoint is the name of the endpoint whose tool is called; empty
	// when the server has one endpoint.
	Endpoint string
	// Tool names a task tool of the endpoint.
	Tool string
	// Arguments are the tool's arguments, a JSON object; nil means {}.
	Arguments json.RawMessage
	// Identity is who the tasks belong to (see
	// server.CreateTaskParams.Identity). A Principal is required.
	Identity server.Identity
	// Every is the period of an interval schedule: at least MinEvery, at
	// most MaxEvery. Exactly one of Every and Cron is set.
	Every time.Duration
	// Cron is a standard five-field cron expression (minute, hour, day of
	// month, month, day of week), or a descriptor such as "@daily",
	// optionally after "CRON_TZ=Zone ". Evaluated in UTC by default.
	Cron string
	// CatchUp, when set, also runs the period under way when the
	// scheduler starts, if no node ran it yet: a nightly job whose fleet
	// was down at 02:00 then runs on start instead of waiting a day.
	CatchUp bool
}

// Bounds of a Schedule.
const (
	MaxNameBytes = 64
	MinEvery     = time.Second
	MaxEvery     = 366 * 24 * time.Hour
	// MaxArgumentBytes bounds Schedule.Arguments.
	MaxArgumentBytes = 64 << 10
	// MaxSchedules bounds the schedules of one Scheduler.
	MaxSchedules = 1000
)

var nameSyntax = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)

// cronParser reads standard five-field expressions and descriptors.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// timetable is a Schedule's periods: next returns the start of the first
// period after t.
type timetable interface {
	next(t time.Time) time.Time
	// current returns the start of the period that contains t.
	current(t time.Time) time.Time
}

type interval time.Duration

func (d interval) next(t time.Time) time.Time {
	return t.Truncate(time.Duration(d)).Add(time.Duration(d))
}
func (d interval) current(t time.Time) time.Time { return t.Truncate(time.Duration(d)) }

type cronTable struct{ s cron.Schedule }

func (c cronTable) next(t time.Time) time.Time { return c.s.Next(t) }

// current walks back a period: the latest fire time at or before t. cron
// offers no Prev, so it searches from a day, then a year, back.
func (c cronTable) current(t time.Time) time.Time {
	for _, back := range []time.Duration{24 * time.Hour, MaxEvery} {
		var last time.Time
		for f := c.s.Next(t.Add(-back)); !f.IsZero() && !f.After(t); f = c.s.Next(f) {
			last = f
		}
		if !last.IsZero() {
			return last
		}
	}
	return time.Time{}
}

// validate reports every problem of s, each prefixed with its name.
func (s *Schedule) validate() (timetable, []string) {
	var problems []string
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case s.Name == "":
		add("a name is required")
	case len(s.Name) > MaxNameBytes:
		add("the name is longer than %d bytes", MaxNameBytes)
	case !nameSyntax.MatchString(s.Name):
		add("the name may hold only letters, digits, '.', '_' and '-'")
	}
	if s.Tool == "" {
		add("a tool is required")
	}
	if s.Identity.Principal == "" {
		add("an Identity with a Principal is required")
	}
	if len(s.Arguments) > MaxArgumentBytes {
		add("the arguments are larger than %d bytes", MaxArgumentBytes)
	} else if len(s.Arguments) > 0 && (!json.Valid(s.Arguments) || !strings.HasPrefix(strings.TrimSpace(string(s.Arguments)), "{")) {
		add("the arguments must be a JSON object")
	}
	var tt timetable
	switch {
	case s.Every != 0 && s.Cron != "":
		add("set Every or Cron, not both")
	case s.Every == 0 && s.Cron == "":
		add("set Every or Cron")
	case s.Every != 0 && (s.Every < MinEvery || s.Every > MaxEvery):
		add("Every %v is outside [%v, %v]", s.Every, MinEvery, MaxEvery)
	case s.Every != 0:
		tt = interval(s.Every)
	case strings.HasPrefix(strings.TrimSpace(s.Cron), "@every"):
		add("Cron %q: use Every for an interval", s.Cron)
	default:
		cs, err := cronParser.Parse(s.Cron)
		if err != nil {
			add("Cron %q: %v", s.Cron, err)
			break
		}
		tt = cronTable{s: cs}
		if tt.next(time.Now()).IsZero() {
			add("Cron %q never fires", s.Cron)
			tt = nil
		}
	}
	return tt, problems
}

// key is the idempotency key of s's period starting at start.
func (s *Schedule) key(start time.Time) string {
	return "schedule/" + s.Name + "/" + start.UTC().Format(time.RFC3339)
}

// Creator creates tasks: server.Server and node.Node are Creators.
type Creator interface {
	CreateTask(ctx context.Context, p server.CreateTaskParams) (mcp.TaskInfo, error)
}

// permanent reports whether a creation error will recur for every try of
// the period: a tool error, bad params, or a protocol error other than a
// limit or an internal failure.
func permanent(err error) bool {
	var (
		tre *server.ToolResultError
		me  *mcp.Error
	)
	switch {
	case errors.As(err, &tre), errors.Is(err, server.ErrBadParams):
		return true
	case errors.As(err, &me):
		return me.Code == mcp.CodeInvalidParams || me.Code == mcp.CodeMethodNotFound
	}
	return false
}

// category names a creation failure in logs and the console.
func category(err error) string {
	var (
		tre *server.ToolResultError
		me  *mcp.Error
	)
	switch {
	case errors.As(err, &tre):
		return "tool_error"
	case errors.Is(err, server.ErrBadParams):
		return "bad_params"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.As(err, &me) && me.Code == mcp.CodeInternalError:
		return "internal"
	case errors.As(err, &me):
		return "refused"
	}
	return "unavailable"
}

// discard is the logger of a Scheduler without Options.Logger.
var discard = slog.New(slog.DiscardHandler)
