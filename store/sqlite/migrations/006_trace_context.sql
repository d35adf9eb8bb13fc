-- 006_trace_context: the trace context of the request that created a task.
--
-- The W3C traceparent of the creating request's span, optionally followed by
-- a space and its tracestate (task.TraceContext.Encode), at most 512 bytes;
-- NULL when the request was not traced. Kept beside the origin, never inside
-- it: worker runs link their spans to it.
--
-- Additive: processes of version 5 on the same file never read the column,
-- and their writes leave it NULL.

ALTER TABLE tasks ADD COLUMN trace_context TEXT CHECK (length(trace_context) <= 512);
