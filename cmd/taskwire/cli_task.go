package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/taskwire/taskwire/client"
	"github.com/taskwire/taskwire/internal/cliflags"
	"github.com/taskwire/taskwire/mcp"
)

// taskCmd runs `taskwire task get|wait|cancel [--json] ID` and
// `taskwire task answer ID KEY=JSON...`.
func taskCmd(ctx context.Context, args []string, env *cliEnv) error {
	var cf clientFlags
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		// Flags without a subcommand: -h prints the help.
		if _, err := parseInterleaved(newClientFlagSet("task", taskSynopsis, &cf), args, env.stdout); err != nil {
			return err
		}
		return usageErrorf("task: a subcommand is required: get, wait, cancel or answer")
	}
	sub := args[0]
	fs := newClientFlagSet("task "+sub, taskSynopsis, &cf)
	pos, err := parseInterleaved(fs, args[1:], env.stdout)
	if err != nil {
		return err
	}
	switch sub {
	case "get", "wait", "cancel":
		if len(pos) != 1 {
			return usageErrorf("task %s: want exactly one task ID", sub)
		}
	case "answer":
		if len(pos) < 2 {
			return usageErrorf("task answer: want a task ID and at least one KEY=JSON")
		}
	default:
		return usageErrorf("task: unknown subcommand %q: want get, wait, cancel or answer", sub)
	}
	id := pos[0]
	if sub == "wait" {
		return taskWait(ctx, id, &cf, env)
	}
	var responses mcp.InputResponses
	if sub == "answer" {
		if responses, err = parseAnswers(pos[1:]); err != nil {
			return err
		}
	}
	ctx, s, stop, err := cf.openBounded(ctx, env)
	if err != nil {
		return err
	}
	defer stop()
	t := s.c.Task(id)
	switch sub {
	case "get":
		d, err := t.Get(ctx)
		if err != nil {
			return s.fail(err)
		}
		if cf.json {
			return printJSON(env.stdout, d)
		}
		return printTask(env.stdout, d)
	case "cancel":
		if err := t.Cancel(ctx); err != nil {
			return s.fail(err)
		}
		d, err := t.Get(ctx)
		if err != nil {
			return s.fail(err)
		}
		if cf.json {
			return printJSON(env.stdout, d)
		}
		fmt.Fprintf(env.stdout, "cancellation requested; the task is %s\n", d.Status)
		return nil
	}
	if err := t.Answer(ctx, responses); err != nil {
		return s.fail(err)
	}
	fmt.Fprintf(env.stdout, "answered %s; wait for the result with: %s%s\n",
		strings.Join(slices.Sorted(maps.Keys(responses)), ", "), s.resumeCommand(id), s.credentialsNote())
	return nil
}

// taskSynopsis is the help of task and its subcommands, before the flags.
const taskSynopsis = "usage: taskwire task get|wait|cancel [flags] ID\n" +
	"       taskwire task answer [flags] ID KEY=JSON...\n\n" +
	"get prints a task's state, wait waits for its result as call does, cancel asks the\n" +
	"server to cancel it, and answer gives it the input it waits for: KEY=JSON for each\n" +
	"pending key, an elicitation answer being {\"action\":\"accept\",\"content\":{...}}."

// taskWait runs `taskwire task wait ID`: like call, for a task created
// before, possibly by another process.
func taskWait(ctx context.Context, id string, cf *clientFlags, env *cliEnv) error {
	ctx, s, w, stop, err := cf.openWaiting(ctx, env)
	if err != nil {
		return err
	}
	defer stop()
	out, err := w.wait(ctx, s, s.c.Task(id))
	if err != nil {
		return w.stopped(ctx, s, id, err)
	}
	return printResult(env.stdout, out, cf.json)
}

// maxAnswers bounds the KEY=JSON arguments of task answer.
const maxAnswers = 64

// parseAnswers reads KEY=JSON arguments: each key once, each value JSON.
func parseAnswers(args []string) (mcp.InputResponses, error) {
	if len(args) > maxAnswers {
		return nil, usageErrorf("task answer: at most %d answers", maxAnswers)
	}
	out := mcp.InputResponses{}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, usageErrorf("task answer: %q: want KEY=JSON", a)
		}
		if _, dup := out[k]; dup {
			return nil, usageErrorf("task answer: key %q is given twice; every key is answered once", k)
		}
		if !json.Valid([]byte(v)) {
			return nil, usageErrorf(`task answer: key %q: the answer is not valid JSON (an elicitation answer is {"action":"accept","content":{...}})`, k)
		}
		out[k] = json.RawMessage(v)
	}
	return out, nil
}

// printTask writes a task's state: its status and message, the pending
// input of an input_required task, the result of a completed one, the
// error of a failed one.
func printTask(w io.Writer, d *mcp.DetailedTask) error {
	fmt.Fprintf(w, "task     %s\nstatus   %s\n", quoteID(d.TaskID), cliflags.OneLine(string(d.Status), 50))
	if d.StatusMessage != "" {
		fmt.Fprintf(w, "message  %s\n", cliflags.OneLine(d.StatusMessage, 1000))
	}
	fmt.Fprintf(w, "created  %s\nupdated  %s\n", cliflags.OneLine(d.CreatedAt, 64), cliflags.OneLine(d.LastUpdatedAt, 64))
	switch d.Status {
	case mcp.TaskInputRequired:
		keys := slices.Sorted(maps.Keys(d.InputRequests))
		var b strings.Builder
		writeRequests(&b, &client.InputRequiredError{TaskID: d.TaskID, Keys: keys, Requests: d.InputRequests})
		fmt.Fprintf(w, "needs input (taskwire task answer %s KEY=JSON):\n%s", quoteID(d.TaskID), b.String())
	case mcp.TaskFailed:
		if d.Error != nil {
			fmt.Fprintf(w, "error    %d %s\n", d.Error.Code, cliflags.OneLine(d.Error.Message, 1000))
		}
	case mcp.TaskCompleted:
		if len(d.Result) == 0 { // a 2025-11-25 task: the result comes from tasks/result
			fmt.Fprintf(w, "result:  taskwire task wait %s prints it\n", quoteID(d.TaskID))
			return nil
		}
		var res mcp.CallToolResult
		if err := json.Unmarshal(d.Result, &res); err != nil {
			return fmt.Errorf("the task's result is malformed: %w", err)
		}
		fmt.Fprintf(w, "isError  %v\nresult:\n", res.IsError)
		return printContent(w, &res)
	}
	return nil
}
