package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/taskwire/taskwire/mcp"
)

// Update is one observed state of a task.
type Update struct {
	// Status is the task's status in this state.
	Status mcp.TaskStatus
	// StatusMessage is the server's message for it, empty when none.
	StatusMessage string
	// PollInterval is the server's latest suggested polling interval (zero
	// when it suggested none).
	PollInterval time.Duration
	// InputRequests are the pending requests of an input_required task.
	InputRequests mcp.InputRequests
	// Task is the full state, including the result or error of a finished
	// task.
	Task *mcp.DetailedTask
}

// Outcome returns what Wait returns for the state u: for a terminal state
// the tool result (also when its isError is true), *TaskFailedError or
// *TaskCancelledError; for a state that is not terminal a *ProtocolError.
// It sends nothing, so that a caller following Updates (to show progress,
// or to answer input itself) gets the outcome of the last update.
func (u Update) Outcome() (*mcp.CallToolResult, error) {
	if u.Task == nil {
		return nil, protoErr(mcp.MethodTasksGet, "update without a task", nil)
	}
	return outcome(u.Task)
}

func updateOf(d *mcp.DetailedTask) Update {
	u := Update{Status: d.Status, StatusMessage: d.StatusMessage, InputRequests: d.InputRequests, Task: d}
	if d.PollIntervalMs != nil {
		u.PollInterval = time.Duration(*d.PollIntervalMs) * time.Millisecond
	}
	return u
}

// Wait follows the task until it finishes and returns its tool result.
//
// Under 2026-07-28 it first listens (subscriptions/listen with the task
// ID); after the server acknowledges it makes one tasks/get and then
// follows notifications/tasks. Without a stream (the server refuses it, or
// the stream ends or breaks) it polls tasks/get at the server's latest
// pollIntervalMs (clamped by Options). Input requests are answered with the
// handlers, each key once. In a 2025-11-25 session it waits on the blocking
// tasks/result, whose stream carries the task's input requests.
//
// A result with isError true is returned without error. A failed task
// returns *TaskFailedError, a cancelled one *TaskCancelledError
// (ErrTaskCancelled), an unknown or expired one ErrTaskNotFound, and input
// no handler can answer *InputRequiredError with the pending keys. Wait
// returns when ctx ends.
func (t *Task) Wait(ctx context.Context) (*mcp.CallToolResult, error) {
	e, _, err := t.c.ensure(ctx)
	if err != nil {
		return nil, err
	}
	if e == eraLegacy {
		return t.legacyWait(ctx)
	}
	var final *mcp.DetailedTask
	err = t.follow(ctx, func(d *mcp.DetailedTask) (bool, error) {
		switch {
		case d.Status.Terminal():
			final = d
			return true, nil
		case d.Status == mcp.TaskInputRequired:
			return false, t.answerPending(ctx, d.InputRequests)
		}
		return false, nil
	})
	if err != nil {
		return nil, err
	}
	return outcome(final)
}

// answerPending answers the input requests this handle has not answered.
func (t *Task) answerPending(ctx context.Context, reqs mcp.InputRequests) error {
	t.mu.Lock()
	pending := mcp.InputRequests{}
	for k, r := range reqs {
		if !t.answered[k] {
			pending[k] = r
		}
	}
	t.mu.Unlock()
	if len(pending) == 0 {
		return nil
	}
	responses, err := t.c.fulfil(ctx, t.id, pending)
	if err != nil {
		return err
	}
	err = t.Answer(ctx, responses)
	if errors.Is(err, ErrAlreadyAnswered) {
		return nil // answered concurrently through the same handle
	}
	return err
}

// Updates follows the task like Wait, without answering input requests,
// and yields each new state: a change of status, message or pending input.
// The sequence ends after the terminal state or with one error (the errors
// of Get; ctx's error when it ends).
func (t *Task) Updates(ctx context.Context) iter.Seq2[Update, error] {
	return func(yield func(Update, error) bool) {
		var prev *mcp.DetailedTask
		stopped := false
		err := t.follow(ctx, func(d *mcp.DetailedTask) (bool, error) {
			if prev == nil || prev.Status != d.Status || prev.StatusMessage != d.StatusMessage ||
				!slices.Equal(slices.Sorted(maps.Keys(prev.InputRequests)), slices.Sorted(maps.Keys(d.InputRequests))) {
				prev = d
				if !yield(updateOf(d), nil) {
					stopped = true
					return true, nil
				}
			}
			return d.Status.Terminal(), nil
		})
		if err != nil && !stopped {
			yield(Update{}, err)
		}
	}
}

// follow calls fn with every observed state until fn reports done or
// fails. It listens when the server lets it and polls otherwise.
func (t *Task) follow(ctx context.Context, fn func(*mcp.DetailedTask) (bool, error)) error {
	e, _, err := t.c.ensure(ctx)
	if err != nil {
		return err
	}
	// A remembered terminal state serves only when it is complete: the
	// CreateTaskResult of a task that finished before tools/call answered
	// says "completed" without the result.
	if d := t.lastSeen(); d != nil && d.Status.Terminal() &&
		(d.Status != mcp.TaskCompleted || len(d.Result) > 0) && (d.Status != mcp.TaskFailed || d.Error != nil) {
		_, err := fn(d)
		return err
	}
	if e == eraModern {
		done, err := t.listen(ctx, fn)
		if done || err != nil {
			return err
		}
	}
	for {
		d, err := t.Get(ctx)
		if err != nil {
			return err
		}
		done, err := fn(d)
		if done || err != nil {
			return err
		}
		if err := sleep(ctx, t.pollInterval(d)); err != nil {
			return err
		}
	}
}

// listen follows the task on a subscriptions/listen stream. It returns
// done when fn finished, an error when fn or Get failed, and (false, nil)
// when the caller should poll instead: no stream, no acknowledgement of the
// task, or a stream that ended.
func (t *Task) listen(ctx context.Context, fn func(*mcp.DetailedTask) (bool, error)) (bool, error) {
	c := t.c
	_, version, _ := c.ensure(ctx)
	params := &mcp.ListenParams{Notifications: &mcp.SubscriptionFilter{TaskIDs: []string{t.id}}}
	cl, err := c.modernCall(version, mcp.MethodSubscriptionsListen, params, nil)
	if err != nil {
		return false, err
	}
	lctx, cancel := c.requestContext(ctx, true)
	defer cancel()
	// The acknowledgement must come within RequestTimeout.
	ackTimer := time.AfterFunc(c.opts.RequestTimeout, cancel)
	defer ackTimer.Stop()
	resp, _, err := c.post(lctx, cl)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		c.opts.Logger.Debug("client: listen failed; polling", "err", err)
		return false, nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || mediaType(resp.Header) != "text/event-stream" {
		_, err := c.readResponse(lctx, cl, resp)
		c.opts.Logger.Debug("client: listen refused; polling", "err", err)
		return false, nil
	}
	sr := newSSEReader(resp.Body, c.opts.MaxNotificationBytes, c.opts.MaxStreamEvents)
	acked := false
	for {
		ev, err := sr.next()
		if err != nil {
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
			if !errors.Is(err, io.EOF) {
				c.opts.Logger.Debug("client: listen stream broke; polling", "err", err)
			}
			return false, nil
		}
		var m wireMessage
		if len(ev.data) == 0 || json.Unmarshal(ev.data, &m) != nil {
			continue
		}
		switch m.Method {
		case "":
			return false, nil // the server ended the subscription
		case mcp.NotificationSubscriptionsAcknowledged:
			var p mcp.AcknowledgedParams
			if json.Unmarshal(m.Params, &p) != nil || p.Notifications == nil || !slices.Contains(p.Notifications.TaskIDs, t.id) {
				return false, nil
			}
			acked = true
			ackTimer.Stop()
			d, err := t.Get(ctx)
			if err != nil {
				return false, err
			}
			if done, err := fn(d); done || err != nil {
				return done, err
			}
		case mcp.NotificationTasks:
			if !acked {
				continue
			}
			var p mcp.TaskNotificationParams
			if json.Unmarshal(m.Params, &p) != nil || p.TaskID != t.id {
				continue
			}
			d := p.DetailedTask
			t.remember(&d)
			if done, err := fn(&d); done || err != nil {
				return done, err
			}
		}
	}
}

// legacyWait waits on the blocking tasks/result of 2025-11-25.
func (t *Task) legacyWait(ctx context.Context) (*mcp.CallToolResult, error) {
	cl, err := t.c.newCall(mcp.MethodTasksResult, &mcp.LegacyTaskParams{TaskID: t.id})
	if err != nil {
		return nil, err
	}
	cl.stream = true
	raw, err := t.c.roundTrip(ctx, cl)
	if err != nil {
		var rpc *RPCError
		if !errors.As(err, &rpc) {
			return nil, err
		}
		d, gerr := t.Get(ctx)
		switch {
		case gerr != nil:
			return nil, gerr
		case d.Status == mcp.TaskCancelled:
			return nil, &TaskCancelledError{TaskID: t.id, StatusMessage: d.StatusMessage}
		}
		return nil, &TaskFailedError{TaskID: t.id, StatusMessage: d.StatusMessage, Err: rpc}
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, protoErr(mcp.MethodTasksResult, "malformed result", err)
	}
	return &res, nil
}
