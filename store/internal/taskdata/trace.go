package taskdata

import "github.com/taskwire/taskwire/task"

// TraceColumn is the value of a task's trace_context column for a
// creation: its trace context in task.TraceContext.Encode form, or nil
// (SQL NULL) when the creation has none or it is not valid.
func TraceColumn(cc *task.CreationContext) *string {
	if s := cc.Trace.Encode(); s != "" {
		return &s
	}
	return nil
}
