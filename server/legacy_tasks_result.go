package server

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/task"
)

// errInputUnrelayable: the task needs input but the request has no way to
// ask the client (no server-to-client requests on its stream).
var errInputUnrelayable = newProtocolError(http.StatusOK, mcp.NewError(mcp.CodeInvalidRequest,
	"Invalid request: the task needs input, which cannot be asked on this request"))

// awaitTerminal waits, up to maxWait from now and within the HTTP request's
// life, for the task named id to reach a terminal state, relaying its input
// requests to the client through ask (which may be nil: the wait then fails
// with errInputUnrelayable when input is needed), tagged with the
// related-task _meta key when related is set. changed, when not nil, is
// called with each new snapshot (for progress). It returns the terminal
// snapshot, or errWaitEnded when the wait ran out or the client left; the
// task is never cancelled by the wait ending.
func (c *call) awaitTerminal(ctx context.Context, id string, maxWait time.Duration, ask clientAsker, related bool, changed func(task.Task)) (task.Task, error) {
	ctx, cancel := context.WithTimeout(ctx, maxWait)
	defer cancel()
	rc := c.requestContext(id)
	w := c.srv.watchTask(id)
	defer w.stop()
	var relay *taskInputRelay
	if ask != nil {
		relay = newTaskInputRelay(ctx, c, ask, related, rc, w)
		defer func() {
			cancel() // questions still in flight end with the wait
			relay.wait()
		}()
	}
	var last string
	return c.awaitTask(ctx, w, rc, c.srv.opts.RequestTimeout, func(t task.Task) (bool, error) {
		if t.Status().Terminal() {
			return true, nil
		}
		if changed != nil {
			if stamp := changeStamp(legacyTask(t)); stamp != last {
				last = stamp
				changed(t)
			}
		}
		if relay != nil {
			if err := relay.failure(); err != nil {
				return false, err
			}
		}
		if t.Status() != task.InputRequired {
			return false, nil
		}
		if relay == nil {
			return false, errInputUnrelayable
		}
		return false, relay.relay(t)
	})
}

// terminalOutcome is what the underlying tools/call would have returned for
// a terminal task: its result (delivered as tasks/get delivers it: catalog
// policy, sanitizer, output contract), the JSON-RPC error of a failed task,
// or errTaskCancelled. meta, when not nil, is merged into a result's _meta.
func (c *call) terminalOutcome(ctx context.Context, t task.Task, meta mcp.Meta) (*mcp.CallToolResult, *protocolError) {
	switch t.Status() {
	case task.Completed:
		res, perr := c.deliverResult(ctx, t.Origin(), t.Result())
		if perr != nil {
			return nil, perr
		}
		if meta != nil {
			cp := *res
			cp.Meta = mcp.Meta{}
			for k, v := range res.Meta {
				cp.Meta[k] = v
			}
			for k, v := range meta {
				cp.Meta[k] = v
			}
			res = &cp
		}
		return res, nil
	case task.Failed:
		if e := t.Error(); e != nil {
			return nil, newProtocolError(http.StatusOK, e)
		}
		return nil, errInternal
	case task.Cancelled:
		return nil, errTaskCancelled
	}
	return nil, errInternal
}

// legacyTaskResultFor runs tasks/result: it blocks until the task is
// terminal (up to maxWait), on an SSE stream with keep-alives unless the
// task has ended already, sending the task's input requests on this
// request's stream through ask, then answers with exactly what the tools/call
// would have returned, tagged with the related-task _meta key. When the wait
// runs out first, the client gets a -32603 that says to call again; the task
// goes on.
func (ep *Endpoint) legacyTaskResultFor(ctx context.Context, c *call, maxWait time.Duration, ask clientAsker) (any, Outcome, *protocolError) {
	id := c.params.TaskID
	if task.ValidID(id) != nil {
		return nil, OutcomeProtocolError, errTaskNotFound
	}
	streaming := false
	t, err := c.awaitTerminal(ctx, id, maxWait, ask, true, func(task.Task) {
		// The task is not done: answer on an SSE stream, so that
		// keep-alives flow while the request blocks.
		if !streaming {
			streaming = true
			c.stream.beginSSE()
		}
	})
	if err != nil {
		return c.waitFailure(err)
	}
	// ctx has no deadline (a long wait); the policy and sanitizer calls of
	// the result get the request's, as after an inline wait.
	dctx, cancel := context.WithTimeout(ctx, c.srv.opts.RequestTimeout)
	defer cancel()
	res, perr := c.terminalOutcome(dctx, t, mcp.Meta{mcp.MetaRelatedTask: mcp.RelatedTaskMeta{TaskID: t.ID()}})
	if perr != nil {
		return nil, outcomeOf(perr), perr
	}
	return res, outcomeOfResult(res), nil
}

// errStillRunning is tasks/result after the longest wait: the task goes on
// and a new tasks/result waits again.
var errStillRunning = newProtocolError(http.StatusOK, mcp.NewError(mcp.CodeInternalError,
	"The task is still running; call tasks/result again"))

// waitFailure maps an error of awaitTerminal.
func (c *call) waitFailure(err error) (any, Outcome, *protocolError) {
	var pe *protocolError
	switch {
	case errors.Is(err, errWaitEnded):
		if c.r.Context().Err() != nil {
			return nil, OutcomeCanceled, errStreamGone
		}
		return nil, OutcomeTimeout, errStillRunning
	case errors.Is(err, task.ErrNotFound):
		return nil, OutcomeProtocolError, errTaskNotFound
	case errors.As(err, &pe):
		return nil, outcomeOf(pe), pe
	}
	c.srv.logger.Error("waiting for a task failed", "endpoint", c.ep.opts.Name, "err", c.redactErr(err))
	return nil, OutcomeInternalError, storeFailure(err)
}

func outcomeOfResult(res *mcp.CallToolResult) Outcome {
	if res.IsError {
		return OutcomeToolError
	}
	return OutcomeComplete
}

// changeStamp identifies a task state for change detection: its status,
// status message and lastUpdatedAt (a change within one millisecond keeps
// lastUpdatedAt).
func changeStamp(t mcp.LegacyTask) string {
	return string(t.Status) + "\x00" + t.StatusMessage + "\x00" + t.LastUpdatedAt
}
