package worker

import (
	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/internal/logtext"
)

// errText renders an error for the log: its text (a PostgreSQL error's
// SQLSTATE included), cut to 1,000 bytes on a character boundary and
// marked when cut. Store errors carry no task IDs, arguments or
// principals; handler errors go through jobErrText.
func errText(err error) string { return logtext.Error(err) }

// jobErrText renders a handler's error for the log, as errText does, after
// replacing the job's task ID and every string of its arguments of at
// least 4 bytes with placeholders (logtext.Scrubbed): a handler that wraps
// an argument (a path, a URL, an account) into its error does not put it
// in the log. It is a safety net, not a licence: handlers should keep
// secrets out of their errors, since a value derived from an argument (a
// decoded token, a record fetched with it) is not recognised.
func jobErrText(j *backend.JobRow, err error) string {
	return logtext.Scrubbed(err, j.TaskID, j.Origin.Params().Arguments)
}
