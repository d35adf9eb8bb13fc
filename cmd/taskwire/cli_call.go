package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/internal/cliflags"
	"github.com/taskwire/taskwire/mcp"
)

// callCmd runs `taskwire call [--json] [--detach] TOOL [key=value | key:=JSON]...`.
func callCmd(ctx context.Context, args []string, env *cliEnv) error {
	var cf clientFlags
	fs := newClientFlagSet("call", "usage: taskwire call [flags] TOOL [key=value | key:=JSON]...\n\n"+
		"Calls TOOL. key=value is typed by the tool's input schema, key:=JSON is taken as JSON,\n"+
		"and arguments after -- are never flags. A task is waited for with a progress line on\n"+
		"stderr, its forms are asked when stdin is a terminal, and Ctrl-C detaches from it.", &cf)
	detach := fs.Bool("detach", false, "print the task's ID at once instead of waiting for it")
	pos, err := parseInterleaved(fs, args, env.stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("call: a tool name is required (taskwire tools lists them)")
	}
	ctx, s, w, stop, err := cf.openWaiting(ctx, env)
	if err != nil {
		return err
	}
	defer stop()

	name := pos[0]
	tool, err := s.c.Tool(ctx, name)
	if err != nil {
		return w.stopped(ctx, s, "", err)
	}
	if tool == nil {
		return usageErrorf("call: the server has no tool %q (taskwire tools lists them)", name)
	}
	schema, err := parseObjectSchema(tool.InputSchema)
	if err != nil {
		return fmt.Errorf("call: tool %q: %w", name, err)
	}
	toolArgs, err := parseToolArgs(schema, pos[1:])
	if err != nil {
		return err
	}
	if err := checkRequired(name, schema, toolArgs); err != nil {
		return err
	}
	// PreferTask: in a 2025-11-25 session a tool that may run as a task
	// does, so that Ctrl-C can detach from it.
	res, err := s.c.Call(ctx, name, toolArgs, client.PreferTask(), client.WithProgress(func(p client.Progress) {
		w.progress.update(progressState{Status: string(mcp.TaskWorking), Message: p.Message, Progress: &p.Progress, Total: p.Total})
	}))
	w.progress.end()
	if err != nil {
		return w.stopped(ctx, s, "", err)
	}
	if res.Task == nil {
		return printResult(env.stdout, res.Result, cf.json)
	}
	id := res.Task.ID()
	if *detach {
		fmt.Fprintln(env.stdout, cliflags.OneLine(id, 1000)) // a well-formed ID prints unchanged
		fmt.Fprintf(env.stderr, "taskwire: the task runs on; wait for it with: %s%s\n", s.resumeCommand(id), s.credentialsNote())
		return nil
	}
	out, err := w.wait(ctx, s, res.Task)
	if err != nil {
		return w.stopped(ctx, s, id, err)
	}
	return printResult(env.stdout, out, cf.json)
}

// openWaiting opens the session of a command that may wait for a task:
// the waiter (progress line, forms when interactive) and the context,
// bounded by --timeout and ended by Ctrl-C. stop ends all three.
func (cf *clientFlags) openWaiting(ctx context.Context, env *cliEnv) (_ context.Context, _ *clientSession, _ *waiter, stop func(), _ error) {
	w := newWaiter(env)
	s, err := cf.open(env, w.elicitHandler())
	if err != nil {
		w.close()
		return nil, nil, nil, nil, err
	}
	ctx, cancel := s.context(ctx)
	w.tickOnTerminal()
	return ctx, s, w, func() {
		cancel()
		s.close()
		w.close()
	}, nil
}

// waiter follows a task for call and task wait: the progress line and
// the form prompts when the command is interactive.
type waiter struct {
	env      *cliEnv
	progress *progressLine
	prompter *formPrompter // nil when not interactive

	stopTicks chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once
}

func newWaiter(env *cliEnv) *waiter {
	w := &waiter{
		env: env, progress: newProgressLine(env.stderr, env.terminal, env.now),
		stopTicks: make(chan struct{}),
	}
	if env.interactive {
		w.prompter = &formPrompter{in: newLineReader(env.stdin), out: env.stderr, before: w.progress.end}
	}
	return w
}

// elicitHandler is the client's form handler: the prompter, or nil.
func (w *waiter) elicitHandler() func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	if w.prompter == nil {
		return nil
	}
	return w.prompter.elicit
}

// tickOnTerminal redraws the progress line every second on a terminal,
// until close.
func (w *waiter) tickOnTerminal() {
	if w.env.terminal {
		w.wg.Go(func() {
			tk := time.NewTicker(time.Second)
			defer tk.Stop()
			for {
				select {
				case <-tk.C:
					w.progress.tick()
				case <-w.stopTicks:
					return
				}
			}
		})
	}
}

// close stops the goroutines of the waiter.
func (w *waiter) close() {
	w.closeOnce.Do(func() {
		close(w.stopTicks)
		w.wg.Wait()
		w.progress.end()
		if w.prompter != nil {
			w.prompter.in.close()
		}
	})
}

// wait follows t to its end: it shows every update on the progress line,
// asks the task's forms when interactive, and returns the outcome. A task
// that needs input the command cannot ask fails with
// *client.InputRequiredError.
//
// In a 2025-11-25 session, whose tasks carry no input requests (the
// server asks on the stream of tasks/result), the progress line shows the
// status and Task.Wait waits, asking forms through the client's handler.
func (w *waiter) wait(ctx context.Context, s *clientSession, t *client.Task) (*mcp.CallToolResult, error) {
	if err := s.c.Connect(ctx); err != nil {
		return nil, err
	}
	if s.c.ProtocolVersion() != mcp.LatestProtocolVersion {
		return w.waitLegacy(ctx, t)
	}
	answered := map[string]bool{}
	for u, err := range t.Updates(ctx) {
		if err != nil {
			return nil, err
		}
		w.progress.update(progressState{Status: string(u.Status), Message: u.StatusMessage})
		switch {
		case u.Status.Terminal():
			w.progress.end()
			return u.Outcome()
		case u.Status != mcp.TaskInputRequired:
			continue
		}
		pending := mcp.InputRequests{}
		for k, r := range u.InputRequests {
			if !answered[k] {
				pending[k] = r
			}
		}
		if len(pending) == 0 {
			continue
		}
		responses, err := w.answer(ctx, t.ID(), pending)
		if err != nil {
			return nil, err
		}
		if err := t.Answer(ctx, responses); err != nil {
			return nil, err
		}
		for k := range responses {
			answered[k] = true
		}
	}
	return nil, errors.New("the task's updates ended before it finished")
}

// waitLegacy waits for a task of a 2025-11-25 session.
func (w *waiter) waitLegacy(ctx context.Context, t *client.Task) (*mcp.CallToolResult, error) {
	if d, err := t.Get(ctx); err == nil {
		w.progress.update(progressState{Status: string(d.Status), Message: d.StatusMessage})
	} else {
		return nil, err
	}
	out, err := t.Wait(ctx)
	if d, gerr := t.Get(ctx); gerr == nil && err == nil {
		w.progress.update(progressState{Status: string(d.Status), Message: d.StatusMessage})
	}
	w.progress.end()
	return out, err
}

// answer asks every pending form; anything else, or any form when the
// command is not interactive, is an *client.InputRequiredError.
func (w *waiter) answer(ctx context.Context, id string, pending mcp.InputRequests) (mcp.InputResponses, error) {
	keys := slices.Sorted(maps.Keys(pending))
	need := &client.InputRequiredError{TaskID: id, Keys: keys, Requests: pending}
	if w.prompter == nil {
		return nil, need
	}
	out := mcp.InputResponses{}
	for _, k := range keys {
		r := pending[k]
		if r == nil || r.Method != mcp.MethodElicitationCreate {
			return nil, need
		}
		var p mcp.ElicitParams
		if err := json.Unmarshal(r.Params, &p); err != nil {
			return nil, fmt.Errorf("input request %q: malformed params: %w", k, err)
		}
		res, err := w.prompter.elicit(ctx, &p)
		if err != nil {
			return nil, err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return nil, err
		}
		out[k] = b
	}
	return out, nil
}

// stopped turns the error that ended a call or wait into the command's
// error: Ctrl-C and --timeout detach (the task runs on, and the command
// that resumes it is printed); a task that needs input prints how to
// answer it.
func (w *waiter) stopped(ctx context.Context, s *clientSession, id string, err error) error {
	w.progress.end()
	env := s.env
	resume := func() {
		if id != "" {
			fmt.Fprintf(env.stderr, "taskwire: task %s runs on; resume with: %s%s\n", quoteID(id), s.resumeCommand(id), s.credentialsNote())
		}
	}
	switch {
	case s.interrupted():
		fmt.Fprintln(env.stderr, "taskwire: interrupted; detached without cancelling")
		resume()
		return &exitError{code: exitInterrupted}
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		fmt.Fprintf(env.stderr, "taskwire: --timeout %v passed\n", s.flags.timeout)
		resume()
		return &exitError{code: exitTimeout}
	}
	var need *client.InputRequiredError
	if errors.As(err, &need) {
		fmt.Fprint(env.stderr, answerHint(s, need))
		return &exitError{code: exitInputRequired}
	}
	return s.fail(err)
}
