package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/taskwire/taskwire/mcp"
	"github.com/taskwire/taskwire/server"
	"github.com/taskwire/taskwire/task"
)

const ltInlineCall = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"build.inline","arguments":{%s},"_meta":{"progressToken":"p1"}}}`

func inlineCall(extra string) string { return strings.Replace(ltInlineCall, "%s", extra, 1) }

func progressOf(t *testing.T, m legacyMsg) string {
	t.Helper()
	if m.Method != mcp.NotificationProgress {
		t.Fatalf("got %s %s, want progress", m.Method, m.Result)
	}
	var p mcp.ProgressParams
	json.Unmarshal(m.Params, &p)
	return string(p.ProgressToken) + " " + jsonString(p.Progress) + " " + p.Message
}

// TestWaitInlineProgressAndResult: a 2025-06-18 client without tasks calls
// a durable tool; the POST streams progress for each change of the task,
// then the tool's result in 2025 shape.
func TestWaitInlineProgressAndResult(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV06, ltNoCaps, "")
	msgs, _ := ltStream(t, c, inlineCall(""))
	id := r.nextCreated()
	if got := progressOf(t, next(t, msgs)); got != `"p1" 1 Task working` {
		t.Errorf("first progress = %q", got)
	}
	r.mem.MarkWorking(id, "halfway")
	if got := progressOf(t, next(t, msgs)); got != `"p1" 2 halfway` {
		t.Errorf("second progress = %q", got)
	}
	r.mem.Complete(id, ltResult(5), "")
	final := next(t, msgs)
	if diff := cmp.Diff(`{"content":[{"type":"text","text":"{\"sum\":5}"}],"structuredContent":{"sum":5}}`, string(final.Result)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
}

// TestWaitInlineInput: the task's input request reaches a 2025-11-25
// client without tasks as a real elicitation request, without the
// related-task _meta key of a task the client never saw; the answer is stored
// and the call returns the result once the worker completes.
func TestWaitInlineInput(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV11, ltNoCaps, "")
	asked := make(chan legacyMsg, 1)
	c.answer = func(m legacyMsg) string {
		asked <- m
		return `{"action":"accept","content":{"ok":true}}`
	}
	done := make(chan *legacyReply, 1)
	go func() { done <- c.request("tools/call", `{"name":"build.inline","arguments":{}}`) }()
	id := r.nextCreated()
	hints := r.hints(id)
	req := mcp.NewElicitFormRequest("Approve?", json.RawMessage(ltForm))
	r.mem.RequestInput(id, mcp.InputRequests{ltFormKey: req}, "")
	m := <-asked
	if m.Method != mcp.MethodElicitationCreate {
		t.Fatalf("asked %s", m.Method)
	}
	// The client never saw the task: the request goes as stored, without
	// the related-task _meta key.
	if diff := cmp.Diff(string(req.Params), string(m.Params)); diff != "" {
		t.Errorf("elicitation params (-stored +sent):\n%s", diff)
	}
	r.waitFor(id, hints, func(tk task.Task) bool { return tk.Status() == task.Working })
	if answers, _ := r.mem.TakeInputResponses(id); len(answers) != 1 {
		t.Errorf("stored answers = %v", answers)
	}
	r.mem.Complete(id, ltResult(2), "")
	rep := <-done
	statusOK(t, rep)
	if m := rep.final(t); m.Error != nil || !strings.Contains(string(m.Result), `"sum":2`) {
		t.Errorf("tools/call = %s", rep.body)
	}
}

// TestWaitInlineDisconnectAndReattach: a client that leaves does not
// cancel the task; its retry with the same idempotency key waits for the
// same task and gets its result.
func TestWaitInlineDisconnectAndReattach(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV06, ltNoCaps, "")
	msgs, disconnect := ltStream(t, c, inlineCall(`"key":"k1"`))
	id := r.nextCreated()
	progressOf(t, next(t, msgs))
	disconnect()

	again, _ := ltStream(t, c, strings.Replace(inlineCall(`"key":"k1"`), `"id":1`, `"id":2`, 1))
	if got := r.nextCreated(); got != id {
		t.Fatalf("retry reached task %q, want the first one", got)
	}
	progressOf(t, next(t, again))
	if tk, _ := r.mem.Find(id); tk.Status() != task.Working {
		t.Errorf("status after the disconnect = %s", tk.Status())
	}
	if req, _ := r.mem.CancelRequested(id); req {
		t.Error("the disconnect requested cancellation")
	}
	r.mem.Complete(id, ltResult(7), "")
	if m := next(t, again); !strings.Contains(string(m.Result), `"sum":7`) {
		t.Errorf("retry's result = %s %v", m.Result, m.Error)
	}
}

// TestWaitInlineMaxWait: a wait that runs out answers with a tool error and
// leaves the task running.
func TestWaitInlineMaxWait(t *testing.T) {
	r := newLTRig(t, func(o *server.Options) { o.InlineTaskWait = 50 * time.Millisecond })
	c := r.client(ltV06, ltNoCaps, "")
	rep := c.request("tools/call", `{"name":"build.inline","arguments":{}}`)
	id := r.nextCreated()
	statusOK(t, rep)
	want := `{"content":[{"type":"text","text":"The task is still running after 50ms and goes on without this call. ` +
		`Call the tool again with the same arguments (and the same idempotencyKey, if the tool takes one) to wait for it again."}],"isError":true}`
	if diff := cmp.Diff(want, string(rep.final(t).Result)); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if tk, _ := r.mem.Find(id); tk.Status() != task.Working {
		t.Errorf("status = %s", tk.Status())
	}
}

// TestWaitInlineOutcomes: a failed task is the call's JSON-RPC error; input
// the client cannot give is a clear error and nothing is asked.
func TestWaitInlineOutcomes(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV06, `{}`, "")
	done := make(chan *legacyReply, 1)
	go func() { done <- c.request("tools/call", `{"name":"build.inline","arguments":{}}`) }()
	r.mem.Fail(r.nextCreated(), mcp.NewError(-32603, "upstream down"), "")
	if m := (<-done).final(t); m.Error == nil || m.Error.Message != "upstream down" {
		t.Errorf("failed task: %+v", m)
	}

	c.answer = func(m legacyMsg) string {
		t.Errorf("asked %s of a client without elicitation", m.Method)
		return ""
	}
	go func() { done <- c.request("tools/call", `{"name":"build.inline","arguments":{}}`) }()
	r.mem.RequestInput(r.nextCreated(), mcp.InputRequests{ltFormKey: mcp.NewElicitFormRequest("Approve?", json.RawMessage(ltForm))}, "")
	m := (<-done).final(t)
	if m.Error == nil || m.Error.Code != mcp.CodeInvalidRequest || !strings.Contains(m.Error.Message, "(elicitation)") {
		t.Errorf("input without elicitation: %+v", m)
	}
}

// TestWaitInlineKeepAlive: the wait streams keep-alive comments.
func TestWaitInlineKeepAlive(t *testing.T) {
	r := newLTRig(t, func(o *server.Options) { o.KeepAliveInterval = 10 * time.Millisecond })
	c := r.client(ltV06, ltNoCaps, "")
	res, err := httpDo(c, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"build.inline","arguments":{}}}`)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	id := r.nextCreated()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	buf := make([]byte, 0, 256)
	tmp := make([]byte, 64)
	for strings.Count(string(buf), ": keep-alive") < 3 {
		n, err := res.Body.Read(tmp)
		if err != nil {
			t.Fatalf("read: %v (got %q)", err, buf)
		}
		buf = append(buf, tmp[:n]...)
	}
	r.mem.Complete(id, ltResult(1), "")
}

// TestWithWaitInlineOnlyForTaskRequiredTools: New refuses the option on
// other tools.
func TestWithWaitInlineOnlyForTaskRequiredTools(t *testing.T) {
	mem := newLTRig(t, nil).mem
	ep := server.NewEndpoint(server.EndpointOptions{Path: "/mcp", Name: "e", Version: "1", TaskProtocolVersions: []string{mcp.LatestProtocolVersion}})
	ep.AddRawTool(&mcp.Tool{Name: "plain", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(context.Context, *server.Request) (*mcp.CallToolResult, error) { return nil, nil }, server.WithWaitInline())
	_, err := server.New(server.Options{Endpoints: []*server.Endpoint{ep}, TaskManager: mem})
	if err == nil || !strings.Contains(err.Error(), `tool "plain": WithWaitInline applies only to task-required tools (AddTaskTool)`) {
		t.Errorf("New = %v", err)
	}
}

// TestLegacyWaitsEndOnClose: Server.Close ends inline waits and
// tasks/result, which answer that the task goes on; the task is left
// running.
func TestLegacyWaitsEndOnClose(t *testing.T) {
	r := newLTRig(t, nil)
	inline := r.client(ltV06, ltNoCaps, "")
	withTasks := r.client(ltV11, ltTasksCaps, "")
	msgs, _ := ltStream(t, inline, inlineCall(""))
	waiting := r.nextCreated()
	progressOf(t, next(t, msgs))
	statusOK(t, withTasks.request("tools/call", `{"name":"build","arguments":{},"task":{}}`))
	polled := r.nextCreated()
	result, _ := ltStream(t, withTasks, `{"jsonrpc":"2.0","id":9,"method":"tasks/result","params":{"taskId":"`+polled+`"}}`)

	r.srv.Close()
	if m := next(t, msgs); !strings.Contains(string(m.Result), "still running") {
		t.Errorf("inline call after Close: %s %+v", m.Result, m.Error)
	}
	if m := next(t, result); m.Error == nil || m.Error.Message != "The task is still running; call tasks/result again" {
		t.Errorf("tasks/result after Close: %s %+v", m.Result, m.Error)
	}
	for _, id := range []string{waiting, polled} {
		if tk, _ := r.mem.Find(id); tk.Status() != task.Working {
			t.Errorf("status after Close = %s", tk.Status())
		}
	}
}

// TestWaitInlineWorkerFirstStep: a worker whose first count is 1, the
// number "Task working" was sent with, has its counts and total shifted
// above it: every step reaches the client, the last at its total.
func TestWaitInlineWorkerFirstStep(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV06, ltNoCaps, "")
	msgs, _ := ltStream(t, c, inlineCall(""))
	id := r.nextCreated()
	got := []string{progressNumbers(t, next(t, msgs))}
	for i := 1; i <= 3; i++ {
		if _, err := r.mem.ReportProgress(id, fmt.Sprintf("step %d of 3", i), &task.Progress{Current: float64(i), Total: 3}); err != nil {
			t.Fatal(err)
		}
		got = append(got, progressNumbers(t, next(t, msgs)))
	}
	r.mem.Complete(id, ltResult(5), "")
	if m := next(t, msgs); m.Method != "" {
		t.Errorf("after the progress: %s, want the result", m.Method)
	}
	want := []string{"1 - Task working", "2 4 step 1 of 3", "3 4 step 2 of 3", "4 4 step 3 of 3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}

// progressNumbers is a progress notification's number, total ("-" for
// none) and message.
func progressNumbers(t *testing.T, m legacyMsg) string {
	t.Helper()
	if m.Method != mcp.NotificationProgress {
		t.Fatalf("got %s %s, want progress", m.Method, m.Result)
	}
	var p mcp.ProgressParams
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	total := "-"
	if p.Total != nil {
		total = jsonString(*p.Total)
	}
	return jsonString(p.Progress) + " " + total + " " + p.Message
}

// TestWaitInlineWorkerProgress: a worker's progress count reaches a
// 2025-era client waiting inline as the numbers of notifications/progress,
// with the total; a count that does not grow is not sent, since the
// protocol requires the number to increase.
func TestWaitInlineWorkerProgress(t *testing.T) {
	r := newLTRig(t, nil)
	c := r.client(ltV06, ltNoCaps, "")
	msgs, _ := ltStream(t, c, inlineCall(""))
	id := r.nextCreated()
	numbers := func(m legacyMsg) string { t.Helper(); return progressNumbers(t, m) }
	report := func(msg string, p *task.Progress) {
		t.Helper()
		if _, err := r.mem.ReportProgress(id, msg, p); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	got = append(got, numbers(next(t, msgs)))
	report("row 400 of 1000", &task.Progress{Current: 400, Total: 1000})
	got = append(got, numbers(next(t, msgs)))
	report("recounting", &task.Progress{Current: 300, Total: 1000}) // not sent: 300 < 400
	report("almost", nil)                                           // not sent: no number to grow
	report("row 900", &task.Progress{Current: 900})
	got = append(got, numbers(next(t, msgs)))
	r.mem.Complete(id, ltResult(5), "")
	if m := next(t, msgs); m.Method != "" || !strings.Contains(string(m.Result), `"sum":5`) {
		t.Errorf("after the progress: %s %s, want the result", m.Method, m.Result)
	}
	want := []string{"1 - Task working", "400 1000 row 400 of 1000", "900 - row 900"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress (-want +got):\n%s", diff)
	}
}
