package gateway

import (
	"errors"
	"fmt"
	"path"
	"time"
)

// MaxToolSettings bounds Options.Tools.
const MaxToolSettings = 1000

// ToolSettings are the settings of the upstream tools whose names match
// Match, for what the TaskTools and RetryTools patterns and the gateway's
// timeouts do not say. The first entry of Options.Tools that matches a
// tool applies to it; the others are ignored for that tool. A setting an
// entry leaves unset (nil, zero) comes from the rest of Options.
type ToolSettings struct {
	// Match is a path.Match pattern of upstream tool names ("slow.*").
	Match string
	// Task, when set, says whether the tool is a durable task tool. True
	// makes it one as a TaskTools pattern would; false contradicts a
	// TaskTools pattern that matches the tool, which New refuses.
	Task *bool
	// Retry, when set, says whether the task tool is safe to call again,
	// as RetryTools does; true needs the tool to be a task tool, false
	// contradicts a RetryTools pattern that matches it, which New refuses.
	Retry *bool
	// Timeout is the deadline of one upstream call of the tool: at most
	// MaxCallTimeout for an inline tool, MaxTaskCallTimeout for a task
	// tool. Zero: CallTimeout or TaskCallTimeout.
	Timeout time.Duration
	// MaxAttempts is the job option of a retry tool (see
	// Options.MaxAttempts). Zero: Options.MaxAttempts.
	MaxAttempts int
}

// checkTools reports the problems of Options.Tools, each naming its entry.
func checkTools(tools []ToolSettings) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(tools) > MaxToolSettings {
		bad("Tools: %d entries, more than %d", len(tools), MaxToolSettings)
	}
	for i, ts := range tools {
		at := fmt.Sprintf("Tools[%d]", i)
		if ts.Match == "" {
			bad("%s: match is empty", at)
		} else if _, err := path.Match(ts.Match, ""); err != nil {
			bad("%s: match %q: %v", at, ts.Match, err)
		}
		if ts.Retry != nil && *ts.Retry && ts.Task != nil && !*ts.Task {
			bad("%s: retry true needs a task tool, and task is false", at)
		}
		if ts.Timeout < 0 || ts.Timeout > MaxTaskCallTimeout {
			bad("%s: timeout must be between 0 (the default) and %v, not %v", at, MaxTaskCallTimeout, ts.Timeout)
		}
		if ts.MaxAttempts < 0 {
			bad("%s: maxAttempts must not be negative", at)
		}
	}
	return errs
}

// plan is what the gateway does with one mirrored tool.
type plan struct {
	task, retry bool
	timeout     time.Duration
	maxAttempts int
}

// settingsOf returns the first entry of Options.Tools matching name, and
// its index; -1 when none does.
func (o Options) settingsOf(name string) (ToolSettings, int) {
	for i, ts := range o.Tools {
		if ok, _ := path.Match(ts.Match, name); ok {
			return ts, i
		}
	}
	return ToolSettings{}, -1
}

// planFor resolves the settings of the tool name from the patterns and
// Options.Tools; a contradiction between them is an error naming both.
func (o Options) planFor(name string) (plan, error) {
	ts, i := o.settingsOf(name)
	at := fmt.Sprintf("Tools[%d] (match %q)", i, ts.Match)
	var errs []error
	p := plan{task: matchAny(o.TaskTools, name), retry: matchAny(o.RetryTools, name)}
	if ts.Task != nil {
		if p.task && !*ts.Task {
			errs = append(errs, fmt.Errorf("tool %q: TaskTools pattern %q makes it a task tool, but %s says task false", name, firstMatch(o.TaskTools, name), at))
		}
		p.task = *ts.Task
	}
	if ts.Retry != nil {
		if p.retry && !*ts.Retry {
			errs = append(errs, fmt.Errorf("tool %q: RetryTools pattern %q makes it a retry tool, but %s says retry false", name, firstMatch(o.RetryTools, name), at))
		}
		if *ts.Retry && !p.task {
			errs = append(errs, fmt.Errorf("tool %q: %s says retry true, but it is not a task tool", name, at))
		}
		p.retry = *ts.Retry
	}
	p.retry = p.retry && p.task
	p.timeout, p.maxAttempts = ts.Timeout, ts.MaxAttempts
	switch {
	case p.timeout == 0 && p.task:
		p.timeout = o.TaskCallTimeout
	case p.timeout == 0:
		p.timeout = o.CallTimeout
	case !p.task && p.timeout > MaxCallTimeout:
		errs = append(errs, fmt.Errorf("tool %q: %s sets timeout %v, more than the %v an inline tool may take", name, at, p.timeout, MaxCallTimeout))
	}
	if p.maxAttempts == 0 {
		p.maxAttempts = o.MaxAttempts
	}
	return p, errors.Join(errs...)
}

// firstMatch is the first of globs that matches name.
func firstMatch(globs []string, name string) string {
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return g
		}
	}
	return ""
}

// maxToolTimeout is the longest Timeout of Options.Tools.
func (o Options) maxToolTimeout() time.Duration {
	var d time.Duration
	for _, ts := range o.Tools {
		d = max(d, ts.Timeout)
	}
	return d
}
