package postgres

// Progress statements, in the style of sql.go.
const (
	// Sets a running job's task message and progress count: $2 task, $3
	// attempt (the fence), $4 message, $5 progress, $6 total (both NULL:
	// none). The job row is locked first, like every fenced writer's, so
	// that a rescue or a new claim that commits first makes the fence fail
	// instead of the write landing after it. The status does not change:
	// a task whose job runs under a live lease is never terminal.
	sqlReportProgress = `WITH j AS (
			SELECT task_id FROM {{schema}}.jobs WHERE ` + fence + ` FOR UPDATE),
		t AS (
			UPDATE {{schema}}.tasks t SET status_message = $4, progress = $5, progress_total = $6,
				updated_at = GREATEST(t.updated_at, {{now}})
			FROM j WHERE t.id = j.task_id RETURNING t.id)
		` + recordEvents
)
