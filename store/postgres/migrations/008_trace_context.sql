-- 008_trace_context: the trace context of the request that created a task.
--
-- The W3C traceparent of the creating request's span, optionally followed by
-- a space and its tracestate (task.TraceContext.Encode), at most 512 bytes;
-- NULL when the request was not traced. Kept beside the origin, never inside
-- it: worker runs link their spans to it.
--
-- Additive: nodes of version 7 still running during a rolling upgrade never
-- read the column, and their writes leave it NULL. Adding a nullable column
-- rewrites no rows.

ALTER TABLE {{schema}}.tasks
	ADD COLUMN trace_context TEXT CHECK (octet_length(trace_context) <= 512);
