package taskdata

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/taskwire/taskwire/backend"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// Row is a task row as a store read it: the columns a snapshot is built
// from, in the form a driver decodes them (times already converted from
// the store's representation).
type Row struct {
	ID      string
	Status  string
	Message string
	// Origin is the origin column: the persisted origin, byte for byte.
	Origin               []byte
	CreatedAt, UpdatedAt time.Time
	TTLMs, PollMs        int64
	// Requests, Result and Error are the JSON columns; empty means NULL.
	Requests, Result, Error []byte
	// Progress and ProgressTotal are the progress columns; nil is NULL.
	Progress, ProgressTotal *float64
}

// Snapshot builds the task.Task the row describes. It fails, naming the
// column but not its content, when a column does not decode or the
// result is not a valid task.
func (r *Row) Snapshot() (task.Task, error) {
	origin, err := task.ParseOrigin(r.Origin)
	if err != nil {
		return task.Task{}, fmt.Errorf("task origin: %w", err)
	}
	p := task.Params{
		ID:            r.ID,
		Origin:        origin,
		Status:        task.Status(r.Status),
		StatusMessage: r.Message,
		CreatedAt:     r.CreatedAt.UTC(),
		LastUpdatedAt: r.UpdatedAt.UTC(),
		TTL:           time.Duration(r.TTLMs) * time.Millisecond,
		PollInterval:  time.Duration(r.PollMs) * time.Millisecond,
		Progress:      StoredProgress(r.Progress, r.ProgressTotal),
	}
	if p.InputRequests, err = DecodeRequests(r.Requests); err != nil {
		return task.Task{}, err
	}
	if p.Result, err = DecodeResult(r.Result); err != nil {
		return task.Task{}, err
	}
	if p.Error, err = DecodeError(r.Error); err != nil {
		return task.Task{}, err
	}
	t, err := task.New(p)
	if err != nil {
		return task.Task{}, fmt.Errorf("stored task is invalid: %w", err)
	}
	return t, nil
}

// StoredProgress returns the progress count the columns hold, or nil when
// cur is NULL; a NULL total counts as 0. Numbers the snapshot would refuse
// (written by hand) count as none.
func StoredProgress(cur, total *float64) *task.Progress {
	if cur == nil {
		return nil
	}
	p := &task.Progress{Current: *cur}
	if total != nil {
		p.Total = *total
	}
	if !p.Valid() {
		return nil
	}
	return p
}

// Answered is what UpdateTask writes when Accept accepted a response.
type Answered struct {
	// Requests is the new input_requests column: the requests still
	// outstanding (EncodeJSON; nil, SQL NULL, for none).
	Requests []byte
	// Responses is the new input_responses column: every response
	// accepted so far, the new ones included (EncodeResponses).
	Responses []byte
	// Done reports that no request is outstanding any more: the task turns
	// working with its status message cleared (it asked for the input),
	// and a job waiting for the answers becomes available, keeping its
	// run-at time.
	Done bool
}

// Accept applies the rule of task.Manager.UpdateTask (task.AcceptResponses)
// to a task whose columns hold the outstanding requests (reqJSON) and the
// responses accepted so far (respJSON), and returns the columns' new
// values. It returns changed false, and the store writes nothing, when no
// response was accepted. It fails only when a column does not decode.
func Accept(reqJSON, respJSON []byte, responses mcp.InputResponses) (a Answered, changed bool, err error) {
	outstanding, err := DecodeRequests(reqJSON)
	if err != nil {
		return Answered{}, false, err
	}
	accepted, err := DecodeResponses(respJSON)
	if err != nil {
		return Answered{}, false, err
	}
	if accepted == nil {
		accepted = mcp.InputResponses{}
	}
	if task.AcceptResponses(outstanding, accepted, responses) == 0 {
		return Answered{}, false, nil
	}
	if a.Requests, err = EncodeJSON(outstanding); err != nil {
		return Answered{}, false, fmt.Errorf("encode input requests: %w", err)
	}
	if a.Responses, err = EncodeResponses(accepted); err != nil {
		return Answered{}, false, fmt.Errorf("encode input responses: %w", err)
	}
	a.Done = len(outstanding) == 0
	return a, true, nil
}

// DecodeClaim fills in the fields of a claimed job that come from its
// task's columns: the origin and the responses accepted so far. A store
// that cannot decode them must not hand the job out (it fails the task
// with mcp.InternalError instead, so that the row does not block the
// queue).
func DecodeClaim(j *backend.JobRow, origin, responses []byte) error {
	o, err := task.ParseOrigin(origin)
	if err != nil {
		return fmt.Errorf("task origin: %w", err)
	}
	r, err := DecodeResponses(responses)
	if err != nil {
		return err
	}
	j.Origin, j.Responses = o, r
	return nil
}

// Stored errors of the tasks a store fails by itself.
var (
	exhaustedJSON = mustJSON(backend.ExhaustedError())
	internalJSON  = mustJSON(mcp.InternalError())
)

// ExhaustedJSON returns the error column of a task whose job used all its
// attempts or interrupted runs: backend.ExhaustedError, encoded.
func ExhaustedJSON() []byte { return append([]byte(nil), exhaustedJSON...) }

// InternalErrorJSON returns the error column of a task whose stored data
// is unreadable: mcp.InternalError, encoded.
func InternalErrorJSON() []byte { return append([]byte(nil), internalJSON...) }

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// OperatorPayload fills in what an operator reads of a task beyond its
// summary, from the stored columns: the arguments of the origin, the
// result, the error and the progress count. It fails, naming the column,
// when one does not decode.
func OperatorPayload(ot *backend.OperatorTask, origin, result, errJSON []byte, cur, total *float64) error {
	o, err := task.ParseOrigin(origin)
	if err != nil {
		return fmt.Errorf("task origin: %w", err)
	}
	ot.Arguments = json.RawMessage(o.Params().Arguments)
	if ot.Result, err = DecodeResult(result); err != nil {
		return err
	}
	if ot.Error, err = DecodeError(errJSON); err != nil {
		return err
	}
	ot.Progress = StoredProgress(cur, total)
	return nil
}
